"""`make bisect TREE=... GOOD=<rev> BAD=<rev>`: the first commit that broke a promise.

`git bisect run` with our verdict as the test, in a bare repository of our
own under the cache that borrows the user's objects (the user's tree is
never written to; the bisection's state is ours). Each step is a TREE= run
of that revision without local changes (execute.execute() of a RunSpec,
FILTER= to keep it short), its outputs in out/bisect-<name>/steps/<rev>/:

  exit 0    the verdict is green
  exit 1    red for a reason a test gives (a case, a kernel report, a hang)
  exit 125  the series does not apply or the kernel does not build: skipped
  exit 128  anything else (no packages, an error of ours): the bisection stops

The bisection is reset on any exit, Ctrl-C included. Then: the first bad
commit, its subject, and the cases that turned red between it and its
parent (from the two steps' verdict.json; the parent is run when no step
did), in out/bisect-<name>/result.md and result.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

if __package__ in (None, ''):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = 'cpuhpk'  # noqa: A001  (run as a script)

from cpuhpk import cache, execute, mutate, mutreport, proc, say, tree, usertree, verdict  # noqa: E402,E501
from cpuhpk.paths import REPO  # noqa: E402
from cpuhpk.runspec import RunSpec  # noqa: E402

GOOD, BAD, SKIP, ABORT = 0, 1, 125, 128
STEPS_LOG = 'steps.log'


def out_base(name: str) -> Path:
    return REPO / 'out' / f'bisect-{name}'


def bisect_repo(user: usertree.Resolved) -> Path:
    """The bare repository holding the bisection's state, borrowing the user's objects."""
    bare = cache.cache_root() / f'bisect-{user.key}.git'
    if not (bare / 'HEAD').is_file():
        bare.mkdir(parents=True, exist_ok=True)
        tree.git(bare, 'init', '-q', '--bare')
        tree.git(bare, 'config', 'gc.auto', '0')
    info = bare / 'objects' / 'info'
    info.mkdir(parents=True, exist_ok=True)
    (info / 'alternates').write_text(f'{usertree.objects_dir(user.spec.path)}\n')
    return bare


def step_verdict(out: Path) -> Tuple[int, str]:
    """(exit status for git bisect run, why) from a step's verdict.json."""
    path = out / 'verdict.json'
    if not path.is_file():
        return ABORT, 'the run wrote no verdict'
    v, _ = verdict.read_json(path)
    if v.ok:
        return GOOD, 'green'
    build = [p for p in v.problems if p.category == 'build']
    if build:
        return SKIP, f'skipped: {build[0].message}'
    red = mutreport.killers(v)
    if red:
        return BAD, 'red: ' + ', '.join(red[:4]) + (f' (+{len(red) - 4})' if len(red) > 4
                                                   else '')
    other = sorted({p.category for p in v.problems})
    return ABORT, f'the run failed for no test reason ({", ".join(other)}): ' + \
        next(p.message for p in v.problems)


def run_step(args: argparse.Namespace, sha: str) -> Tuple[int, str]:
    """Test one revision: prepare it, run it, map its verdict to git bisect run's codes."""
    user = usertree.resolve(usertree.Spec(Path(args.tree), sha, False,
                                          Path(args.series) if args.series else None), REPO)
    out = out_base(user.name) / 'steps' / user.short
    try:
        with cache.cache_lock(f'make bisect step {user.short}'):
            usertree.prepare(user, REPO)
    except usertree.SeriesConflict as e:
        return SKIP, f'skipped: {e}'
    except say.PrepareError as e:
        return ABORT, f'cannot prepare: {e}'
    rc = execute.execute(RunSpec(tree=user.spec, smp=args.smp, filter=args.filter,
                                 config=args.config, timeout=args.timeout,
                                 coverage_report=False, out=out))
    code, why = step_verdict(out)
    if code == GOOD and rc != 0:
        return ABORT, f'the run exited {rc} with a green verdict'
    return code, why


def step_main(args: argparse.Namespace) -> int:
    """One step of git bisect run: the revision is the bisection's BISECT_HEAD."""
    # git bisect run points GIT_DIR at its repository: ours name theirs with -C.
    for name in usertree.GIT_LOCATION_ENV:
        os.environ.pop(name, None)
    sha = tree.git(Path(args.bisect_repo), 'rev-parse', 'BISECT_HEAD').stdout.strip()
    started = time.monotonic()
    try:
        code, why = run_step(args, sha)
    except say.PrepareError as e:
        code, why = ABORT, str(e)
    line = f'{sha[:12]} exit {code} {time.monotonic() - started:.0f}s {why}'
    with open(Path(args.log), 'a') as f:
        f.write(line.replace('\n', ' ') + '\n')
    say.log(f'bisect step: {line}')
    return code


def read_steps(log: Path) -> List[Tuple[str, int, str]]:
    """(rev, exit, why) of every step run, in order."""
    out = []
    if log.is_file():
        for line in log.read_text().splitlines():
            m = re.match(r'(\w+) exit (\d+) \d+s (.*)', line)
            if m:
                out.append((m.group(1), int(m.group(2)), m.group(3)))
    return out


def first_bad(log_text: str) -> Optional[str]:
    """The first bad commit from `git bisect log`, None when the bisection did not end there."""
    m = re.search(r'^# first bad commit: \[([0-9a-f]{40})\]', log_text, re.M)
    return m.group(1) if m else None


def turned_red(bad: Path, good: Path) -> List[str]:
    """Problems of @bad's verdict.json whose case (or category) @good's verdict does not have."""
    v_bad, _ = verdict.read_json(bad / 'verdict.json')
    v_good, _ = verdict.read_json(good / 'verdict.json') if (good / 'verdict.json').is_file() \
        else (verdict.Verdict(), {})
    before = {(p.name, p.category) for p in v_good.problems}
    out = []
    for p in v_bad.problems:
        if (p.name, p.category) not in before:
            line = f'{p.name or "(run)"} [{p.category}] {p.message.splitlines()[0]}'
            if line not in out:
                out.append(line)
    return out


@contextlib.contextmanager
def bisection(bare: Path, good: str, bad: str) -> Iterator[None]:
    """A started bisection, reset on every way out (an exception, Ctrl-C, SIGTERM)."""
    tree.git(bare, 'bisect', 'reset', check=False)     # a bisection a SIGKILL left behind
    tree.git(bare, 'update-ref', '--no-deref', 'HEAD', bad)
    tree.git(bare, 'bisect', 'start', '--no-checkout', bad, good)
    try:
        yield
    finally:
        with proc.signals_deferred():
            tree.git(bare, 'bisect', 'reset', check=False)


def bisect(args: argparse.Namespace) -> int:
    spec = usertree.Spec(Path(args.tree), 'HEAD', False,
                         Path(args.series) if args.series else None)
    good_user = usertree.resolve(usertree.Spec(spec.path, args.good, False, spec.series), REPO)
    bad_user = usertree.resolve(usertree.Spec(spec.path, args.bad, False, spec.series), REPO)
    user = bad_user
    base = out_base(user.name)
    bare = bisect_repo(user)
    count = tree.git(bare, 'rev-list', '--count',
                     f'{good_user.sha}..{bad_user.sha}').stdout.strip()
    if good_user.sha == bad_user.sha or count == '0':
        raise say.PrepareError(f'GOOD={args.good} is not an ancestor of BAD={args.bad} '
                               'with commits between them: nothing to bisect')
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    log = base / STEPS_LOG
    say.log(f'bisecting {user.spec.path}: GOOD {good_user.short} "{good_user.subject}", '
            f'BAD {bad_user.short} "{bad_user.subject}", {count} commit(s); '
            f'FILTER={args.filter or "*"} CONFIG={args.config} SMP={args.smp}')
    started = time.monotonic()
    step = [sys.executable, str(Path(__file__).resolve()), '--step',
            '--bisect-repo', str(bare), '--log', str(log), '--tree', str(spec.path),
            '--smp', str(args.smp), '--filter', args.filter, '--config', args.config,
            '--timeout', str(args.timeout), *(['--series', args.series] if args.series else [])]
    with bisection(bare, good_user.sha, bad_user.sha):
        env = dict(os.environ, CPUHP_KUNIT_NOWAIT='1')
        # A process group of its own (setsid): on Ctrl-C or SIGTERM here, git, the step and
        # its run are ended together (the run stops kunit.py, make and QEMU)
        # before the bisection is reset.
        child = subprocess.Popen(['git', *tree.GIT_IDENTITY, '-C', str(bare), 'bisect', 'run',
                                  *step], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, errors='replace', env=env,
                                 pass_fds=cache.lock_fds(), start_new_session=True)
        try:
            assert child.stdout is not None
            output = []
            for line in child.stdout:
                sys.stdout.write(line)
                output.append(line)
        except BaseException:
            with proc.signals_deferred():
                proc.end_group(child, mutate.CHILD_GRACE)
            raise
        rc = proc.wait_group(child, mutate.CHILD_GRACE)
        history = tree.git(bare, 'bisect', 'log', check=False).stdout
    (base / 'bisect.log').write_text(history)
    steps = read_steps(log)
    found = first_bad(history)
    result: Dict[str, object] = {
        'tree': str(spec.path), 'good': good_user.sha, 'bad': bad_user.sha,
        'commits': int(count), 'filter': args.filter, 'config': args.config,
        'smp': args.smp, 'steps': [{'rev': r, 'exit': c, 'why': w} for r, c, w in steps]}
    if found is None:
        aborted = [s for s in steps if s[1] >= ABORT]
        why = (f'a step failed for no test reason at {aborted[-1][0]}: {aborted[-1][2]}'
               if aborted else 'git bisect run ended without a first bad commit (exit '
               f'{rc}): ' + ' '.join(''.join(output[-6:]).split()))
        result['error'] = why
        write_result(base, result, [])
        print(f'cpuhp-kunit: bisect: no first bad commit: {why}', file=sys.stderr)
        return 1
    bad_dir = base / 'steps' / found[:12]
    parent = tree.git(bare, 'rev-parse', f'{found}^').stdout.strip()
    parent_dir = base / 'steps' / parent[:12]
    # The commit and its parent each need a verdict: whichever no step ran, run now.
    for sha, where in ((found, bad_dir), (parent, parent_dir)):
        if not (where / 'verdict.json').is_file():
            say.log(f'running {sha[:12]} for its verdict (no bisection step ran it)')
            code, why = run_step(args, sha)
            with open(log, 'a') as f:
                f.write(f'{sha[:12]} exit {code} 0s {why} (after the bisection)\n')
    steps = read_steps(log)
    subject = tree.git(bare, 'log', '-1', '--format=%s', found).stdout.strip()
    red = turned_red(bad_dir, parent_dir) if (bad_dir / 'verdict.json').is_file() else []
    result.update({'first_bad': found, 'subject': subject, 'parent': parent,
                   'turned_red': red, 'builds': len(steps),
                   'skipped': [r for r, c, _ in steps if c == SKIP],
                   'steps': [{'rev': r, 'exit': c, 'why': w} for r, c, w in steps],
                   'seconds': round(time.monotonic() - started)})
    lines = write_result(base, result, red)
    print('\n'.join(lines))
    return 0


def write_result(base: Path, result: Dict[str, object], red: Sequence[str]) -> List[str]:
    """result.json and result.md; the lines to print."""
    (base / 'result.json').write_text(json.dumps(result, indent=1) + '\n')
    steps = result.get('steps') or []
    assert isinstance(steps, list)
    lines = []
    if 'first_bad' in result:
        skipped = result.get('skipped')
        lines += [f"cpuhp-kunit: first bad commit: {result['first_bad']} {result['subject']}",
                  f"cpuhp-kunit: {result['builds']} build(s) for {result['commits']} "
                  f"commit(s), {len(skipped) if isinstance(skipped, list) else 0} skipped, "
                  f"{result.get('seconds', 0)} s"]
        lines += [f'cpuhp-kunit: turned red: {r}' for r in red] or \
            ['cpuhp-kunit: turned red: nothing the parent did not have (see the steps)']
    else:
        lines.append(f"cpuhp-kunit: bisect: no first bad commit: {result.get('error')}")
    md = ['# make bisect', '', f"tree {result['tree']}, GOOD {result['good']}, "
          f"BAD {result['bad']}, FILTER={result['filter'] or '*'}, CONFIG={result['config']}",
          '', *[f'- {ln.removeprefix("cpuhp-kunit: ")}' for ln in lines], '',
          '| revision | exit | why |', '|---|---|---|']
    md += [f"| {s['rev']} | {s['exit']} | {s['why']} |" for s in steps if isinstance(s, dict)]
    (base / 'result.md').write_text('\n'.join(md) + '\n')
    lines.append(f'cpuhp-kunit: bisect: {base / "result.md"}')
    return lines


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description='git bisect run with the verdict as the test.')
    ap.add_argument('--tree', required=True)
    ap.add_argument('--good', default='')
    ap.add_argument('--bad', default='HEAD')
    ap.add_argument('--series', default='')
    ap.add_argument('--smp', type=int, default=4)
    ap.add_argument('--filter', default='')
    ap.add_argument('--config', default='default')
    ap.add_argument('--timeout', type=int, default=600)
    ap.add_argument('--step', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--bisect-repo', default='', help=argparse.SUPPRESS)
    ap.add_argument('--log', default='', help=argparse.SUPPRESS)
    return ap


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if args.step:
        return step_main(args)
    if not args.good:
        print('cpuhp-kunit: error: make bisect needs GOOD=<rev> (and BAD=, default HEAD)',
              file=sys.stderr)
        return 2
    proc.raise_on_signals()
    try:
        return cache.locked(f'make bisect TREE={args.tree}', lambda: bisect(args))
    except (proc.Interrupted, KeyboardInterrupt) as e:
        print(f'cpuhp-kunit: bisect interrupted ({e or "SIGINT"}); the bisection was reset',
              file=sys.stderr)
        return 130


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
