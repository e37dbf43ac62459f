"""`make run`: prepare the tree, build and boot it with kunit.py, judge the result.
`make judge`: the same verdict on a console log captured anywhere.

Every run also yields the coverage of kernel/cpu.c and timekeeping.c: the
kernel profiles those two objects and its initramfs prints the gcov data
after the suites and the user-space test (tools/cpuhpk/gcov.py).

Writes to out/<KVER>[-<CONFIG>]/ (make judge: out/judge/):
  console.log   the whole kernel console (kunit.py's test.log); ISOLATE=: the
                console of each boot, each after a line 'cpuhp-kunit: boot
                <i>/<n> of kunit.py --run_isolated=<suite|test>'
  results.ktap  the KTAP the kernel printed, console prefix removed (ISOLATE=:
                each boot's, one document after the other)
  results.json  kunit.py --json (make run only: kunit.py's own view); when
                kernel lines inside the KTAP derailed kunit.py's parser,
                its parse of the KTAP lines alone (results-ktap-only.*)
                and the derailed one in results-derailed.json
  verdict.json  our verdict: pass/fail, counts, every problem with its category,
                title and key; kernel reports decoded against the run's
                vmlinux (make judge: VMLINUX=) when it has debug info (decode.py)
  junit.xml     one testcase per KUnit case (or parameter), plus one per
                problem of the run as a whole; red in it whenever the verdict is
  kunit.log     what kunit.py printed (config, build, summary)
  coverage.info lcov tracefile of the two files; summary.txt, html/ from it;
                coverage-sources.json the digest of the sources it describes
                (buildstamp.source_digest(): make mutate reads it)
  kcidb.json    the run for KernelCI's KCIDB (kcidb.py, schema in tools/kcidb/)
Exit status 0 only when the verdict has no problem (verdict.py).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

if __package__ in (None, ''):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = 'cpuhpk'  # noqa: A001  (run as a script)

from cpuhpk import (arch, attrs, buildstamp, cache, decode, gcov, guest, hostctl,  # noqa: E402
                    isolation, judging, junit, kcidb, kcidbrun, knobs, ktap, kunitcmd, kunitjson,
                    kunitspec, packages, page, say, seriesplan, states, tree, usertree, verdict)

REPO = Path(__file__).resolve().parents[2]
# Time for kunit.py to configure and build a cold tree on a 2-core machine,
# with a wide margin: the kernel's own run has its own timeout (--timeout).
BUILD_TIMEOUT = 45 * 60
# The CPUs a run boots with (make SMP=): the count make test is judged at.
DEFAULT_SMP = 4
# Seconds kunit.py, make and QEMU get to end after SIGTERM before SIGKILL.
GRACE = 10
EXPECTED_SKIPS = REPO / 'kunit' / 'expected-skips'


def known_failures_path(kver: str) -> Path:
    """The known failures of one kernel series: kunit/known-failures-<KVER>."""
    return REPO / 'kunit' / f'known-failures-{kver}'


COMPILER_ERROR = re.compile(r': (?:fatal )?error: |undefined reference')
# kunit.py's word when the kernel outlived --timeout (its QEMU's TimeoutExpired,
# printed). Not just 'timed out after': with ISOLATE kunit.log holds the
# consoles too, and a kernel message may say that.
KUNIT_PY_TIMEOUT = re.compile(r"Command '.*' timed out after [\d.]+ seconds")
BUILD_ERROR = re.compile(r': (?:fatal )?error: |^ERROR:|Error \d+$|undefined reference')


class Interrupted(Exception):
    """SIGINT, SIGTERM or SIGHUP: the run was stopped from outside."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum: int, frame: Optional[FrameType]) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Ignore Ctrl-C and SIGTERM while children are being stopped.

    A second Ctrl-C must not cut short the wait for kunit.py, make and QEMU
    to end: whatever comes next (reversing a mutant, judging) needs them gone.
    """
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, signal.SIG_IGN) for s in sigs}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def out_dir(kver: str, config: str, fixes: bool = False,
            user: Optional[usertree.Resolved] = None, smp: int = DEFAULT_SMP,
            topology: str = 'flat', arch_name: str = arch.HOST) -> Path:
    """out/<KVER>[-<CONFIG>][-arm64][-smp<N>][-smt][-fixes]; TREE=: out/tree-<name>-<rev>[...] alike.

    -arm64 for another architecture than x86_64, -smp<N> only for another
    CPU count than the default, -smt for two threads per core: the same
    kernel booted otherwise is another run, not a replacement.
    """
    base = f'tree-{user.name}-{user.short}' if user is not None else kver
    name = base if config == 'default' else f'{base}-{config}'
    name += arch.get(arch_name).out_suffix
    if smp != DEFAULT_SMP:
        name += f'-smp{smp}'
    if topology != 'flat':
        name += f'-{topology}'
    return REPO / 'out' / (f'{name}-fixes' if fixes else name)


def user_spec(args: argparse.Namespace) -> Optional[usertree.Spec]:
    """TREE=, REV=, LOCAL=, SERIES= of @args; None without TREE=."""
    if not getattr(args, 'tree', None):
        return None
    return usertree.Spec(Path(args.tree), args.rev or 'HEAD', bool(args.local),
                         Path(args.series) if args.series else None)


def resolve_user(args: argparse.Namespace) -> Optional[usertree.Resolved]:
    """Read TREE= (and set args.kver to the series chosen for it); None without TREE=."""
    spec = user_spec(args)
    if spec is None:
        return None
    user = usertree.resolve(spec, REPO)
    args.kver = user.kver
    return user


def tree_context(user: Optional[usertree.Resolved]) -> Dict[str, str]:
    """What a TREE= run adds to verdict.json's context."""
    if user is None:
        return {}
    return {'tree': str(user.spec.path), 'rev': user.sha, 'rev_subject': user.subject,
            'tree_version': user.version, 'series': user.series_label(),
            'local': user.local_note}


def prepare_tree(args: argparse.Namespace, user: Optional[usertree.Resolved]) -> tree.Tree:
    """The tree a run builds: the Debian one of args.kver, or the user's (TREE=)."""
    if user is not None:
        return usertree.prepare(user, REPO, bool(args.fixes))
    return tree.prepare(args.kver, REPO, bool(args.fixes))


def build_dir_of(t: tree.Tree, config: str, arch_name: str = arch.HOST,
                 make_options: str = '') -> Path:
    """The cached build directory of @config's kernel for @arch_name.

    MAKE_OPTIONS= and KCONFIG_ADD= (@make_options: their words, e.g.
    LLVM=1) build in a directory of their own, named after them: a clang
    or a debug-info build would otherwise replace the one the next plain
    run needs, and each switch would be a whole kernel.
    """
    words = re.sub(r'[^A-Za-z0-9.+]+', '-', re.sub(r'\bCONFIG_', '', make_options)).strip('-')
    if len(words) > 32:
        words = words[:23] + '-' + hashlib.sha256(make_options.encode()).hexdigest()[:8]
    return cache.cache_root() / (f'build-{t.build_key}-{config}{arch.get(arch_name).out_suffix}'
                                 + (f'-{words}' if words else ''))


def expectations(filter_glob: str, context: Dict[str, str], strict: bool = False,
                 userspace: bool = False) -> kunitspec.Expectations:
    """What a run of the kunit/ suites with @filter_glob must show."""
    try:
        skips = kunitspec.read_expected_skips(EXPECTED_SKIPS)
        known = kunitspec.read_known_failures(known_failures_path(context.get('kver', '')))
    except ValueError as e:
        raise say.PrepareError(f'kunit/{e}') from None
    if context.get('config') == 'series':
        declared = posted_cases(context.get('kver', ''))
    else:
        declared = kunitspec.declared_cases(REPO / 'kunit', userspace)
    return kunitspec.Expectations(
        cases=kunitspec.filtered(declared, filter_glob),
        skips=skips, known=known, strict=strict, context=context)


def posted_cases(kver: str) -> Dict[str, List[str]]:
    """The cases of the series make series posts for @kver: its sources
    (src/<KVER>/upstream/plan), in their posted form."""
    try:
        plan = seriesplan.read_plan(tree.series_dir(REPO, kver))
    except seriesplan.SeriesError as e:
        raise say.PrepareError(str(e)) from None
    files = {seriesplan.source_parts(f)[0] for s in plan.series for _, fs in s.patches
             for f in fs}
    return kunitspec.declared_cases(REPO / 'kunit', False, files,
                                    lambda text: tree.harness_view(text, False))


def coverage_report(out: Path, build_dir: Path, src: Path, kver: str,
                    v: verdict.Verdict, a: Optional[arch.Arch] = None,
                    isolate: str = '') -> verdict.Verdict:
    """out/coverage.info and its reports; no gcov data is red when nothing else is.
    @isolate: the gcov data of every boot of console.log, added up."""
    try:
        segments = None
        if isolate and (out / 'console.log').is_file():
            segments = isolation.boot_lines(ktap.read_console(out / 'console.log').lines)
        gcov.report(out, build_dir, src, kver, a, segments)
    except say.PrepareError as e:
        if not v.ok:
            say.log(f'no coverage report: {e}')
            return v
        return add_problems(out, [verdict.Problem('coverage', '', str(e))])
    say.log(f'coverage: {out / "summary.txt"}, {out / "html" / "index.html"}')
    return v


def stop_group(proc: 'subprocess.Popen[str]') -> None:
    """End kunit.py and everything it started (make, QEMU): TERM, then KILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(GRACE)
            if sig == signal.SIGTERM:
                # The leader is gone; its group may not be.
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def run_kunit(cmd: List[str], cwd: Path, log_path: Path, seconds: float,
              echo: Optional[Callable[[str], bool]] = None
              ) -> Tuple[Optional[int], Optional[float]]:
    """Run kunit.py, teeing its output: (exit status, or None and the seconds
    after which it was killed). Every line goes to @log_path; to the
    terminal those @echo takes (default: every line).

    kunit.py gets a process group of its own so that all of it can be ended
    at once; a signal to this process (Ctrl-C, SIGTERM) ends that group too
    before it propagates.
    """
    started = time.monotonic()
    with open(log_path, 'w') as log, subprocess.Popen(
            cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            errors='replace', start_new_session=True) as proc:
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            stop_group(proc)

        timer = threading.Timer(seconds, kill)
        timer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if echo is None or echo(line):
                    sys.stdout.write(line)
                log.write(line)
            rc = proc.wait()
        except BaseException:
            with signals_deferred():
                stop_group(proc)
            raise
        finally:
            timer.cancel()
        if killed.is_set():
            return None, time.monotonic() - started
        return rc, None


def build_problem(kunit_log: str, rc: Optional[int]) -> Tuple[str, str, str, str]:
    """(category, name, message, detail) when no console came out of kunit.py."""
    errors = [ln for ln in kunit_log.splitlines() if BUILD_ERROR.search(ln)]
    if 'Running tests with:' in kunit_log and 'Starting KUnit Kernel' not in kunit_log:
        # ISOLATE: kunit.py booted the kernel to list its cases, then no more.
        return 'build', '', (f'the kernel booted to list its cases (kunit.py --run_isolated), '
                             f'and no boot followed (kunit.py exited {rc}): see kunit.log'), \
            '\n'.join(kunit_log.splitlines()[-30:])
    if 'Building KUnit Kernel' in kunit_log or 'Configuring KUnit Kernel' in kunit_log:
        if 'Starting KUnit Kernel' not in kunit_log:
            compiler = [ln for ln in errors if COMPILER_ERROR.search(ln)]
            first = (compiler or errors or [f'kunit.py exited {rc}'])[0].strip()
            return 'build', '', f'the kernel did not build: {first}', '\n'.join(errors[:30])
    return 'build', '', f'the kernel never ran (kunit.py exited {rc}): see kunit.log', \
        '\n'.join(kunit_log.splitlines()[-30:])


def only_userspace(exp: kunitspec.Expectations) -> bool:
    """Does @exp expect cases of the user-space suite and of no KUnit suite?"""
    return exp.cases is not None and set(exp.cases) == {guest.SYSFS_SUITE}


def judge(out: Path, console_path: Path, exp: kunitspec.Expectations, rc: Optional[int] = 0,
          killed_after: Optional[float] = None, timeout: int = 0,
          kunit_log: Optional[str] = None,
          kunit_json: Optional[Path] = None,
          kunit_py: Optional[Path] = None, isolate: str = '',
          attr_skipped: Sequence[str] = ()) -> Tuple[ktap.Test, verdict.Verdict]:
    """Judge a console; write results.ktap, junit.xml and verdict.json to @out.

    @rc and @kunit_log are kunit.py's (None: judging a console from elsewhere);
    @kunit_json its --json of this console, written by this run, which must
    agree with our parse; @kunit_py the kunit.py that wrote it (to tell a
    console whose kernel lines derailed kunit.py's parser,
    kunitjson.kunit_py_derailed()). @isolate: the console of several boots
    (ISOLATE=suite|test, isolation.judge_isolated()); kunit.py wrote no JSON
    then: @kunit_py parses each boot into @kunit_json. @attr_skipped: the
    cases FILTER_ATTR left out under FILTER_ACTION=skip, expected as skipped
    without a reason.
    """
    root = ktap.Test(name='', status=ktap.Status.PASS)
    v = verdict.Verdict()
    console_lines: List[str] = []
    if console_path.is_file() and console_path.stat().st_size:
        console = ktap.read_console(console_path)
        console_lines = console.lines
        if isolate:
            root, v, lines = isolation.judge_isolated(console, exp)
        else:
            start, root, v = judging.judge_console(console, exp)
            lines = ktap.extract(console.lines)
        attrs.accept_attribute_skips(v, attr_skipped, exp.context)
        (out / 'results.ktap').write_text(''.join(f'{ln}\n' for ln in lines))
        if console.long_lines:
            say.log(f'{console.long_lines} console line(s) longer than {ktap.MAX_LINE} '
                    'characters were cut')
    elif kunit_log is None:
        v.add('console', '', f'{console_path}: no such file, or empty')
    # kunit.py's parse first: a parse derailed by a kernel line also explains
    # kunit.py's exit status.
    derailed = False
    if isolate and kunit_json is not None and kunit_py is not None and console_lines \
            and killed_after is None:
        differ, derailed = isolation.kunit_py_isolated(kunit_py, out, console_lines, kunit_json, v)
        if differ:
            v.add('kunit.py', '', f'kunit.py\'s own parser reads {len(differ)} result(s) of '
                  f'these boots differently from ours (a CI that reads kunit.py\'s summary '
                  f'would see another run): {differ[0]}', '\n'.join(differ[:40]))
    elif kunit_json is not None and killed_after is None and not isolate:
        differ = kunitjson.kunit_py_disagreements(kunit_json, v)
        if differ and kunit_py is not None and console_path.is_file():
            left = kunitjson.kunit_py_derailed(kunit_py, out, console_path, kunit_json, v, differ)
            derailed, differ = not left, left
        if differ:
            v.add('kunit.py', '', f'kunit.py\'s own parser reads {len(differ)} result(s) of this '
                  f'console differently from ours (a CI that reads kunit.py\'s summary would '
                  f'see another run): {differ[0]}', '\n'.join(differ[:40]))
    if killed_after is not None:
        v.add('timeout', '', f'kunit.py was killed after {killed_after:.0f} s: the build and '
              f'the kernel run did not finish in time; partial KTAP kept in results.ktap')
    elif kunit_log is not None and KUNIT_PY_TIMEOUT.search(kunit_log):
        v.add('timeout', '', f'the kernel did not finish within {timeout} s (hang or '
              'deadlock?); partial KTAP kept in results.ktap')
    elif kunit_log is not None and not (console_path.is_file() and console_path.stat().st_size):
        v.add(*build_problem(kunit_log, rc))
    elif rc not in (0, None) and v.ok:
        if derailed:
            say.log(f'kunit.py exits {rc} for the results its derailed parse made up; the '
                    'verdict follows the parse of the KTAP lines alone')
        elif v.known:
            say.log('kunit.py exits 1 for the known failures; the verdict follows '
                    'kunit/known-failures-<KVER>')
        elif v.passed == 0 and v.skipped:
            say.log('every case was skipped: kunit.py exits 1 for that; the verdict follows '
                    'kunit/expected-skips')
        elif only_userspace(exp) and kunit_log is not None and 'Ran 0 tests' in kunit_log:
            say.log('FILTER selects the user-space suite alone: kunit.py exits 1 for its '
                    '"0 tests run"; the verdict follows the user-space suite')
        else:
            v.add('kunit.py', '', f'kunit.py exited {rc} although every case passed: '
                  'see kunit.log')
    write_outputs(out, root, v, exp.context)
    if console_lines:
        c = exp.context
        states.write(out, console_lines, root, v,
                     f"CPU hotplug states: linux {c.get('version', c.get('kver', '?'))}, "
                     f"CONFIG={c.get('config', '?')}, SMP={c.get('smp', '?')}"
                     + (', FIXES=1' if c.get('fixes') == '1' else ''))
    return root, v


def write_outputs(out: Path, root: ktap.Test, v: verdict.Verdict,
                  context: Dict[str, str]) -> None:
    junit.write(out / 'junit.xml', root, v)
    verdict.write_json(out / 'verdict.json', v, context)
    kunitjson.amend_kunit_json(out / 'results.json', v)
    write_kcidb(out)
    page.write_run(out)


def write_kcidb(out: Path) -> None:
    """out/kcidb.json: the run for KernelCI's KCIDB (kcidb.py); never fails the run."""
    try:
        kcidb.write(out / 'kcidb.json', kcidbrun.report(out))
    except (kcidbrun.ExportError, OSError) as e:
        say.log(f'kcidb.json not written: {e}')


def decode_reports(out: Path, vmlinux: Path, trees: Sequence[Optional[Path]],
                   cross_compile: str = '') -> Optional[verdict.Verdict]:
    """Decode the kernel reports of the run in @out against @vmlinux (decode.py)
    and write its outputs again; says in the log and in verdict.json's context
    what was decoded, or why not. None when there was nothing to decode."""
    path = out / 'verdict.json'
    if not path.is_file():
        return None
    v, context = verdict.read_json(path)
    note = decode.decode_verdict(v, vmlinux, trees, cross_compile)
    if not note:
        return None
    say.log(f'stack traces: {note}')
    context['decoded'] = note
    write_outputs(out, isolation.run_root(out, context), v, context)
    return v


def add_problems(out: Path, problems: Sequence[verdict.Problem]) -> verdict.Verdict:
    """Add problems found after a run (coverage gate, ...) to its outputs."""
    path = out / 'verdict.json'
    v, context = verdict.read_json(path) if path.is_file() else (verdict.Verdict(), {})
    v.problems += problems
    write_outputs(out, isolation.run_root(out, context), v, context)
    return v


def summary(v: verdict.Verdict) -> List[str]:
    """What the run prints last: skips, problems, the verdict and the counts."""
    lines = []
    for s in v.skips:
        tag = 'expected' if s.expected else 'NOT EXPECTED'
        lines.append(f'cpuhp-kunit: skipped ({tag}) {s.name}: {s.reason or "(no reason)"}'
                     + (f' [{s.why}]' if s.why else ''))
    lines += [f'cpuhp-kunit: known failure: [{p.category}] {p}' for p in v.known]
    lines += [f'cpuhp-kunit: {p.name}: {p.message} [{p.detail}]' for p in v.not_seen]
    lines += [f'cpuhp-kunit: FAIL: [{p.category}] {p}' for p in v.problems]
    if v.known:
        lines.append(f'cpuhp-kunit: {v.closing_counts()[3]} known failure(s) '
                     '(kunit/known-failures-<KVER>; STRICT=1 makes them red)')
    lines.append('cpuhp-kunit: PASS' if v.ok else 'cpuhp-kunit: FAIL')
    lines.append(counts_line(v))
    return lines


def counts_line(v: verdict.Verdict) -> str:
    """'kunit: N passed, N failed, N skipped' (see Verdict.closing_counts)."""
    passed, failed, skipped, _ = v.closing_counts()
    return f'kunit: {passed} passed, {failed} failed, {skipped} skipped'



def commit() -> str:
    """This repository's commit, '-dirty' with uncommitted changes ('' outside git)."""
    try:
        head = tree.git(REPO, 'rev-parse', '--short=12', 'HEAD').stdout.strip()
        dirty = tree.git(REPO, 'status', '--porcelain', '--', 'kunit', 'src', 'kconfigs',
                         'tools/cpuhpk').stdout.strip()
    except (OSError, say.PrepareError):
        return ''
    return head + ('-dirty' if dirty else '')


def fail_early(out: Path, category: str, message: str, context: Dict[str, str]) -> int:
    """A run that ends before the kernel ran still leaves a red junit.xml."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    v = verdict.Verdict()
    v.add(category, '', message)
    write_outputs(out, ktap.Test(name='', status=ktap.Status.PASS), v, context)
    print(f'cpuhp-kunit: error: {message}', file=sys.stderr)
    print('\n'.join(summary(v)))
    return 1


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kver', default='6.12')
    ap.add_argument('--arch', choices=tuple(arch.ARCHES), default=arch.HOST,
                    help='the architecture to build and boot (arm64: cross-compiled, '
                    'qemu-system-aarch64 virt)')
    ap.add_argument('--smp', type=int, default=DEFAULT_SMP)
    ap.add_argument('--topology', choices=kunitcmd.TOPOLOGIES, default='flat',
                    help='smt, nosmt, nosmt-force: two threads per core (needs an even --smp)')
    ap.add_argument('--filter', default='')
    ap.add_argument('--config', default='default')
    ap.add_argument('--timeout', type=int, default=600, help='seconds for the kernel run')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--out', type=Path, help='output directory (default out/KVER[-CONFIG], '
                    'with --judge out/judge)')
    ap.add_argument('--no-coverage-report', dest='coverage_report', action='store_false',
                    help='do not turn the gcov data into coverage.info and html/ (make mutate)')
    ap.add_argument('--judge', type=Path, metavar='CONSOLE',
                    help='judge this console log instead of building and booting')
    ap.add_argument('--vmlinux', type=Path, default=None,
                    help='make judge: the vmlinux of the console\'s kernel, to decode the '
                    'frames of its reports (file:line) with its tree\'s '
                    'scripts/decode_stacktrace.sh; it needs debug info')
    ap.add_argument('--userspace', type=int, choices=(0, 1), default=1,
                    help='make judge: 1 (default, as make run): the console is from a run whose '
                    'initramfs ran kunit/*_test.sh, so the user-space suite is expected where '
                    'FILTER selects it; 0: a console that never had it')
    ap.add_argument('--fixes', type=int, choices=(0, 1), default=0,
                    help='1: apply src/KVER/fixes/series (our kernel fixes) on top of src/KVER/series')
    ap.add_argument('--seed', type=int, default=0,
                    help='cpuhp_stress: seed of the random walk (0: a random one, printed)')
    ap.add_argument('--stress-ops', type=int, default=0,
                    help='cpuhp_stress: operations of the walk (0: the suite\'s default)')
    ap.add_argument('--strict', type=int, choices=(0, 1), default=0,
                    help='1: known failures (kunit/known-failures-<KVER>) are red, and what is '
                    'known to wedge a CPU runs too')
    add_kunit_py_arguments(ap)
    add_tree_arguments(ap)
    return ap


def add_kunit_py_arguments(ap: argparse.ArgumentParser) -> None:
    """kunit.py's own knobs (knobs.KUNIT_PY_FLAGS), handed on to it. make judge
    takes --isolate, --filter-attr and --filter-action as what the console's
    run asked for and ignores the others (they change the kernel or its
    boot, not what is judged)."""
    ap.add_argument('--kconfig-add', default='', metavar='"CONFIG_X=y CONFIG_Y=n"',
                    help='kconfig lines on top of the fragments, apart by spaces: one '
                    'kunit.py --kconfig_add each; part of the build (a change rebuilds)')
    ap.add_argument('--kernel-args', default='', metavar='"A B"',
                    help='kernel arguments after the run\'s own, apart by spaces: one '
                    'kunit.py --kernel_args each')
    ap.add_argument('--qemu-args', default='', metavar='"-X Y"',
                    help='QEMU arguments after the run\'s own: one kunit.py --qemu_args '
                    '(split by it as a shell would)')
    ap.add_argument('--make-options', default='', metavar='"X=Y ..."',
                    help='make options of the build after the run\'s own, e.g. LLVM=1: one '
                    'kunit.py --make_options each; part of the build, with the version of '
                    'the compiler they choose')
    ap.add_argument('--isolate', choices=('', 'suite', 'test'), default='',
                    help='one boot per suite or per case (kunit.py --run_isolated), judged, '
                    'reported and covered as one run')
    ap.add_argument('--filter-attr', default='', metavar='ATTR<OP>VALUE[,...]',
                    help='KUnit attribute filter (kunit.py --filter), e.g. speed>slow: the '
                    'cases it leaves out are not asked for; kernels with KUnit attributes '
                    '(6.6 on) only')
    ap.add_argument('--filter-action', choices=('', 'skip'), default='',
                    help='skip: the cases --filter-attr leaves out run as skipped '
                    '(kunit.py --filter_action=skip) and are expected so')


def add_tree_arguments(ap: argparse.ArgumentParser) -> None:
    """TREE=, REV=, LOCAL=, SERIES= (tools/cpuhpk/usertree.py)."""
    ap.add_argument('--tree', default='', help='a kernel git tree of your own to test instead '
                    'of the Debian one (never written to); --kver is then chosen by its version')
    ap.add_argument('--rev', default='HEAD', help='--tree: the revision to test')
    ap.add_argument('--local', type=int, choices=(0, 1), default=1,
                    help='--tree: 1 tests the uncommitted changes of its tracked files too')
    ap.add_argument('--series', default='', help='--tree: a directory of patches (with a '
                    'series file, or *.patch in name order) instead of src/<KVER>/series')


def tree_arguments(args: argparse.Namespace) -> List[str]:
    """The TREE= arguments of @args, to hand on to a run."""
    if not getattr(args, 'tree', ''):
        return []
    return ['--tree', str(args.tree), '--rev', args.rev, '--local', str(args.local),
            *(['--series', str(args.series)] if args.series else [])]


# What make judge takes of kunit.py's knobs: what the console's run asked for.
JUDGED_KNOBS = ('isolate', 'filter_attr', 'filter_action')


def judge_file(args: argparse.Namespace) -> int:
    """make judge: the verdict of a console log captured elsewhere."""
    out = args.out or REPO / 'out' / 'judge'
    userspace = bool(args.userspace and guest.userspace_cases(args.filter))
    context = {'kver': args.kver, 'arch': args.arch, 'config': args.config,
               'smp': str(args.smp), 'topology': args.topology,
               'filter': args.filter, 'fixes': str(args.fixes), 'console': str(args.judge),
               'userspace': str(int(userspace)), 'commit': commit(),
               **{k: v for k, v in knobs.knob_context(args).items() if k in JUDGED_KNOBS}}
    say.log('judging as make run would: the user-space suite ' + (
        'expected (USERSPACE=0 for a console that never had it)' if userspace else
        'not expected' + (' (USERSPACE=0)' if not args.userspace else
                          f' (FILTER={args.filter} selects none of it)')))
    try:
        exp = expectations(args.filter, context, bool(args.strict), userspace)
        left_out = attrs.apply_attribute_filter(exp, args)
    except say.PrepareError as e:
        return fail_early(out, 'prepare', str(e), context)
    except ValueError as e:
        return fail_early(out, 'prepare', f'FILTER_ATTR={args.filter_attr}: {e}', context)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    console = out / 'console.log'
    try:
        with open(args.judge, 'rb') as src, open(console, 'wb') as dst:
            # A bounded copy: only what the verdict reads, and one byte more.
            shutil.copyfileobj(_Bounded(src, ktap.MAX_CONSOLE + 1), dst)
    except OSError as e:
        return fail_early(out, 'console', f'cannot read {args.judge}: {e.strerror}', context)
    _, v = judge(out, console, exp, rc=None, kunit_log=None, isolate=args.isolate,
                 attr_skipped=left_out if args.filter_action == 'skip' else ())
    if args.vmlinux:
        trees: List[Optional[Path]] = []
        with contextlib.suppress(say.PrepareError):
            trees.append(tree.tree_path(args.kver))
        v = decode_reports(out, args.vmlinux, trees,
                           arch.get(args.arch).cross_compile or '') or v
    page.write_run(out)     # with the state map
    print('\n'.join(summary(v)))
    say.log(f'outputs in {out}, at a glance in {out / "index.html"}')
    return 0 if v.ok else 1


class _Bounded:
    """A file-like reader that stops after @limit bytes."""

    def __init__(self, f: 'object', limit: int) -> None:
        self._f, self._left = f, limit

    def read(self, n: int = -1) -> bytes:
        if self._left <= 0:
            return b''
        n = self._left if n < 0 else min(n, self._left)
        data: bytes = self._f.read(n)  # type: ignore[attr-defined]
        self._left -= len(data)
        return data


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if args.smp < 1:
        parser().error('--smp must be at least 1')
    if kunitcmd.two_threads(args.topology) and args.smp % 2:
        parser().error(f'TOPOLOGY={args.topology} puts two threads in each core: '
                       f'SMP={args.smp} is odd')
    if args.topology not in arch.get(args.arch).topologies:
        parser().error(f'TOPOLOGY={args.topology} is not possible on ARCH={args.arch} '
                       f'(it has: {" ".join(arch.get(args.arch).topologies)}; '
                       'tools/cpuhpk/arch.py says why)')
    if args.judge is not None:
        return judge_file(args)
    problem = kunitcmd.knob_errors(args)
    if problem:
        parser().error(problem)
    try:
        user = resolve_user(args)
    except say.PrepareError as e:
        name = usertree.tree_key(Path(args.tree).expanduser().resolve())[0]
        return fail_early(args.out or REPO / 'out' / f'tree-{name}', 'prepare', str(e),
                          {'tree': str(args.tree), 'rev': args.rev, 'commit': commit()})
    out = args.out or out_dir(args.kver, args.config, bool(args.fixes), user, args.smp,
                              args.topology, args.arch)
    context = {'kver': args.kver, 'arch': args.arch, 'config': args.config,
               'smp': str(args.smp), 'topology': args.topology,
               'filter': args.filter, 'fixes': str(args.fixes), 'strict': str(args.strict),
               'commit': commit(), **tree_context(user), **knobs.knob_context(args)}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupted)
    try:
        what = f'TREE={user.spec.path} REV={user.short}' if user else f'KVER={args.kver}'
        with cache.cache_lock(f'make run {what} CONFIG={args.config}'):
            return _run(args, out, context, user)
    except cache.LockBusy as e:
        # Not a word in out/: it belongs to the run that holds the lock.
        print(f'cpuhp-kunit: error: {e}', file=sys.stderr)
        return 1
    except (Interrupted, KeyboardInterrupt) as e:
        signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
        if out.is_dir():
            add_problems(out, [verdict.Problem('interrupted', '', f'interrupted by '
                                               f'{signal.Signals(signum).name}')])
        print(f'cpuhp-kunit: interrupted by {signal.Signals(signum).name}; kunit.py, make '
              'and QEMU stopped', file=sys.stderr)
        return 128 + signum


def _run(args: argparse.Namespace, out: Path, context: Dict[str, str],
         user: Optional[usertree.Resolved] = None) -> int:
    isolate = knobs.knob(args, 'isolate')
    options = knobs.make_options(args)
    try:
        exp = expectations(args.filter, context, bool(args.strict),
                           bool(guest.userspace_cases(args.filter)))
        if exp.cases == {}:
            return fail_early(out, 'missing', f'FILTER={args.filter} matches no case of the '
                              'kunit/ suites', context)
        left_out = attrs.apply_attribute_filter(exp, args)
        if exp.cases == {}:
            return fail_early(out, 'missing', f'FILTER_ATTR={args.filter_attr} leaves out '
                              f'every case FILTER={args.filter} selects', context)
        if isolate and not isolation.isolated_boots(exp, isolate):
            return fail_early(out, 'prepare', f'ISOLATE={isolate} boots once per KUnit '
                              f'{isolate}: FILTER={args.filter} selects none (only the '
                              'user-space suite, which runs after the suites of a boot)',
                              context)
        a = arch.get(args.arch)
        kunitcmd.fragments(args.config, args.kver, a.name)
        llvm = knobs.LLVM_PACKAGES if knobs.make_variable(options, 'LLVM') == '1' else ()
        packages.ensure_packages([*guest.PACKAGES, *gcov.PACKAGES, *a.packages, *llvm])
        t = prepare_tree(args, user)
        problem = kunitcmd.tree_errors(t, args)
        if problem:
            raise say.PrepareError(problem)
        # CONFIG=debian: resolved here
        frags = kunitcmd.kernel_fragments(t, args.config, a.name, options)
        build_dir = build_dir_of(t, args.config, a.name, ' '.join(
            [*knobs.knob(args, 'make_options').split(), *knobs.kconfig_add(args)]))
        qemu_config = guest.write(build_dir, args.filter, a,
                                 isolation.isolation_anchor(exp, isolate))
    except say.PrepareError as e:
        return fail_early(out, 'prepare', str(e), context)
    context['version'] = t.version
    context['package'] = t.package
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    build_dir.mkdir(parents=True, exist_ok=True)
    test_log = build_dir / 'test.log'
    test_log.unlink(missing_ok=True)     # never judge a previous run's console
    gcov.clear(build_dir)                # nor count a previous run's coverage

    say.log(f'linux {t.version} ({t.package}) in {t.path}, ARCH={a.name}, SMP={args.smp}, '
            f'CONFIG={args.config}, FILTER={args.filter or "*"}'
            + ''.join(f', {knobs.KNOB_NAMES[k]}={v}'
                       for k, v in knobs.knob_context(args).items()))
    if user is not None:
        say.log(f'testing {user.describe()}')
    started = time.monotonic()
    control = None
    if args.topology == 'hotplug':
        control = hostctl.Control(build_dir / 'cpuhp-kunit', out / 'hostctl.log')
        control.start()
    inputs = buildstamp.run_build_inputs(t, frags, qemu_config, a, args)
    # What coverage.info will describe: the sources this run builds.
    sources = buildstamp.source_digest(t) if args.coverage_report else None
    built = buildstamp.reusable_build(build_dir, inputs)
    if built:
        say.log(f'{build_dir.name} holds the kernel of these very sources and configs: '
                'booting it again (kunit.py exec, no make)')
    else:
        buildstamp.forget_build(build_dir)
    cmd = kunitcmd.kunit_command(t, args, build_dir, out, qemu_config, control, frags,
                                 build=not built)
    # ISOLATE=: kunit.py's --timeout holds for each boot, the listing one too.
    boots_due = isolation.isolated_boots(exp, isolate) + 1 if isolate else 1
    if isolate:
        say.log(f'ISOLATE={isolate}: {boots_due - 1} boot(s) of one {isolate} each, after '
                'one that lists the cases')
    try:
        rc, killed_after = run_kunit(cmd, t.path, out / 'kunit.log',
                                     BUILD_TIMEOUT + boots_due * args.timeout + 60,
                                     isolation.IsolatedEcho() if isolate else None)
    finally:
        if control is not None:
            control.stop()
    kunit_log = (out / 'kunit.log').read_text(errors='replace')
    # The kernel started (ISOLATE=: its listing boot at least): it was built.
    started_kernel = 'Starting KUnit Kernel' in kunit_log or 'Running tests with:' in kunit_log
    if (not built and started_kernel
            and buildstamp.run_build_inputs(t, frags, qemu_config, a, args) == inputs):
        # The build went through, its inputs held still.
        buildstamp.remember_build(build_dir, inputs)
    context['toolchain'] = knobs.toolchain(build_dir, options, a.cross_compile or '',
                                           started_kernel)
    if isolate:
        console = isolation.isolated_console(kunit_log, isolate)
        if console:
            (out / 'console.log').write_text(''.join(f'{ln}\n' for ln in console))
    elif test_log.is_file():
        shutil.copyfile(test_log, out / 'console.log')
    _, v = judge(out, out / 'console.log', exp, rc, killed_after, args.timeout,
                 kunit_log, out / 'results.json', t.kunit_py, isolate,
                 left_out if knobs.knob(args, 'filter_action') == 'skip' else ())
    if args.coverage_report:
        v = coverage_report(out, build_dir, t.path, args.kver, v, a, isolate)
        if (out / 'coverage.info').is_file():
            buildstamp.remember_coverage(out, sources)
    v = decode_reports(out, build_dir / 'vmlinux', [t.path], a.cross_compile or '') or v
    write_kcidb(out)        # with the coverage
    page.write_run(out)     # with the coverage and the state map
    say.log(f'{time.monotonic() - started:.0f} s; outputs in {out}, at a glance in '
            f'{out / "index.html"}')
    if user is not None:
        say.log(f'tested {user.describe()}; the same verdict again: make judge '
                f'CONSOLE={out / "console.log"} KVER={user.kver} SMP={args.smp}'
                + (f' CONFIG={args.config}' if args.config != 'default' else '')
                + (f" FILTER='{args.filter}'" if args.filter else ''))
    print('\n'.join(summary(v)))
    return 0 if v.ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
