"""A run's outputs from its console: verdict.json, junit.xml, results.*, index.html.

judge() has a console (console.log) judged (judging.py) against what the
run asked for (expectations(): the kunit/ suites' cases narrowed by
FILTER=, the expected skips and known failures), writes results.ktap,
junit.xml, verdict.json, kcidb.json and the page (write_outputs()), and
says when kunit.py's own parse or exit status tell another story.
judge_file() is make judge: a console captured anywhere. add_problems()
and decode_reports() amend the outputs of a judged run; fail_early()
leaves red outputs of a run that ended before its kernel ran.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from cpuhpk import (arch, attrs, decode, guest, isolation, judging, junit, kcidb, kcidbrun, ktap,
                    kunitjson, kunitspec, page, runspec, say, seriesplan, states, tree, verdict)
from cpuhpk.paths import REPO
from cpuhpk.runspec import RunSpec

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

def judge_file(spec: RunSpec) -> int:
    """make judge: the verdict of the console spec.console, captured elsewhere."""
    problem = spec.errors()
    if problem:
        runspec.parser().error(problem)
    assert spec.console is not None
    out = spec.output_dir()
    userspace = bool(spec.userspace and guest.userspace_cases(spec.filter))
    context = spec.judge_context(userspace)
    say.log('judging as make run would: the user-space suite ' + (
       'expected (USERSPACE=0 for a console that never had it)' if userspace else
       'not expected' + (' (USERSPACE=0)' if not spec.userspace else
                         f' (FILTER={spec.filter} selects none of it)')))
    try:
        exp = expectations(spec.filter, context, spec.strict, userspace)
        left_out = attrs.apply_attribute_filter(exp, spec)
    except say.PrepareError as e:
        return fail_early(out, 'prepare', str(e), context)
    except ValueError as e:
        return fail_early(out, 'prepare', f'FILTER_ATTR={spec.filter_attr}: {e}', context)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    console = out / 'console.log'
    try:
        with open(spec.console, 'rb') as src, open(console, 'wb') as dst:
            # A bounded copy: only what the verdict reads, and one byte more.
            shutil.copyfileobj(_Bounded(src, ktap.MAX_CONSOLE + 1), dst)
    except OSError as e:
        return fail_early(out, 'console', f'cannot read {spec.console}: {e.strerror}', context)
    _, v = judge(out, console, exp, rc=None, kunit_log=None, isolate=spec.isolate,
                 attr_skipped=left_out if spec.filter_action == 'skip' else ())
    if spec.vmlinux:
        trees: List[Optional[Path]] = []
        with contextlib.suppress(say.PrepareError):
            trees.append(tree.tree_path(spec.kver))
        v = decode_reports(out, spec.vmlinux, trees,
                           arch.get(spec.arch).cross_compile or '') or v
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
