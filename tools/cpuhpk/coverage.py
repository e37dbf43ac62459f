"""`make coverage`: `make run` on the default kernel, its coverage gated.

Every run yields coverage (tools/cpuhpk/gcov.py): the default kernel is the
coverage kernel, so this builds nothing `make run` has not built. The same
kernel boots once per guest topology (runspec.TOPOLOGIES: flat, then the SMT
guest and the guest with CPUs to hot-add, which reach the paths of
kernel/cpu.c a flat guest cannot, then the SMT guest booted with nosmt and
with nosmt=force, for the boot-time SMT paths: those two run the user-space
sysfs test alone, the KUnit suites have nothing more to reach there; last
the SMT guest with empty CPU slots booted with maxcpus= one short, its
maxcpus_* sysfs cases alone), each
boot a run with its own verdict in its own out/ directory; the gate reads
their coverage merged. On top of the
runs it adds the gate (tools/coverage-thresholds-<KVER>: per file lines and
functions, per gated function lines and branches) and the anchor: the same
kernel booted with kunit.enable=0 and an initramfs that runs upstream's
tools/testing/selftests/cpu-hotplug/cpu-on-off-test.sh -a (with bash-static)
before printing its gcov data.

Writes out/<KVER>/ (the flat run's outputs), out/<KVER>-smt/,
out/<KVER>-hotplug/, out/<KVER>-nosmt/, out/<KVER>-nosmt-force/ and
out/<KVER>-maxcpus/ (the other runs'), and in out/<KVER>/ the merged
coverage-merged.info, summary.txt (each topology's and the merged figures,
gated), html/ (of the merged data), selftest.info and the suites-vs-selftest
lines. Fails when a run fails, or a file or gated function drops below its
threshold.
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from cpuhpk import (arch, cache, execute, gcov, guest, kunitcmd, outputs, runspec, say, tree,
                    verdict)
from cpuhpk.gcov import FileCov, pct
from cpuhpk.runspec import RunSpec

# What the boots that only differ by a boot-time argument run: the sysfs
# test (about 25 s each instead of 60 with the suites), and of it in the
# maxcpus guest the cases that need CPUs the boot left unstarted.
TOPOLOGY_FILTERS = {'nosmt': 'cpuhp_sysfs.*', 'nosmt-force': 'cpuhp_sysfs.*',
                    'maxcpus': kunitcmd.MAXCPUS_FILTER}


class SelftestError(say.PrepareError):
    """The anchor run failed: it gives no figure."""


def selftest_anchor(t: tree.Tree, build_dir: Path, out: Path, smp: str,
                    timeout: int, a: Optional[arch.Arch] = None) -> Dict[str, FileCov]:
    """The same kernel running upstream's cpu-on-off-test.sh -a instead of the suites."""
    a = a or arch.get(arch.HOST)
    gcov.clear(build_dir)
    script = t.path / 'tools' / 'testing' / 'selftests' / 'cpu-hotplug' / 'cpu-on-off-test.sh'
    initrd = guest.make_initramfs(build_dir / 'cpuhp-kunit' / 'selftest.cpio',
                                  guest.SELFTEST_INIT,
                                  [('cpu-on-off-test.sh', script),
                                   ('bin/bash', arch.static_binary(a, 'bash-static',
                                                                   'bin/bash-static'))],
                                  guest.busybox(a))
    console = out / 'selftest-console.log'
    cmd = [f'qemu-system-{a.qemu_arch}', '-nodefaults', '-m', '1024', '-smp', smp,
           '-kernel', str(build_dir / a.kernel_path), '-initrd', str(initrd),
           '-append', f'console={a.console} kunit.enable=0 panic=-1 rdinit=/init',
           '-no-reboot', '-nographic', '-serial', 'stdio', *a.qemu_params]
    say.log('booting the same kernel with cpu-on-off-test.sh -a')
    with open(console, 'w') as f:
        try:
            subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                           timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise say.PrepareError(f'the selftest run did not finish within {timeout} s: '
                                   f'see {console}') from None
    status = guest.selftest_status(console)
    if status != 0:
        said = 'printed no exit status' if status is None else f'exited {status}'
        raise SelftestError(f'cpu-on-off-test.sh {said}: no anchor figure (see {console})')
    gcov.extract_gcda(console, build_dir)
    return gcov.capture(build_dir, t.path, out, 'selftest')


def anchor_lines(files: Dict[str, FileCov], anchor: Dict[str, FileCov]) -> List[str]:
    """kernel/cpu.c: the suites' coverage next to the selftest's."""
    text = ['', 'kernel/cpu.c, suites vs upstream cpu-on-off-test.sh -a on the same kernel:']
    for label, cov in (('suites', files), ('selftest', anchor)):
        c = next((v for f, v in cov.items() if f.endswith('/kernel/cpu.c')), FileCov())
        text.append(f'  {label:9} lines {pct(c.lines):5.1f}% ({c.lines[0]}/'
                    f'{c.lines[1]})  functions {pct(c.functions):5.1f}% '
                    f'({c.functions[0]}/{c.functions[1]})')
    return text


def merged(infos: Sequence[Path], out: Path) -> Dict[str, FileCov]:
    """The runs' tracefiles @infos added up in @out/coverage-merged.info, html/ of it."""
    dest = out / 'coverage-merged.info'
    args: List[str] = []
    for info in infos:
        args += ['--add-tracefile', str(info)]
    gcov.lcov(*args, '--output-file', str(dest))
    gcov.genhtml(dest, out / 'html')
    return gcov.parse_info(dest.read_text())


def topology_lines(infos: Sequence[Path]) -> List[str]:
    """kernel/cpu.c's lines and branches in each run, before the merged summary."""
    text = ['kernel/cpu.c per guest topology (the gate reads them merged, below):']
    for info in infos:
        cov = gcov.parse_info(info.read_text())
        c = next((v for f, v in cov.items() if f.endswith('/kernel/cpu.c')), FileCov())
        text.append(f'  {info.parent.name:22} lines {pct(c.lines):5.1f}%  '
                    f'branches {pct(c.branches):5.1f}%')
    return text + ['', 'merged:']


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description='make run on the default kernel, coverage gated.')
    ap.add_argument('--kver', default='6.12')
    ap.add_argument('--arch', choices=tuple(arch.ARCHES), default=arch.HOST)
    ap.add_argument('--smp', type=int, default=4)
    ap.add_argument('--timeout', type=int, default=600)
    ap.add_argument('--seed', type=int, default=0, help='cpuhp_stress seed (make run SEED=)')
    ap.add_argument('--stress-ops', type=int, default=0, help='cpuhp_stress operations')
    ap.add_argument('--no-selftest', dest='selftest', action='store_false',
                    help='skip the cpu-on-off-test.sh anchor run')
    runspec.add_tree_arguments(ap)
    args = ap.parse_args(argv)
    if args.smp % 2 and any(runspec.two_threads(x) for x in arch.get(args.arch).topologies):
        ap.error(f'make coverage boots the SMT guest too (two threads per core): '
                 f'SMP={args.smp} is odd')
    spec = RunSpec(kver=args.kver, arch=args.arch, smp=args.smp, timeout=args.timeout,
                   seed=args.seed, stress_ops=args.stress_ops, tree=runspec.tree_spec(args))
    return cache.locked(f'make coverage KVER={args.kver} ARCH={args.arch}',
                        lambda: coverage(spec, args.selftest))


def coverage(spec: RunSpec, selftest: bool = True) -> int:
    """The runs of @spec on every guest topology, the gate and (@selftest) the
    anchor; every cause of a non-zero exit lands in junit.xml."""
    try:
        user = spec.resolved()
    except say.PrepareError as e:
        print(f'cpuhp-kunit: error: {e}', file=sys.stderr)
        return 1
    spec = spec.for_user(user)
    a = arch.get(spec.arch)
    out = spec.output_dir(user)
    rc = 0
    infos: List[Path] = []
    problems: List[verdict.Problem] = []
    for topology in a.topologies:
        guest = dataclasses.replace(spec, topology=topology,
                                    filter=TOPOLOGY_FILTERS.get(topology, ''))
        rc |= execute.execute(guest)
        info = guest.output_dir(user) / 'coverage.info'
        if info.is_file():
            infos.append(info)
        else:
            # That run is red already (it says why); the gate would read less.
            problems.append(verdict.Problem('coverage', '', f'make coverage: the {topology} '
                                            'run left no coverage.info: no gate'))
    files: Dict[str, FileCov] = {}
    if not problems:
        try:
            files = merged(infos, out)
        except say.PrepareError as e:
            problems.append(verdict.Problem('coverage', '', f'make coverage: {e}'))
    anchor: Optional[Dict[str, FileCov]] = None
    if files and selftest:
        try:
            t = execute.prepare_tree(spec, user)
            anchor = selftest_anchor(t, execute.build_dir_of(t, 'default', a.name), out,
                                     str(spec.smp), spec.timeout, a)
        except SelftestError as e:
            problems.append(verdict.Problem('selftest', '', str(e)))
        except (say.PrepareError, subprocess.CalledProcessError) as e:
            problems.append(verdict.Problem('coverage', '', f'make coverage: {e}'))
    if files:
        limits = gcov.thresholds_path(spec.kver, a)
        text = (topology_lines(infos) + gcov.summary(files, limits) +
                (anchor_lines(files, anchor) if anchor is not None else []))
        (out / 'summary.txt').write_text('\n'.join(text) + '\n')
        print('\n'.join(text))
        if limits.is_file():
            problems += [verdict.Problem('coverage', '', f'coverage gate: {p}')
                         for p in gcov.gate(files, gcov.read_thresholds(limits)) +
                         gcov.gate_functions(files, gcov.read_function_thresholds(limits))]
        else:
            problems.append(verdict.Problem('coverage', '', f'no coverage gate for KVER='
                                            f'{spec.kver} ARCH={a.name}: {limits} does not '
                                            'exist'))
        say.log(f'coverage report in {out / "html" / "index.html"}')
    if not out.is_dir():
        out.mkdir(parents=True)
    v = outputs.add_problems(out, problems)
    for p in problems:
        print(f'cpuhp-kunit: FAIL: [{p.category}] {p}', file=sys.stderr)
    print('cpuhp-kunit: PASS' if v.ok and not rc else 'cpuhp-kunit: FAIL')
    print(outputs.counts_line(v))
    return 1 if problems or rc or not v.ok else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
