"""The jobs of make matrix and make test's tier: defined here once, listed, run.

    matrix.py list [selection]            the jobs, one a line, as make arguments
    matrix.py run [--force 1] [selection] make matrix, make test (--tier 1)
    matrix.py run [--force 1] -- JOB...   these jobs (make's arguments joined by commas)
    matrix.py ci [--check]                the job lists of .gitlab-ci.yml and the
                                          GitHub workflow, generated from here

The selection (the Makefile's knobs): --kvers, --configs, --series-kvers,
--other-archs, --arch, --tier. jobs() is the one definition of the
matrix: which jobs, in which order, and which are the tier; the Makefile,
both CI definitions and the tests take it from here.

A job runs as `make <arguments>` through jobstamp.py (a job that passed and
whose inputs did not change is not run again). Every job runs even when an
earlier one is red. A line a job as it starts and ends says where the run is and, from
the time each job took when it last passed (its stamp in out/.jobs/), about
how long is left. The last lines name every job and its exit status, so a
CI log cut to its tail still says which job was red; exit 1 if any was.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from cpuhpk import jobstamp, stamp
from cpuhpk.paths import REPO

# The configs of each kernel series (one build each). sanitizers carries
# every detector (lockdep, KASAN, UBSAN, the lockup and hung-task
# detectors); rt+debug is PREEMPT_RT with lockdep, on 6.12 only: x86
# selects ARCH_SUPPORTS_RT since 6.12.
CONFIGS: Dict[str, Tuple[str, ...]] = {
    '6.12': ('default', 'sanitizers', 'rt+debug'),
    '6.1': ('default', 'sanitizers'),
}
# make test's tier: what fits a cold run on one 2-core machine in 45
# minutes (Documentation/ci.md#the-tier-and-the-matrix).
TIER = ('coverage KVER=6.12 CONFIG=default', 'coverage KVER=6.1 CONFIG=default',
        'fixes-test KVER=6.12 CONFIG=default')
# make mutate's shards per kernel series in the CI definitions.
SHARDS = 4
# mutants/roads/ (written against 6.12's kernel/cpu.c, for the x86 guests):
# its own shards, on 6.12 alone.
ROADS = 'roads'
ROADS_KVERS = ('6.12',)
ROADS_SHARDS = 2


class SelectionError(Exception):
    """A selection with no job, or a series without configs; one line."""


@dataclass(frozen=True)
class Job:
    """A job of the matrix: make's target and arguments."""
    target: str
    kver: str
    config: str
    extra: Tuple[str, ...] = ()

    @property
    def args(self) -> List[str]:
        return [self.target, f'KVER={self.kver}', f'CONFIG={self.config}', *self.extra]

    def __str__(self) -> str:
        return ' '.join(self.args)

    @property
    def word(self) -> str:
        return ','.join(self.args)


def jobs(kvers: Sequence[str] = ('6.12', '6.1'), configs: Sequence[str] = (),
         series_kvers: Sequence[str] = ('6.12',),
         other_archs: Sequence[str] = ('arm64',)) -> List[Job]:
    """Every job of make matrix for @kvers, in the order it runs them.

    The default kernel of each series is the coverage kernel (make coverage:
    the run in six guests and the gate), booted once more with 2 CPUs (a
    CPU count at which a path differs, Documentation/findings/12-...), and
    with our kernel fixes (fixes-test, its own build directory shared) and
    the fixes as postable series; @configs, when given, replaces every
    series' own. The upstream series is checked on @series_kvers; the
    own-tree check and the other architectures' coverage run on 6.12;
    Debian's own kernel on 6.12 when no @configs are given.
    """
    for k in kvers:
        if not (configs or CONFIGS.get(k)):
            raise SelectionError(f'KVERS: no configs for {k}: set CONFIGS= or add it to '
                                 'CONFIGS in tools/cpuhpk/matrix.py')
    cfgs = {k: tuple(configs) or CONFIGS[k] for k in kvers}
    out = [Job('coverage' if c == 'default' else 'run', k, c) for k in kvers for c in cfgs[k]]
    with_default = [k for k in kvers if 'default' in cfgs[k]]
    out += [Job('run', k, 'default', ('SMP=2',)) for k in with_default]
    out += [Job(t, k, 'default') for k in with_default for t in ('fixes-test', 'fixes-series-test')]
    out += [Job('series-test', k, 'default') for k in kvers if k in series_kvers]
    if '6.12' in kvers:
        out.append(Job('tree-test', '6.12', 'default'))
        if '6.12' in with_default:
            out += [Job('coverage', '6.12', 'default', (f'ARCH={a}',)) for a in other_archs]
        if not configs:
            out.append(Job('run', '6.12', 'debian'))
    return out


def select(all_jobs: Sequence[Job], arch: str = 'x86_64', tier: bool = False,
           other_archs: Sequence[str] = ('arm64',), kvers: Sequence[str] = ()) -> List[Job]:
    """The jobs make matrix (@tier: make test) runs for @arch: x86_64's are
    all of them, another architecture's only its own (every job would
    inherit ARCH=, and the x86 ones are not built for it)."""
    if arch != 'x86_64':
        mine = [j for j in all_jobs if f'ARCH={arch}' in j.extra]
        if not mine:
            raise SelectionError(f'ARCH={arch}: no job of the matrix is for it (OTHER_ARCHS='
                                 f'{" ".join(other_archs)}, KVERS={" ".join(kvers)})')
        return mine
    if not tier:
        return list(all_jobs)
    mine = [j for j in all_jobs if str(j) in TIER]
    if not mine:
        raise SelectionError("no job of make test's tier in this selection: make matrix "
                             'runs them')
    return mine


def words(job: str) -> List[str]:
    """'coverage,KVER=6.12' -> ['make', 'coverage', 'KVER=6.12']"""
    return ['make', *job.split(',')]


def last_seconds(job: str) -> Optional[int]:
    """How long @job took when it last passed (its stamp), None if never."""
    data = stamp.read(jobstamp.stamp_path(words(job)))
    try:
        return int(data['seconds']) if data is not None else None
    except (ValueError, KeyError, TypeError):
        return None


def minutes(seconds: float) -> str:
    return f'{round(seconds / 60)} min' if seconds >= 90 else f'{round(seconds)} s'


def left(jobs: Sequence[str], estimate: Callable[[str], Optional[int]]) -> str:
    """About how long @jobs take, from @estimate; says how many have no figure."""
    if not jobs:
        return 'nothing left'
    known = [s for s in map(estimate, jobs) if s is not None]
    unknown = len(jobs) - len(known)
    plural = 's' if unknown > 1 else ''
    if not known:
        return f'{unknown} job{plural} left, none timed yet'
    text = f'about {minutes(sum(known))} left'
    return f'{text} and {unknown} job{plural} never timed' if unknown else text


def run(jobs: Sequence[str], force: str,
        job_runner: Callable[[List[str]], int] = lambda argv: jobstamp.main(argv),
        estimate: Callable[[str], Optional[int]] = last_seconds,
        clock: Callable[[], float] = time.monotonic,
        out: Callable[[str], None] = print) -> int:
    """Run each of @jobs; the summary lines at the end; 0 when all passed."""
    summary = []
    estimates = {job: estimate(job) for job in jobs}
    rc = 0
    for i, job in enumerate(jobs, 1):
        name = ' '.join(job.split(','))
        tag = f'cpuhp-kunit [{i}/{len(jobs)}] {name}'
        out(f'{tag} ... ({left(jobs[i - 1:], estimates.get)})')
        sys.stdout.flush()
        started = clock()
        status = job_runner(['--force', force, '--', *words(job)])
        took = round(clock() - started)
        rc = rc or (1 if status else 0)
        out(f'{tag}: {"ok" if status == 0 else "RED"} in {minutes(took)}, '
            f'{left(jobs[i:], estimates.get)}')
        summary.append(f'cpuhp-kunit matrix: {"ok  " if status == 0 else "RED "} {name} '
                       f'(exit {status}, {took} s)')
    for line in summary:
        out(line)
    out(f'cpuhp-kunit matrix: {"PASS" if rc == 0 else "FAIL"}')
    return rc


GITLAB = REPO / '.gitlab-ci.yml'
GITHUB = REPO / '.github' / 'workflows' / 'cpuhp-kunit.yml'
BEGIN = '# >>> generated by tools/cpuhpk/matrix.py (make ci-files): {name}'
END = '# <<< generated: {name}'


def quoted(values: Sequence[str]) -> str:
    return '[' + ', '.join(f'"{v}"' for v in values) + ']'


def ci_blocks(all_jobs: Sequence[Job], kvers: Sequence[str]) -> Dict[str, List[str]]:
    """The generated lines of the CI definitions, by block name, unindented."""
    gitlab: List[str] = []
    github: List[str] = []
    for j in all_jobs:
        gitlab += [f'- TARGET: "{j.target}"', f'  KVER: "{j.kver}"', f'  CONFIG: "{j.config}"']
        row = f'target: "{j.target}", kver: "{j.kver}", config: "{j.config}"'
        if j.extra:
            gitlab.append(f'  EXTRA: "{" ".join(j.extra)}"')
            row += f', extra: "{" ".join(j.extra)}"'
        github.append(f'- {{ {row} }}')
    shards = [f'{i}/{SHARDS}' for i in range(1, SHARDS + 1)]
    roads = [f'{i}/{ROADS_SHARDS}' for i in range(1, ROADS_SHARDS + 1)]
    return {
        'kernel jobs (GitLab)': gitlab,
        'mutant shards (GitLab)': [
            f'- KVER: {quoted(kvers)}', f'  EXTRA: {quoted(["SHARD=" + x for x in shards])}',
            f'- KVER: {quoted(ROADS_KVERS)}',
            f'  EXTRA: {quoted([f"MUTANTS=mutants/{ROADS} SHARD={x}" for x in roads])}'],
        'kernel jobs (GitHub)': github,
        'mutant shards (GitHub)': [
            f'kver: {quoted(kvers)}', 'config: ["default"]', f'shard: {quoted(shards)}',
            'include:', *[f'  - {{ kver: "{k}", config: "default", shard: "{x}", set: "{ROADS}" }}'
                          for k in ROADS_KVERS for x in roads]],
    }


def rewrite(text: str, name: str, lines: Sequence[str]) -> str:
    """@text with the lines between @name's markers replaced by @lines,
    indented as the begin marker is."""
    m = re.search(r'^( *)' + re.escape(BEGIN.format(name=name)) + r'\n(.*?)^ *'
                  + re.escape(END.format(name=name)) + r'$', text, re.M | re.S)
    if not m:
        raise SelectionError(f'no "{BEGIN.format(name=name)}" ... "{END.format(name=name)}" '
                             'lines')
    indent = m.group(1)
    body = ''.join(f'{indent}{ln}\n' for ln in lines)
    return text[:m.start(2)] + body + text[m.end(2):]


def ci_files(check: bool) -> int:
    """Write (@check: compare) the CI definitions' generated job lists."""
    blocks = ci_blocks(jobs(), ('6.12', '6.1'))
    stale = []
    for path, suffix in ((GITLAB, 'GitLab'), (GITHUB, 'GitHub')):
        text = path.read_text()
        new = text
        for name, lines in blocks.items():
            if name.endswith(f'({suffix})'):
                new = rewrite(new, name, lines)
        if new != text:
            stale.append(path)
            if not check:
                path.write_text(new)
    for path in stale:
        print(f'cpuhp-kunit: {path.relative_to(REPO)}: '
              + ('its job lists are not those of tools/cpuhpk/matrix.py: run make ci-files'
                 if check else 'job lists written'), file=sys.stderr if check else sys.stdout)
    return 1 if check and stale else 0


def words_of(value: str) -> List[str]:
    return value.split()


def add_selection(ap: argparse.ArgumentParser) -> None:
    ap.add_argument('--kvers', type=words_of, default=['6.12', '6.1'],
                    help='the kernel series (KVERS)')
    ap.add_argument('--configs', type=words_of, default=[],
                    help='the configs of every series instead of their own (CONFIGS)')
    ap.add_argument('--series-kvers', type=words_of, default=['6.12'],
                    help='the series whose upstream series is checked (SERIES_KVERS)')
    ap.add_argument('--other-archs', type=words_of, default=['arm64'],
                    help='the architectures besides x86_64 (OTHER_ARCHS)')
    ap.add_argument('--arch', default='x86_64', help='ARCH: another one selects its jobs')
    ap.add_argument('--tier', default='0', help="1: make test's tier only (TIER)")


def selected(args: argparse.Namespace) -> List[Job]:
    return select(jobs(args.kvers, args.configs, args.series_kvers, args.other_archs),
                  args.arch, args.tier == '1', args.other_archs, args.kvers)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='command', required=True)
    ls = sub.add_parser('list', help='the jobs, one a line, as make arguments')
    add_selection(ls)
    rn = sub.add_parser('run', help='run the jobs: make matrix, make test')
    add_selection(rn)
    rn.add_argument('--force', default='0', help='1: run every job even when up to date')
    rn.add_argument('jobs', nargs='*', help='these jobs instead (make arguments joined by commas)')
    ci = sub.add_parser('ci', help="write the CI definitions' job lists")
    ci.add_argument('--check', action='store_true', help='compare instead: 1 when they differ')
    args = ap.parse_args(argv)
    try:
        if args.command == 'ci':
            return ci_files(args.check)
        chosen = [j.word for j in selected(args)] if args.command == 'list' or not args.jobs \
            else list(args.jobs)
    except SelectionError as e:
        print(f'cpuhp-kunit: {e}', file=sys.stderr)
        return 2
    if args.command == 'list':
        for word in chosen:
            print(word.replace(',', ' '))
        return 0
    os.environ.setdefault('PYTHONUNBUFFERED', '1')
    return run(chosen, args.force)


if __name__ == '__main__':
    sys.exit(main())
