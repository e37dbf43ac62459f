"""`make mutate`: apply each mutant to the cached tree, run the suites, restore.

A mutant is a -p1 patch against the prepared tree whose first line is a
'# ' comment naming the promise it breaks. It is killed when the run fails
for any reason (a case failed or crashed, the kernel hung, the log-hygiene
check tripped); otherwise it survived. The tree is restored after every
mutant, also when the run is interrupted.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Sequence

if __package__ in (None, ''):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = 'cpuhpk'  # noqa: A001  (run as a script)

from cpuhpk import hygiene, ktap, tree  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@dataclasses.dataclass
class Outcome:
    mutant: str
    verdict: str        # killed, survived, not-applicable
    by: str             # which cases (or what else) killed it
    seconds: float
    promise: str


def promise(patch: Path) -> str:
    first = patch.read_text(errors='replace').splitlines()[:1]
    return first[0].lstrip('# ').strip() if first and first[0].startswith('#') else ''


def killers(out: Path) -> str:
    """What made the run red, short."""
    names: List[str] = []
    ktap_path = out / 'results.ktap'
    if ktap_path.is_file():
        root = ktap.parse(ktap_path.read_text(errors='replace').splitlines())
        names += [n for n, t in ktap.cases(root)
                  if t.status in (ktap.Status.FAIL, ktap.Status.CRASHED)]
    console = out / 'console.log'
    if console.is_file() and hygiene.check(console.read_text(errors='replace').splitlines()):
        names.append('log-hygiene')
    if not names:
        if not console.is_file():
            names.append('build failure')
        elif not ktap_path.is_file() or not ktap_path.read_text().strip():
            names.append('no KUnit output (hang or crash before the suites)')
        else:
            names.append('kunit.py')
    return ', '.join(names[:4]) + (f' (+{len(names) - 4})' if len(names) > 4 else '')


def run_one(patch: Path, t: tree.Tree, run_args: List[str], out: Path) -> Outcome:
    started = time.monotonic()
    check = tree.git(t.path, 'apply', '--check', str(patch.resolve()), check=False)
    if check.returncode != 0:
        return Outcome(patch.stem, 'not-applicable', check.stderr.strip().splitlines()[0]
                       if check.stderr.strip() else 'git apply --check failed', 0.0,
                       promise(patch))
    tree.git(t.path, 'apply', str(patch.resolve()))
    try:
        env = dict(os.environ, CPUHP_KUNIT_DIRTY='1')
        res = subprocess.run([sys.executable, str(REPO / 'tools' / 'cpuhpk' / 'run.py'),
                              *run_args, '--out', str(out)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             check=False)
    finally:
        tree.git(t.path, 'apply', '-R', str(patch.resolve()))
    seconds = time.monotonic() - started
    if res.returncode == 0:
        return Outcome(patch.stem, 'survived', '', seconds, promise(patch))
    return Outcome(patch.stem, 'killed', killers(out), seconds, promise(patch))


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description='Mutation testing of the suites.')
    ap.add_argument('--mutants', type=Path, default=REPO / 'mutants')
    ap.add_argument('--kver', default='6.12')
    ap.add_argument('--smp', default='4')
    ap.add_argument('--filter', default='')
    ap.add_argument('--timeout', default='60')
    args = ap.parse_args(argv)
    patches = sorted(args.mutants.glob('*.patch'))
    if not patches:
        print(f'cpuhp-kunit: error: no *.patch in {args.mutants}', file=sys.stderr)
        return 1
    try:
        t = tree.prepare(args.kver, REPO)
    except tree.PrepareError as e:
        print(f'cpuhp-kunit: error: {e}', file=sys.stderr)
        return 1
    # SIGTERM as well as Ctrl-C unwinds through run_one()'s finally: the
    # mutant is reversed before the process ends.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    run_args = ['--kver', args.kver, '--smp', args.smp, '--filter', args.filter,
                '--timeout', args.timeout]
    base = REPO / 'out' / f'{args.kver}-mutate'
    outcomes: List[Outcome] = []
    for patch in patches:
        o = run_one(patch, t, run_args, base / patch.stem)
        outcomes.append(o)
        print(f'{o.mutant:45} {o.verdict:15} {o.seconds:5.0f}s  {o.by}', flush=True)
    applied = [o for o in outcomes if o.verdict != 'not-applicable']
    killed = sum(o.verdict == 'killed' for o in applied)
    table = ['| mutant | promise broken | verdict | killed by | seconds |',
             '|---|---|---|---|---|']
    table += [f'| {o.mutant} | {o.promise} | {o.verdict} | {o.by} | {o.seconds:.0f} |'
              for o in outcomes]
    base.mkdir(parents=True, exist_ok=True)
    (base / 'report.md').write_text('\n'.join(table) + '\n')
    print(f'cpuhp-kunit: mutants: {killed}/{len(applied)} killed, '
          f'{len(outcomes) - len(applied)} not applicable; table in {base / "report.md"}')
    return 0 if killed == len(applied) else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
