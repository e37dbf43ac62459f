"""Run the jobs of make matrix (or make test's tier), one after the other.

    matrix.py [--force 1] -- coverage,KVER=6.12,CONFIG=default run,KVER=6.1,...

Each job is one word, make's arguments joined by commas, and runs as
`make <arguments>` through jobstamp.py (a job that passed and whose inputs
did not change is not run again). Every job runs even when an earlier one
is red. A line a job as it starts and ends says where the run is and, from
the time each job took when it last passed (its stamp in out/.jobs/), about
how long is left. The last lines name every job and its exit status, so a
CI log cut to its tail still says which job was red; exit 1 if any was.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable, List, Optional, Sequence

if __package__ in (None, ''):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cpuhpk import jobstamp  # noqa: E402


def words(job: str) -> List[str]:
    """'coverage,KVER=6.12' -> ['make', 'coverage', 'KVER=6.12']"""
    return ['make', *job.split(',')]


def last_seconds(job: str) -> Optional[int]:
    """How long @job took when it last passed (its stamp), None if never."""
    try:
        data = json.loads(jobstamp.stamp_path(words(job)).read_text())
        return int(data['seconds'])
    except (OSError, ValueError, KeyError, TypeError):
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


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--force', default='0', help='1: run every job even when up to date')
    ap.add_argument('jobs', nargs='*', help='the jobs: make arguments joined by commas')
    args = ap.parse_args(argv)
    if not args.jobs:
        print('cpuhp-kunit matrix: no job to run', file=sys.stderr)
        return 2
    os.environ.setdefault('PYTHONUNBUFFERED', '1')
    return run(args.jobs, args.force)


if __name__ == '__main__':
    sys.exit(main())
