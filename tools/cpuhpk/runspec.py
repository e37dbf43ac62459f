"""RunSpec: every knob of one run, once, with what follows from them.

make run's variables reach tools/cpuhpk/run.py as options (parser());
RunSpec.from_args() reads them into one frozen value that every module
takes (execute.py runs it, outputs.py judges its console, coverage,
mutate, bisect, series and tree-test make their own), and
RunSpec.argv() gives them back as options for the one place that starts a
run as a process of its own (mutate.py). What a run's knobs decide
without the tree is here too: the output directory (output_dir()), the
context verdict.json records (run_context(), judge_context()), and why the
CPUs and topology cannot boot (errors()).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from cpuhpk import arch, say, tree, usertree
from cpuhpk.paths import REPO

# The CPUs a run boots with (make SMP=): the count make test is judged at.
DEFAULT_SMP = 4
# The guest's CPU topologies (make TOPOLOGY=); kunitcmd.smp_arg() says what each boots.
TOPOLOGIES = ('flat', 'smt', 'hotplug', 'nosmt', 'nosmt-force', 'maxcpus')
# kunit.py's own knobs (make KCONFIG_ADD=, KERNEL_ARGS=, QEMU_ARGS=,
# MAKE_OPTIONS=, ISOLATE=, FILTER_ATTR=, FILTER_ACTION=), in the order
# verdict.json's context names them; knobs.KUNIT_PY_FLAGS has their flags.
KUNIT_KNOBS = ('kconfig_add', 'kernel_args', 'qemu_args', 'make_options', 'isolate',
               'filter_attr', 'filter_action')
# What make judge takes of kunit.py's knobs: what the console's run asked for.
JUDGED_KNOBS = ('isolate', 'filter_attr', 'filter_action')
DESCRIPTION = '`make run`: prepare the tree, build and boot it with kunit.py, judge the result.'


def two_threads(topology: str) -> bool:
    """Does @topology put two threads in each core?"""
    return topology in ('smt', 'nosmt', 'nosmt-force', 'maxcpus')


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """One run as make run's variables describe it (run.py's options)."""
    kver: str = '6.12'
    arch: str = arch.HOST
    smp: int = DEFAULT_SMP
    topology: str = 'flat'
    filter: str = ''
    config: str = 'default'
    timeout: int = 600                  # seconds for the kernel run
    jobs: int = os.cpu_count() or 1
    out: Optional[Path] = None          # None: output_dir()
    coverage_report: bool = True
    console: Optional[Path] = None      # make judge: the console to judge instead of a run
    vmlinux: Optional[Path] = None      # make judge: its kernel, to decode reports
    userspace: bool = True              # make judge: the console may hold the user-space suite
    fixes: bool = False
    seed: int = 0
    stress_ops: int = 0
    strict: bool = False
    # kunit.py's own knobs (KUNIT_KNOBS), as make takes them: words apart by spaces.
    kconfig_add: str = ''
    kernel_args: str = ''
    qemu_args: str = ''
    make_options: str = ''
    isolate: str = ''                   # '', 'suite' or 'test'
    filter_attr: str = ''
    filter_action: str = ''             # '' or 'skip'
    tree: Optional[usertree.Spec] = None    # TREE=, REV=, LOCAL=, SERIES=

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunSpec:
        """The spec of run.py's parsed options @args (parser())."""
        return cls(kver=args.kver, arch=args.arch, smp=args.smp, topology=args.topology,
                   filter=args.filter, config=args.config, timeout=args.timeout,
                   jobs=args.jobs, out=args.out, coverage_report=args.coverage_report,
                   console=args.judge, vmlinux=args.vmlinux, userspace=bool(args.userspace),
                   fixes=bool(args.fixes), seed=args.seed, stress_ops=args.stress_ops,
                   strict=bool(args.strict), kconfig_add=args.kconfig_add,
                   kernel_args=args.kernel_args, qemu_args=args.qemu_args,
                   make_options=args.make_options, isolate=args.isolate,
                   filter_attr=args.filter_attr, filter_action=args.filter_action,
                   tree=tree_spec(args))

    @classmethod
    def from_argv(cls, argv: Sequence[str]) -> RunSpec:
        """The spec of run.py's command line @argv."""
        return cls.from_args(parser().parse_args(list(argv)))

    def argv(self) -> List[str]:
        """run.py's options for this spec: from_argv(argv()) == self."""
        out = ['--kver', self.kver, '--arch', self.arch, '--smp', str(self.smp),
               '--topology', self.topology, '--filter', self.filter, '--config', self.config,
               '--timeout', str(self.timeout), '--jobs', str(self.jobs),
               '--userspace', str(int(self.userspace)), '--fixes', str(int(self.fixes)),
               '--seed', str(self.seed), '--stress-ops', str(self.stress_ops),
               '--strict', str(int(self.strict)),
               *[w for name in KUNIT_KNOBS
                 for w in (f"--{name.replace('_', '-')}", self.kunit_knobs()[name])]]
        if self.out is not None:
            out += ['--out', str(self.out)]
        if not self.coverage_report:
            out.append('--no-coverage-report')
        if self.console is not None:
            out += ['--judge', str(self.console)]
        if self.vmlinux is not None:
            out += ['--vmlinux', str(self.vmlinux)]
        if self.tree is not None:
            out += ['--tree', str(self.tree.path), '--rev', self.tree.rev,
                    '--local', str(int(self.tree.local))]
            if self.tree.series is not None:
                out += ['--series', str(self.tree.series)]
        return out

    def kunit_knobs(self) -> Dict[str, str]:
        """kunit.py's knobs by name (KUNIT_KNOBS), '' where unset."""
        return {'kconfig_add': self.kconfig_add, 'kernel_args': self.kernel_args,
                'qemu_args': self.qemu_args, 'make_options': self.make_options,
                'isolate': self.isolate, 'filter_attr': self.filter_attr,
                'filter_action': self.filter_action}

    def set_knobs(self) -> Dict[str, str]:
        """The kunit.py knobs that are set, as verdict.json's context says them."""
        return {name: value for name, value in self.kunit_knobs().items() if value}

    def errors(self) -> Optional[str]:
        """Why this many CPUs in this topology cannot boot on this architecture."""
        if self.smp < 1:
            return '--smp must be at least 1'
        if two_threads(self.topology) and self.smp % 2:
            return (f'TOPOLOGY={self.topology} puts two threads in each core: '
                    f'SMP={self.smp} is odd')
        if self.topology not in arch.get(self.arch).topologies:
            return (f'TOPOLOGY={self.topology} is not possible on ARCH={self.arch} '
                    f'(it has: {" ".join(arch.get(self.arch).topologies)}; '
                    'tools/cpuhpk/arch.py says why)')
        return None

    def resolved(self) -> Optional[usertree.Resolved]:
        """The user's tree read (TREE=), None without one; raises say.PrepareError."""
        return usertree.resolve(self.tree, REPO) if self.tree is not None else None

    def for_user(self, user: Optional[usertree.Resolved]) -> RunSpec:
        """This spec on the kernel series chosen for the user's tree @user."""
        return self if user is None else dataclasses.replace(self, kver=user.kver)

    def output_dir(self, user: Optional[usertree.Resolved] = None) -> Path:
        """Where the run writes: --out, else out/judge for make judge, else
        out/<KVER>[-<CONFIG>][-arm64][-smp<N>][-<topology>][-fixes];
        TREE=: out/tree-<name>-<rev>[...] alike.

        -arm64 for another architecture than x86_64, -smp<N> only for
        another CPU count than the default, -<topology> for another than
        flat: the same kernel booted otherwise is another run, not a
        replacement.
        """
        if self.out is not None:
            return self.out
        if self.console is not None:
            return REPO / 'out' / 'judge'
        base = f'tree-{user.name}-{user.short}' if user is not None else self.kver
        name = base if self.config == 'default' else f'{base}-{self.config}'
        name += arch.get(self.arch).out_suffix
        if self.smp != DEFAULT_SMP:
            name += f'-smp{self.smp}'
        if self.topology != 'flat':
            name += f'-{self.topology}'
        return REPO / 'out' / (f'{name}-fixes' if self.fixes else name)

    def _context(self) -> Dict[str, str]:
        return {'kver': self.kver, 'arch': self.arch, 'config': self.config,
                'smp': str(self.smp), 'topology': self.topology, 'filter': self.filter,
                'fixes': str(int(self.fixes))}

    def run_context(self, user: Optional[usertree.Resolved] = None) -> Dict[str, str]:
        """verdict.json's context of make run: the knobs, this repository's commit,
        the user's tree (@user) and the kunit.py knobs that are set."""
        return {**self._context(), 'strict': str(int(self.strict)), 'commit': commit(),
                **tree_context(user), **self.set_knobs()}

    def judge_context(self, userspace: bool) -> Dict[str, str]:
        """verdict.json's context of make judge: the knobs, the console, whether
        the user-space suite is expected (@userspace) and the knobs of kunit.py
        that say what the console's run asked for (JUDGED_KNOBS)."""
        return {**self._context(), 'console': str(self.console),
                'userspace': str(int(userspace)), 'commit': commit(),
                **{k: v for k, v in self.set_knobs().items() if k in JUDGED_KNOBS}}


def tree_context(user: Optional[usertree.Resolved]) -> Dict[str, str]:
    """What a TREE= run adds to verdict.json's context."""
    if user is None:
        return {}
    return {'tree': str(user.spec.path), 'rev': user.sha, 'rev_subject': user.subject,
            'tree_version': user.version, 'series': user.series_label(),
            'local': user.local_note}


def commit() -> str:
    """This repository's commit, '-dirty' with uncommitted changes ('' outside git)."""
    try:
        head = tree.git(REPO, 'rev-parse', '--short=12', 'HEAD').stdout.strip()
        dirty = tree.git(REPO, 'status', '--porcelain', '--', 'kunit', 'src', 'kconfigs',
                         'tools/cpuhpk').stdout.strip()
    except (OSError, say.PrepareError):
        return ''
    return head + ('-dirty' if dirty else '')


def parser() -> argparse.ArgumentParser:
    """run.py's options (make run's and make judge's variables)."""
    ap = argparse.ArgumentParser(description=DESCRIPTION)
    ap.add_argument('--kver', default='6.12')
    ap.add_argument('--arch', choices=tuple(arch.ARCHES), default=arch.HOST,
                    help='the architecture to build and boot (arm64: cross-compiled, '
                    'qemu-system-aarch64 virt)')
    ap.add_argument('--smp', type=int, default=DEFAULT_SMP)
    ap.add_argument('--topology', choices=TOPOLOGIES, default='flat',
                    help='smt, nosmt, nosmt-force, maxcpus: two threads per core (needs an even --smp)')
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
    """kunit.py's own knobs (KUNIT_KNOBS), handed on to it. make judge
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


def tree_spec(args: argparse.Namespace) -> Optional[usertree.Spec]:
    """The user's tree of options add_tree_arguments() made; None without --tree."""
    if not args.tree:
        return None
    return usertree.Spec(Path(args.tree), args.rev or 'HEAD', bool(args.local),
                         Path(args.series) if args.series else None)
