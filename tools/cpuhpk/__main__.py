"""python3 -m cpuhpk <command> [its options]: the tools as one command line.

Each make target that runs a tool is a command of the same name, with the
options of the module it runs (`python3 -m cpuhpk <command> --help`):
`make run` is `run`, `make judge` is `judge` (run --judge, the console
first), `make series-check` is `series-check` (series --no-results
--check), and so on; the Makefile's recipe of each is that one command
line. What a command refuses before it runs (another ARCH, a CONFIG the
target has no use for, a knob it needs) is checked here, as make reports
it, one line on stderr and exit 2.

`python3 -m cpuhpk help` prints the make targets and the knobs with their
current values (make's: the environment's, or NAME=value words after
help); make help is that. KNOBS is the one table of the Makefile's knobs:
its `NAME ?= default` lines agree with it and Documentation/knobs.md has a
row for each (tools/tests/test_cli.py, test_docs.py). Run it with tools/
on PYTHONPATH (the Makefile does) or from tools/.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from cpuhpk.paths import REPO

TOOLS = REPO / 'tools'


@dataclass(frozen=True)
class Knob:
    """A make knob: `NAME ?= default` in the Makefile."""
    name: str
    default: str
    what: str


# The knobs, in the order make help and the Makefile list them.
KNOBS: Tuple[Knob, ...] = (
    Knob('KVER', '6.12', "kernel series: Debian's linux-source-<KVER>"),
    Knob('ARCH', 'x86_64', 'x86_64, or arm64 (cross-compiled, QEMU virt) -> '
         'out/<KVER>[-<CONFIG>]-arm64/: run, judge, coverage, mutate'),
    Knob('SMP', '4', 'CPUs of the QEMU guest'),
    Knob('TOPOLOGY', 'flat', 'flat: one thread per core; smt: two per core (the SMT control '
         'cases) -> out/...-smt/; hotplug: CPUs more to hot-add and hot-remove (QMP) -> '
         'out/...-hotplug/; nosmt, nosmt-force: smt booted with nosmt, nosmt=force '
         '(+ cpuhp.parallel=0) -> out/...-nosmt[-force]/; maxcpus: smt with one core\'s '
         'slots empty, booted with maxcpus=SMP-1 -> out/...-maxcpus/'),
    Knob('FILTER', '', 'kunit.py filter_glob, e.g. FILTER=timekeeping_crosststamp.*'),
    Knob('CONFIG', 'default', 'fragment kconfigs/<CONFIG>.config; a+b combines fragments'),
    Knob('TIMEOUT', '600', 'seconds the booted kernel may take; make mutate: a mutant\'s run, '
         'when given (else derived from the unmutated run)'),
    Knob('PYTHON', '/usr/bin/python3', "Debian's python3, which sees the python3-* packages "
         'the tools and their tests use'),
    Knob('MUTANTS', 'mutants', 'directory of -p1 mutant patches for make mutate'),
    Knob('CONSOLE', '', 'console log for make judge'),
    Knob('USERSPACE', '1', 'make judge: 1 expects the user-space suite as make run does; 0: a '
         'console without it'),
    Knob('VMLINUX', '', "make judge: the vmlinux of the console's kernel (with debug info): "
         "its reports' frames decoded, file:line"),
    Knob('FIXES', '0', '1: apply our kernel fixes (src/<KVER>/fixes/series) -> '
         'out/<KVER>[-<CONFIG>]-fixes/'),
    Knob('STRICT', '0', '1: known failures (kunit/known-failures-<KVER>) are red; run what '
         'wedges a CPU'),
    Knob('SEED', '0', 'cpuhp_stress: seed of the random walk (0: random, printed in the KTAP)'),
    Knob('STRESS_OPS', '0', 'cpuhp_stress: operations of the walk (0: the suite default, 400)'),
    Knob('KCONFIG_ADD', '', 'kconfig lines on top of the fragments, apart by spaces, e.g. '
         "'CONFIG_KASAN=y CONFIG_KCOV=n' (kunit.py --kconfig_add; a change rebuilds)"),
    Knob('KERNEL_ARGS', '', "kernel arguments after the run's own, apart by spaces (kunit.py "
         '--kernel_args)'),
    Knob('QEMU_ARGS', '', "QEMU arguments after the run's own, split as a shell would "
         '(kunit.py --qemu_args)'),
    Knob('MAKE_OPTIONS', '', 'make options of the kernel build, e.g. LLVM=1 for clang '
         '(kunit.py --make_options; a change rebuilds)'),
    Knob('ISOLATE', '', 'suite or test: one boot per suite or per case (kunit.py '
         '--run_isolated), judged as one run'),
    Knob('FILTER_ATTR', '', "KUnit attribute filter, e.g. 'speed>slow' (kernels with KUnit "
         'attributes: 6.12, not 6.1)'),
    Knob('FILTER_ACTION', '', 'skip: what FILTER_ATTR leaves out runs as skipped'),
    Knob('KVERS', '6.12 6.1', 'the kernel series make matrix and make test run (KVER= on '
         "make's command line narrows it to KVER)"),
    Knob('CONFIGS', '', "the configs they run (empty: each series' own, "
         'tools/cpuhpk/matrix.py)'),
    Knob('TIER', '0', "1: make matrix and matrix-list take make test's tier only"),
    Knob('FORCE', '0', '1: make matrix and make test run every job, also those up to date'),
    Knob('OTHER_ARCHS', 'arm64', "the architectures besides x86_64 whose default 6.12 kernel "
         'make matrix covers (empty: none)'),
    Knob('SERIES_KVERS', '6.12', 'the series make matrix checks with series-test'),
    Knob('SHARD', '', 'make mutate: I/N runs the I-th of N shards of the mutants'),
    Knob('GUESTS', '', 'make mutate: the guests every mutant runs on, in order (e.g. flat, '
         'or flat,smt), instead of those its coverage reaches'),
    Knob('DIRS', '', 'make merge-results: the out/ directories to merge'),
    Knob('AUTHOR', '', 'make series, fixes-series, finding-mails: "Name <email>" of From: and '
         'Signed-off-by: (empty: git config)'),
    Knob('FINDINGS', '14 10 04', 'make finding-mails: the findings to write mails for'),
    Knob('RECORD', '0', 'make reports: 1 records the consoles as test data'),
    Knob('BOOTS', '', 'make reports: only these boots (tools/cpuhpk/provoke.py; empty: all)'),
    Knob('PARTS', '', 'make bench: any of warm ratio options cold (empty: warm ratio)'),
    Knob('TREE', '', 'your kernel git tree instead of the Debian one (never written to); KVER '
         'follows its version: run, coverage, mutate, bisect'),
    Knob('REV', 'HEAD', 'TREE=: the revision to test'),
    Knob('LOCAL', '1', 'TREE=: 1: with the uncommitted changes of its tracked files (REV=HEAD)'),
    Knob('SERIES', '', 'TREE=: a directory of your own patches instead of src/<KVER>/series'),
    Knob('GOOD', '', 'make bisect: the good revision'),
    Knob('BAD', 'HEAD', 'make bisect: the bad revision'),
)

# The environment's knobs (not make's): name, what it does.
ENVIRONMENT: Tuple[Tuple[str, str], ...] = (
    ('CPUHP_KUNIT_CACHE', 'cache directory, default ~/.cache/cpuhp-kunit'),
    ('CPUHP_KUNIT_NOWAIT', '1: fail at once when another run holds the cache'),
    ('CPUHP_KUNIT_DIRTY', '1: test a cached tree with local edits or commits'),
)


def option(argv: Sequence[str], name: str) -> Optional[str]:
    """The value the last @name ('--x v' or '--x=v') of @argv gives, None if none."""
    found = None
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            found = argv[i + 1]
        elif a.startswith(name + '='):
            found = a[len(name) + 1:]
    return found


def operands(argv: Sequence[str], valued: Sequence[str]) -> List[str]:
    """The words of @argv that are neither options nor the values of @valued options."""
    out = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a in valued:
            skip = True
        elif not a.startswith('-'):
            out.append(a)
    return out


@dataclass(frozen=True)
class Command:
    """What a command runs: @module's main(), the shell script tools/@script
    or @function (none: only the refusals), with @args before the command
    line's own words; the first operand given to @operand. Before it runs,
    the refusals make reports: another ARCH (@x86_only), a CONFIG other than
    default (@config: the message), @usage when @missing finds what it needs
    missing."""
    module: str = ''
    args: Tuple[str, ...] = ()
    operand: str = ''
    script: str = ''
    function: Optional[Callable[[Sequence[str]], int]] = None
    x86_only: bool = False
    config: str = ''
    missing: Optional[Callable[[Sequence[str]], bool]] = None
    usage: str = ''


# make fixes-test: the runs of our kernel fixes, each the command line's run
# with these options' values (FIXES=1 on the make command line of each, as
# the runs were). The sysfs test alone with nosmt: Documentation/findings/19.
FIXES_RUNS: Tuple[Tuple[str, ...], ...] = (
    ('--fixes', '1', '--smp', '4'), ('--fixes', '1', '--smp', '2'),
    ('--fixes', '1', '--topology', 'smt'), ('--fixes', '1', '--topology', 'hotplug'),
    ('--fixes', '1', '--topology', 'nosmt', '--filter', 'cpuhp_sysfs.*'),
)


def with_options(argv: Sequence[str], pairs: Sequence[str]) -> List[str]:
    """@argv with each option of @pairs (option, value, ...) given its value:
    in place where @argv has it ('--x v' or '--x=v'), else appended."""
    out = list(argv)
    for name, value in zip(pairs[::2], pairs[1::2]):
        at = [i for i, a in enumerate(out) if a == name and i + 1 < len(out)]
        eq = [i for i, a in enumerate(out) if a.startswith(name + '=')]
        for i in at:
            out[i + 1] = value
        for i in eq:
            out[i] = f'{name}={value}'
        if not at and not eq:
            out += [name, value]
    return out


def call_main(module: str, argv: Sequence[str]) -> int:
    """cpuhpk.@module's main(@argv)."""
    entry = importlib.import_module(f'cpuhpk.{module}')
    return int(entry.main(list(argv)))


def spawn(argv: Sequence[str]) -> int:
    """@argv as a process with tools/ on PYTHONPATH; its exit status."""
    path = os.pathsep.join(p for p in (str(TOOLS), os.environ.get('PYTHONPATH', '')) if p)
    return subprocess.call(list(argv), env={**os.environ, 'PYTHONPATH': path})


def fixes_test(argv: Sequence[str]) -> int:
    """make fixes-test: run with FIXES=1 on each guest of FIXES_RUNS, every
    one even when an earlier one is red; 1 if any was."""
    rc = 0
    for i, extra in enumerate(FIXES_RUNS, 1):
        print(f'cpuhp-kunit fixes-test [{i}/{len(FIXES_RUNS)}]: run {" ".join(extra)}', flush=True)
        if spawn([sys.executable, '-m', 'cpuhpk', 'run', *with_options(argv, extra)]):
            rc = 1
    return rc


SERIES_CONFIG = 'the series are built with their own configs: no CONFIG={config}'


def series(*args: str) -> Command:
    return Command('series', args, x86_only=True, config=SERIES_CONFIG)


def fixes_series(*args: str) -> Command:
    return Command('fixseries', args, x86_only=True, config=SERIES_CONFIG)


# The make targets, in the order make help lists them: what each does, and
# the command it runs (None: make's own recipe; help is main()'s).
TARGETS: Tuple[Tuple[str, str, Optional[Command]], ...] = (
    ('help', 'these lines: python3 -m cpuhpk help with the knobs\' current values', None),
    ('run', 'prepare the cached tree, build, boot in QEMU, judge, coverage report -> '
     'out/<KVER>[-<CONFIG>]/', Command('run')),
    ('run-debug', 'make run CONFIG=debug: lockdep, PROVE_RCU, atomic-sleep and object checks',
     None),
    ('matrix', 'for each series of KVERS: coverage for default, run for each other config, the '
     "fixes, series and tree jobs, Debian's kernel; red if any is", Command('matrix', ('run',))),
    ('test', 'tools-test, then the tier of matrix (TIER=1): both default kernels with the '
     'coverage gate, 6.12 with FIXES=1: what .ci/run runs', None),
    ('matrix-list', "the kernel jobs of make matrix, one a line (make arguments; TIER=1: make "
     "test's)", Command('matrix', ('list',))),
    ('ci-files', 'write the job lists of .gitlab-ci.yml and the GitHub workflow from '
     'tools/cpuhpk/matrix.py', Command('matrix', ('ci',))),
    ('merge-results', 'merge the out/ directories of DIRS (CI jobs) -> out/merged/',
     Command('merge', missing=lambda a: not operands(a, ('--out',)),
             usage='usage: make merge-results DIRS="out/a out/b ..."')),
    ('tools-test', "mypy --strict and the tools' own tests on recorded consoles", None),
    ('prepare', 'only install packages, extract the tree, apply src/<KVER>/, copy kunit/',
     Command('tree')),
    ('bisect', 'git bisect run over TREE= from GOOD= to BAD= with the verdict as the test -> '
     'out/bisect-<name>/',
     Command('bisect', x86_only=True,
             missing=lambda a: not (option(a, '--tree') and option(a, '--good')),
             usage='usage: make bisect TREE=<kernel git tree> GOOD=<rev> [BAD=<rev>] '
                   '[FILTER=..] [CONFIG=..]')),
    ('tree-test', 'TREE= and make bisect on a test tree made from the cached 6.12 tree (make '
     'matrix)', Command('treetest', x86_only=True)),
    ('fixes-test', 'run FIXES=1 on five guests (SMP=4, SMP=2, smt, hotplug, nosmt): our kernel '
     'fixes do what they claim', Command(function=fixes_test, x86_only=True)),
    ('fixes-series', 'our kernel fixes as postable series (cover letters, To/Cc), each checked: '
     'applies to the pristine tree, checkpatch, builds', fixes_series()),
    ('fixes-series-test', 'the same, signed off as the commit author without AUTHOR/git config '
     '(make matrix)', fixes_series('--author-of-head')),
    ('coverage', 'run on the default kernel, flat, SMT, hot-add, nosmt and maxcpus guests + '
     'merged coverage gate + selftest anchor -> out/<KVER>[-smt|-hotplug|-nosmt|-nosmt-force|'
     '-maxcpus]/',
     Command('coverage', config='make coverage gates the default kernel; CONFIG={config} runs '
             'yield coverage too: make run CONFIG={config}')),
    ('judge', 'the verdict of a console log: make judge CONSOLE=file -> out/judge/',
     Command('run', operand='--judge', missing=lambda a: not option(a, '--judge'),
             usage='usage: make judge CONSOLE=<console log> [VMLINUX=<vmlinux>] [FILTER=..] '
                   '[SMP=..] [CONFIG=..]')),
    ('reports', 'provoke real kernel reports with LKDTM, judge them -> out/reports/ (RECORD=1: '
     'into tools/tests/data/reports/)', Command('provoke', x86_only=True)),
    ('mutate', 'apply each MUTANTS/*.patch, run it on the guests whose coverage reaches it '
     'until one kills it, report killed/survived/not covered per road', Command('mutate')),
    ('bench', 'warm times and the build ratio to kunit.py; PARTS="warm ratio options cold" '
     '(tools/bench.sh)', Command(script='bench.sh', x86_only=True)),
    ('checkpatch', 'scripts/checkpatch.pl --strict on kunit/ and src/<KVER>/',
     Command(script='checkpatch.sh')),
    ('finding-mails', 'the reports of FINDINGS as plain-text mails with their fix as a patch, '
     'To/Cc from get_maintainer.pl -> out/finding-mails/<KVER>/',
     Command('findingmail', x86_only=True, config=SERIES_CONFIG)),
    ('series', 'the series posted upstream (our fixes first, the suites in their posted form), '
     'cover letter, To/Cc, checks -> out/series/<KVER>/', series()),
    ('series-config', 'the check the series targets run first: x86_64 and CONFIG=default only',
     Command(x86_only=True, config=SERIES_CONFIG)),
    ('series-check', 'series, then build after every patch and with SYSFS/SUSPEND/TRACING=n',
     series('--no-results', '--check')),
    ('series-pristine', 'series, then git am onto a fresh extraction and kunit.py run as the '
     'cover letter says', series('--no-results', '--pristine')),
    ('series-test', 'series-check and series-pristine, signed off as the commit author (the job '
     'make matrix runs for each of SERIES_KVERS)',
     series('--no-results', '--check', '--pristine', '--author-of-head')),
    ('clean-cache', 'delete the cached trees and build directories', None),
)
COMMANDS: Dict[str, Command] = {name: c for name, _, c in TARGETS if c is not None}


def refusal(target: str, command: Command, argv: Sequence[str],
            env: Mapping[str, str]) -> str:
    """Why @command refuses @argv in @env, as make says it; '' when it runs.
    ARCH and CONFIG are make's knobs as a recipe's environment has them
    (make exports what its command line and environment set)."""
    arch = env.get('ARCH', 'x86_64')
    if command.x86_only and arch != 'x86_64':
        return (f'make {target}: x86_64 only so far; ARCH={arch} has run, judge, coverage, '
                'mutate')
    config = env.get('CONFIG', 'default')
    if command.config and config != 'default':
        return command.config.format(config=config)
    if command.missing is not None and command.missing(argv):
        return command.usage
    return ''


def execute(name: str, argv: Sequence[str]) -> int:
    """Run command @name with the words @argv after it."""
    command = COMMANDS[name]
    rest = list(argv)
    if command.operand and rest and not rest[0].startswith('-'):
        rest = [command.operand, *rest]
    why = '' if {'-h', '--help'} & set(rest) else refusal(name, command, rest, os.environ)
    if why:
        print(why, file=sys.stderr)
        return 2
    if command.module:
        return call_main(command.module, [*command.args, *rest])
    if command.script:
        return spawn(['sh', str(TOOLS / command.script), *command.args, *rest])
    if command.function is not None:
        return command.function([*command.args, *rest])
    return 0


def columns(rows: Sequence[Tuple[str, str]]) -> List[str]:
    width = max(len(left) for left, _ in rows) + 2
    return [f'  {left.ljust(width)}{right}' for left, right in rows]


def usage(values: Mapping[str, str]) -> str:
    """make help: the targets, the knobs with their values in @values (the
    default where it has none), the environment's knobs."""
    lines = ['targets (make <target> [KNOB=value ...]; python3 -m cpuhpk <target> '
             "[its options]: the tool alone):"]
    lines += columns([(name, what) for name, what, _ in TARGETS])
    lines.append('knobs (current value):')
    lines += columns([(f'{k.name}={values.get(k.name, k.default)}', k.what) for k in KNOBS])
    lines.append('environment:')
    lines += columns([(f'{name}={os.environ.get(name, "")}', what)
                      for name, what in ENVIRONMENT])
    return '\n'.join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    name = args[0] if args else ''
    if name in ('help', '--help', '-h'):
        given = dict(w.split('=', 1) for w in args[1:] if '=' in w)
        print(usage({**os.environ, **given}))
        return 0
    if name not in COMMANDS:
        what = f'no command {name!r}:' if name else 'which command?'
        print(f'python3 -m cpuhpk: {what} python3 -m cpuhpk help lists them', file=sys.stderr)
        return 2
    return execute(name, args[1:])


if __name__ == '__main__':
    sys.exit(main())
