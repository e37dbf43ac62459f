"""make run of a RunSpec: prepare the tree, build (or reuse) the kernel, boot it with kunit.py.

execute() takes the cache's lock, prepares the tree (the Debian one of
KVER=, or the user's: usertree.py), builds kunit.py's command
(kunitcmd.py), boots the kernel the build directory holds when it was
built of these very inputs (buildstamp.py, kunit.py exec) and runs
kunit.py in a process group of its own (proc.py), killed when it
outlives the build allowance plus the kernel's timeout. Its console is
then judged (outputs.py), the coverage of the run reported (gcov.py) and
the kernel's reports decoded (decode.py). Ctrl-C and SIGTERM end kunit.py,
make and QEMU; the verdict then says interrupted.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Dict, Optional

from cpuhpk import (arch, attrs, buildstamp, cache, gcov, guest, hostctl, isolation, knobs, ktap,
                    kunitcmd, outputs, packages, page, proc, runspec, say, tree, usertree, verdict)
from cpuhpk.paths import REPO
from cpuhpk.runspec import RunSpec

# Time for kunit.py to configure and build a cold tree on a 2-core machine,
# with a wide margin: the kernel's own run has its own timeout (--timeout).
BUILD_TIMEOUT = 45 * 60


def prepare_tree(spec: RunSpec, user: Optional[usertree.Resolved]) -> tree.Tree:
    """The tree @spec builds: the Debian one of its KVER, or the user's (@user, TREE=)."""
    if user is not None:
        return usertree.prepare(user, REPO, spec.fixes)
    return tree.prepare(spec.kver, REPO, spec.fixes)


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
        return outputs.add_problems(out, [verdict.Problem('coverage', '', str(e))])
    say.log(f'coverage: {out / "summary.txt"}, {out / "html" / "index.html"}')
    return v

def execute(spec: RunSpec) -> int:
    """make run of @spec; 0 only when the verdict has no problem (verdict.py)."""
    problem = spec.errors() or kunitcmd.knob_errors(spec)
    if problem:
        runspec.parser().error(problem)
    try:
        user = spec.resolved()
    except say.PrepareError as e:
        assert spec.tree is not None
        name = usertree.tree_key(spec.tree.path.expanduser().resolve())[0]
        return outputs.fail_early(spec.out or REPO / 'out' / f'tree-{name}', 'prepare', str(e),
                                  {'tree': str(spec.tree.path), 'rev': spec.tree.rev,
                                   'commit': runspec.commit()})
    spec = spec.for_user(user)
    out = spec.output_dir(user)
    context = spec.run_context(user)
    proc.raise_on_signals()
    try:
        what = f'TREE={user.spec.path} REV={user.short}' if user else f'KVER={spec.kver}'
        with cache.cache_lock(f'make run {what} CONFIG={spec.config}'):
            return _run(spec, out, context, user)
    except cache.LockBusy as e:
        # Not a word in out/: it belongs to the run that holds the lock.
        print(f'cpuhp-kunit: error: {e}', file=sys.stderr)
        return 1
    except (proc.Interrupted, KeyboardInterrupt) as e:
        signum = e.signum if isinstance(e, proc.Interrupted) else signal.SIGINT
        if out.is_dir():
            outputs.add_problems(out, [verdict.Problem('interrupted', '', f'interrupted by '
                                                       f'{signal.Signals(signum).name}')])
        print(f'cpuhp-kunit: interrupted by {signal.Signals(signum).name}; kunit.py, make '
              'and QEMU stopped', file=sys.stderr)
        return 128 + signum


def _run(spec: RunSpec, out: Path, context: Dict[str, str],
         user: Optional[usertree.Resolved] = None) -> int:
    """The run of @spec under the cache's lock, into @out, its verdict.json saying @context."""
    isolate = spec.isolate
    options = knobs.make_options(spec)
    try:
        exp = outputs.expectations(spec.filter, context, spec.strict,
                                   bool(guest.userspace_cases(spec.filter)))
        if exp.cases == {}:
            return outputs.fail_early(out, 'missing', f'FILTER={spec.filter} matches no case '
                                      'of the kunit/ suites', context)
        left_out = attrs.apply_attribute_filter(exp, spec)
        if exp.cases == {}:
            return outputs.fail_early(out, 'missing', f'FILTER_ATTR={spec.filter_attr} leaves '
                                      f'out every case FILTER={spec.filter} selects', context)
        if isolate and not isolation.isolated_boots(exp, isolate):
            return outputs.fail_early(out, 'prepare', f'ISOLATE={isolate} boots once per KUnit '
                                      f'{isolate}: FILTER={spec.filter} selects none (only the '
                                      'user-space suite, which runs after the suites of a '
                                      'boot)', context)
        a = arch.get(spec.arch)
        kunitcmd.fragments(spec.config, spec.kver, a.name)
        llvm = knobs.LLVM_PACKAGES if knobs.make_variable(options, 'LLVM') == '1' else ()
        packages.ensure_packages([*guest.PACKAGES, *gcov.PACKAGES, *a.packages, *llvm])
        t = prepare_tree(spec, user)
        problem = kunitcmd.tree_errors(t, spec)
        if problem:
            raise say.PrepareError(problem)
        # CONFIG=debian: resolved here
        frags = kunitcmd.kernel_fragments(t, spec.config, a.name, options)
        build_dir = build_dir_of(t, spec.config, a.name, ' '.join(
            [*spec.make_options.split(), *knobs.kconfig_add(spec)]))
        qemu_config = guest.write(build_dir, spec.filter, a,
                                  isolation.isolation_anchor(exp, isolate))
    except say.PrepareError as e:
        return outputs.fail_early(out, 'prepare', str(e), context)
    context['version'] = t.version
    context['package'] = t.package
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    build_dir.mkdir(parents=True, exist_ok=True)
    test_log = build_dir / 'test.log'
    test_log.unlink(missing_ok=True)     # never judge a previous run's console
    gcov.clear(build_dir)                # nor count a previous run's coverage

    say.log(f'linux {t.version} ({t.package}) in {t.path}, ARCH={a.name}, SMP={spec.smp}, '
            f'CONFIG={spec.config}, FILTER={spec.filter or "*"}'
            + ''.join(f', {knobs.KNOB_NAMES[k]}={v}'
                      for k, v in spec.set_knobs().items()))
    if user is not None:
        say.log(f'testing {user.describe()}')
    started = time.monotonic()
    control = None
    if spec.topology == 'hotplug':
        control = hostctl.Control(build_dir / 'cpuhp-kunit', out / 'hostctl.log')
        control.start()
    inputs = buildstamp.run_build_inputs(t, frags, qemu_config, a, spec)
    # What coverage.info will describe: the sources this run builds.
    sources = buildstamp.source_digest(t) if spec.coverage_report else None
    built = buildstamp.reusable_build(build_dir, inputs)
    if built:
        say.log(f'{build_dir.name} holds the kernel of these very sources and configs: '
                'booting it again (kunit.py exec, no make)')
    else:
        buildstamp.forget_build(build_dir)
    cmd = kunitcmd.kunit_command(t, spec, build_dir, out, qemu_config, control, frags,
                                 build=not built)
    # ISOLATE=: kunit.py's --timeout holds for each boot, the listing one too.
    boots_due = isolation.isolated_boots(exp, isolate) + 1 if isolate else 1
    if isolate:
        say.log(f'ISOLATE={isolate}: {boots_due - 1} boot(s) of one {isolate} each, after '
                'one that lists the cases')
    try:
        rc, killed_after = proc.run_logged(cmd, t.path, out / 'kunit.log',
                                           BUILD_TIMEOUT + boots_due * spec.timeout + 60,
                                           isolation.IsolatedEcho() if isolate else None)
    finally:
        if control is not None:
            control.stop()
    kunit_log = (out / 'kunit.log').read_text(errors='replace')
    # The kernel started (ISOLATE=: its listing boot at least): it was built.
    started_kernel = 'Starting KUnit Kernel' in kunit_log or 'Running tests with:' in kunit_log
    if (not built and started_kernel
            and buildstamp.run_build_inputs(t, frags, qemu_config, a, spec) == inputs):
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
    _, v = outputs.judge(out, out / 'console.log', exp, rc, killed_after, spec.timeout,
                 kunit_log, out / 'results.json', t.kunit_py, isolate,
                 left_out if spec.filter_action == 'skip' else ())
    if spec.coverage_report:
        v = coverage_report(out, build_dir, t.path, spec.kver, v, a, isolate)
        if (out / 'coverage.info').is_file():
            buildstamp.remember_coverage(out, sources)
    v = outputs.decode_reports(out, build_dir / 'vmlinux', [t.path], a.cross_compile or '') or v
    outputs.write_kcidb(out)        # with the coverage
    page.write_run(out)     # with the coverage and the state map
    say.log(f'{time.monotonic() - started:.0f} s; outputs in {out}, at a glance in '
            f'{out / "index.html"}')
    if user is not None:
        say.log(f'tested {user.describe()}; the same verdict again: make judge '
                f'CONSOLE={out / "console.log"} KVER={user.kver} SMP={spec.smp}'
                + (f' CONFIG={spec.config}' if spec.config != 'default' else '')
                + (f" FILTER='{spec.filter}'" if spec.filter else ''))
    print('\n'.join(outputs.summary(v)))
    return 0 if v.ok else 1
