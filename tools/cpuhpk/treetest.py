"""`make tree-test`: TREE= and `make bisect` on a user tree of known history.

The "user tree" is made from the cached Debian 6.12 tree (a --shared clone,
no network): its pristine baseline, then branches of ordinary commits with
fixed dates (the same commits every time, so a rerun rebuilds nothing):

  clean     6 commits; the 3rd is a mutant of mutants/ under a plain subject
  nobuild   7 commits; the 3rd does not compile, the 4th fixes it, the 5th is the mutant
  conflict  kernel/cpu.c changed where src/6.12's first patch changes it
  suites    src/6.12/series and kunit/ committed: a tree that has the suites

HEAD is the clean branch's 2nd commit with the mutant as an uncommitted edit.
Then: make bisect on both histories (the mutant's commit named, within
ceil(log2 N) + 1 builds; the commit that does not build skipped); TREE= with
the edit (red) and with LOCAL=0 (green), and make judge of that console;
TREE= on the conflict (one message naming the patch and the hunk) and the
suites branch; TREE= on a 6.1 tree (its series chosen and applied); and the
user tree byte for byte unchanged by all of it. Outputs in out/tree-test/.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

from cpuhpk import bisect, cache, execute, junit, outputs, say, tree, usertree, verdict
from cpuhpk.paths import REPO
from cpuhpk.runspec import RunSpec

MUTANT = REPO / 'mutants' / 'install-no-rollback.patch'
FILTER = 'cpuhp_install.*'
OUT = REPO / 'out' / 'tree-test'


@dataclasses.dataclass
class Check:
    name: str
    ok: bool
    detail: str
    seconds: float = 0.0


def ugit(repo: Path, *args: str, tick: int = 0) -> str:
    """git in the test's user tree, with fixed identities and dates."""
    date = f'2026-01-01T00:{tick // 60:02d}:{tick % 60:02d}+00:00'
    env = dict(os.environ, GIT_AUTHOR_NAME='A Developer', GIT_AUTHOR_EMAIL='dev@example.org',
               GIT_COMMITTER_NAME='A Developer', GIT_COMMITTER_EMAIL='dev@example.org',
               GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    res = subprocess.run(['git', '-C', str(repo), *args], capture_output=True, text=True,
                         env=env, check=False)
    if res.returncode != 0:
        raise say.PrepareError(f"tree-test: git {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout.strip()


def commit_edit(repo: Path, path: str, edit: Callable[[str], str], subject: str,
                tick: int) -> str:
    f = repo / path
    f.write_text(edit(f.read_text()))
    ugit(repo, 'add', '-f', path)
    ugit(repo, 'commit', '-q', '-m', subject, tick=tick)
    return ugit(repo, 'rev-parse', 'HEAD')


def commit_patch(repo: Path, patch: Path, subject: str, tick: int) -> str:
    ugit(repo, 'apply', '--index', str(patch))
    ugit(repo, 'commit', '-q', '-m', subject, tick=tick)
    return ugit(repo, 'rev-parse', 'HEAD')


def append(line: str) -> Callable[[str], str]:
    return lambda text: text + line + '\n'


def replace(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        if old not in text:
            raise say.PrepareError(f'tree-test: {old!r} not found')
        return text.replace(old, new, 1)
    return edit


HARMLESS = [
    ('Documentation/core-api/cpu_hotplug.rst', 'Documentation: cpu_hotplug: Add a note on '
     'rollback', '\nA failed callback is rolled back to the previous state.'),
    ('Documentation/admin-guide/README.rst', 'Documentation: admin-guide: Mention KUnit',
     '\nKUnit tests run with tools/testing/kunit/kunit.py.'),
    ('README', 'README: Point to the KUnit documentation',
     '\nKUnit: Documentation/dev-tools/kunit/.'),
    ('CREDITS', 'CREDITS: Add a test developer', '\nN: A Developer'),
    ('Documentation/process/changes.rst', 'Documentation: changes: Note QEMU for KUnit',
     '\nQEMU runs the KUnit tests of kunit.py --arch.'),
]
BREAK_BUILD = ('kernel/sys.c', 'int overflowuid = DEFAULT_OVERFLOWUID;',
               'int overflowuid = DEFAULT_OVERFLOWUID +;')
CONFLICT = ('kernel/cpu.c', 'ret = kstrtoint(buf, 10, &target);',
            'ret = kstrtoint(buf, 0, &target);')


def make_user_tree(cached: Path, dest: Path) -> Dict[str, str]:
    """The test's user tree and its branches; returns name -> commit."""
    if not (dest / '.git').is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        say.log(f'tree-test: a user tree at {dest} from {cached} (shared objects)')
        subprocess.run(['git', 'clone', '-q', '--shared', '--no-checkout', str(cached),
                        str(dest)], check=True)
    base = tree.git(cached, 'rev-parse', 'baseline^{commit}').stdout.strip()
    ugit(dest, 'checkout', '-q', '-f', '-B', 'clean', base)
    ugit(dest, 'clean', '-q', '-f', '-d')
    revs = {'baseline': base}
    # clean: harmless, harmless, MUTANT, harmless x3
    c = [commit_edit(dest, p, append(t), s, 1 + i) for i, (p, s, t) in enumerate(HARMLESS[:2])]
    c.append(commit_patch(dest, MUTANT, 'cpu/hotplug: Leave the rollback of a failed install '
                          'to the caller', 3))
    c += [commit_edit(dest, p, append(t), s, 4 + i) for i, (p, s, t) in enumerate(HARMLESS[2:])]
    revs.update(clean=c[-1], clean_bad=c[2], clean_good=c[1])
    # nobuild: harmless x2, does-not-build, fix, MUTANT, harmless x2
    ugit(dest, 'checkout', '-q', '-f', '-B', 'nobuild', base)
    n = [commit_edit(dest, p, append(t), s, 11 + i) for i, (p, s, t) in
         enumerate(HARMLESS[:2])]
    n.append(commit_edit(dest, BREAK_BUILD[0], replace(BREAK_BUILD[1], BREAK_BUILD[2]),
                         'kernel/sys: Derive the overflow UID', 13))
    n.append(commit_edit(dest, BREAK_BUILD[0], replace(BREAK_BUILD[2], BREAK_BUILD[1]),
                         'kernel/sys: Fix the build', 14))
    n.append(commit_patch(dest, MUTANT, 'cpu/hotplug: Simplify the error path of the state '
                          'setup', 15))
    n += [commit_edit(dest, p, append(t), s, 16 + i) for i, (p, s, t) in
          enumerate(HARMLESS[2:4])]
    revs.update(nobuild=n[-1], nobuild_bad=n[4], nobuild_broken=n[2])
    # conflict: kernel/cpu.c changed where 0001 changes it
    ugit(dest, 'checkout', '-q', '-f', '-B', 'conflict', base)
    revs['conflict'] = commit_edit(dest, CONFLICT[0], replace(CONFLICT[1], CONFLICT[2]),
                                   'cpu/hotplug: Accept any base in the target file', 21)
    # suites: the series and the kunit/ files committed
    ugit(dest, 'checkout', '-q', '-f', '-B', 'suites', base)
    harness = usertree.harness_patches(REPO, '6.12')
    for i, p in enumerate(tree.series_files(tree.series_dir(REPO, '6.12'))):
        if p not in harness:        # our series merged: the harness's own is not
            ugit(dest, 'am', '-q', '--committer-date-is-author-date', str(p), tick=30 + i)
    tree.install_kunit(dest, REPO / 'kunit')
    ugit(dest, 'add', '-f', *sorted(tree.read_manifest(REPO / 'kunit')))
    ugit(dest, 'commit', '-q', '-m', 'cpu/hotplug, timekeeping: Add the KUnit suites', tick=40)
    revs['suites'] = ugit(dest, 'rev-parse', 'HEAD')
    (dest / '.git' / tree.INSTALLED_STAMP).unlink(missing_ok=True)
    # HEAD: the commit before the mutant, the mutant as an uncommitted edit.
    ugit(dest, 'checkout', '-q', '-f', '-B', 'work', revs['clean_good'])
    ugit(dest, 'apply', str(MUTANT))
    return revs


def snapshot(path: Path) -> Dict[str, str]:
    """What must not change in the user's tree: git's view and every file's mtime."""
    def g(*args: str) -> str:
        return usertree.user_git(path, *args, check=False).stdout
    mtimes = []
    objects = path / '.git' / 'objects'
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            p = Path(root) / f
            st = p.lstat()
            # git freshens the mtime of objects it finds here instead of
            # writing them into our repository (usertree.py): names and sizes.
            when = '' if Path(root) == objects or objects in Path(root).parents \
                else f' {st.st_mtime_ns}'
            mtimes.append(f'{p.relative_to(path)}{when} {st.st_size}')
    return {'status': g('status', '--porcelain'), 'stash': g('stash', 'list'),
            'worktrees': g('worktree', 'list', '--porcelain'), 'refs': g('for-each-ref'),
            'head': g('symbolic-ref', '-q', 'HEAD') + g('rev-parse', 'HEAD'),
            'files': '\n'.join(mtimes)}


def differences(before: Dict[str, str], after: Dict[str, str]) -> List[str]:
    out = []
    for key in before:
        if before[key] != after[key]:
            a, b = before[key].splitlines(), after[key].splitlines()
            changed = sorted(set(a) ^ set(b))
            out.append(f'{key}: ' + '; '.join(changed[:4]))
    return out


def verdict_of(out: Path) -> Tuple[bool, List[str], Dict[str, str]]:
    v, ctx = verdict.read_json(out / 'verdict.json')
    return v.ok, sorted(f'{p.category} {p.name}' for p in v.problems), ctx


def run_tree(user: usertree.Spec, out: Path, smp: int, timeout: int) -> int:
    """make run of the tree @user with tree-test's FILTER, into @out."""
    return execute.execute(RunSpec(tree=user, smp=smp, timeout=timeout, filter=FILTER,
                                   coverage_report=False, out=out))


def checks(args: argparse.Namespace, record: Callable[[Check], None]) -> None:
    cached = tree.prepare('6.12', REPO).path
    user = cache.cache_root() / 'tree-test' / 'linux'
    revs = make_user_tree(cached, user)
    before = snapshot(user)
    smp, timeout = int(args.smp), int(args.timeout)

    def timed(name: str, job: Callable[[], Tuple[bool, str]]) -> None:
        started = time.monotonic()
        try:
            ok, detail = job()
        except (say.PrepareError, OSError, ValueError, KeyError) as e:
            ok, detail = False, f'{type(e).__name__}: {e}'
        record(Check(name, ok, detail, time.monotonic() - started))

    def local_red() -> Tuple[bool, str]:
        rc = run_tree(usertree.Spec(user), OUT / 'local', smp, timeout)
        ok, problems, ctx = verdict_of(OUT / 'local')
        killed = [p for p in problems if p.split()[0] in ('failed', 'crashed', 'kernel-log')]
        good = rc == 1 and not ok and bool(killed) and 'with the uncommitted' in ctx['local']
        return good, f'exit {rc}, {len(problems)} problem(s): {"; ".join(problems[:3])}; ' \
            f'{ctx.get("local")}'

    def local_off() -> Tuple[bool, str]:
        rc = run_tree(usertree.Spec(user, local=False), OUT / 'local0', smp, timeout)
        ok, problems, ctx = verdict_of(OUT / 'local0')
        return rc == 0 and ok, f'exit {rc}, {"; ".join(problems[:3]) or "green"}; ' \
            f'{ctx.get("local")}'

    def judge_same() -> Tuple[bool, str]:
        rc = outputs.judge_file(RunSpec(console=OUT / 'local' / 'console.log', kver='6.12',
                                        smp=smp, filter=FILTER, out=OUT / 'local-judge'))
        a, b = verdict_of(OUT / 'local'), verdict_of(OUT / 'local-judge')
        return rc == 1 and a[:2] == b[:2], f'make judge exit {rc}: {b[1][:3]}'

    def bisect_history(name: str, bad: str, commits: int, skipped: str) -> Tuple[bool, str]:
        rc = bisect.main(['--tree', str(user), '--good', revs['baseline'], '--bad', revs[name],
                          '--smp', str(smp), '--filter', FILTER, '--timeout', str(timeout)])
        result = json.loads((REPO / 'out' / f'bisect-{user.name}' / 'result.json').read_text())
        (OUT / f'bisect-{name}.json').write_text(json.dumps(result, indent=1) + '\n')
        limit = math.ceil(math.log2(commits)) + 1 + (1 if skipped else 0)
        found = result.get('first_bad') == revs[bad]
        red = [r for r in result.get('turned_red', []) if r.startswith('cpuhp_install')]
        skip_ok = not skipped or revs[skipped][:12] in result.get('skipped', [])
        good = rc == 0 and found and result.get('builds', 99) <= limit and bool(red) and skip_ok
        return good, (f"exit {rc}, first bad {str(result.get('first_bad'))[:12]} (want "
                      f"{revs[bad][:12]}), {result.get('builds')} build(s) (at most {limit}), "
                      f"skipped {result.get('skipped')}, turned red: {red[:2]}")

    def conflict() -> Tuple[bool, str]:
        rc = run_tree(usertree.Spec(user, revs['conflict']), OUT / 'conflict', smp, timeout)
        _, problems, _ = verdict_of(OUT / 'conflict')
        v, _ = verdict.read_json(OUT / 'conflict' / 'verdict.json')
        msg = v.problems[0].message if v.problems else ''
        want = ('0001-cpu-hotplug-Factor', 'kernel/cpu.c, hunk @@', 'SERIES=')
        return rc == 1 and problems == ['prepare '] and all(w in msg for w in want), msg

    def suites() -> Tuple[bool, str]:
        r = usertree.resolve(usertree.Spec(user, revs['suites'], False), REPO)
        t = usertree.prepare(r, REPO)
        head = tree.git(t.path, 'log', '-2', '--format=%H %s').stdout.splitlines()
        harness = usertree.harness_patches(REPO, '6.12')
        subject = next(ln for ln in harness[0].read_text().splitlines()
                       if ln.startswith('Subject: '))
        ok = len(head) == 2 and head[1].split()[0] == revs['suites'] and \
            head[0].split(' ', 1)[1][:40] in subject
        return ok, f'{t.path}: {" | ".join(head)}'

    def tree_61() -> Tuple[bool, str]:
        cached61 = tree.prepare('6.1', REPO).path
        user61 = cache.cache_root() / 'tree-test' / 'linux-6.1'
        if not (user61 / '.git').is_dir():
            subprocess.run(['git', 'clone', '-q', '--shared', '--no-checkout', str(cached61),
                            str(user61)], check=True)
        base = tree.git(cached61, 'rev-parse', 'baseline^{commit}').stdout.strip()
        r = usertree.resolve(usertree.Spec(user61, base, False), REPO)
        t = usertree.prepare(r, REPO)
        n = len(tree.series_files(tree.series_dir(REPO, '6.1')))
        below = tree.git(t.path, 'rev-parse', f'HEAD~{n}').stdout.strip()
        ok = r.kver == '6.1' and below == base and t.kver == '6.1'
        return ok, f'linux {r.version}: series of src/{r.kver}, {n} patches on {base[:12]}'

    timed('bisect: the commit that broke a promise', lambda: bisect_history(
        'clean', 'clean_bad', 6, ''))
    timed('bisect: a commit that does not build is skipped', lambda: bisect_history(
        'nobuild', 'nobuild_bad', 7, 'nobuild_broken'))
    timed('TREE=: an uncommitted break is red', local_red)
    timed('TREE=: LOCAL=0 leaves it out, green', local_off)
    timed('make judge of a TREE= console: the same verdict', judge_same)
    timed('TREE=: a conflicting tree, one message naming patch and hunk', conflict)
    timed('TREE=: a tree that has the suites is used as it is', suites)
    timed('TREE=: a 6.1 tree gets the 6.1 series', tree_61)
    after = snapshot(user)
    diff = differences(before, after)
    record(Check('the user tree is unchanged', not diff, '; '.join(diff) or
                 'git status, stash list, worktree list, refs, HEAD and every file\'s mtime '
                 'as before'))


def write_junit(results: Sequence[Check], path: Path) -> None:
    checks = [junit.Check(c.name, 'passed', text=c.detail, classname='tree-test',
                          seconds=c.seconds) if c.ok else
              junit.Check(c.name, 'failed', c.detail, classname='tree-test', seconds=c.seconds)
              for c in results]
    junit.save(path, junit.document([junit.checks_suite('tree-test', checks,
                                                        counted=('tests', 'failures'))]))


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--smp', type=int, default=4)
    ap.add_argument('--timeout', type=int, default=600)
    args = ap.parse_args(argv)
    results: List[Check] = []

    def record(c: Check) -> None:
        results.append(c)
        print(f"cpuhp-kunit: tree-test: {'ok  ' if c.ok else 'FAIL'} {c.name} "
              f'({c.seconds:.0f} s): {c.detail}', flush=True)

    def job() -> int:
        OUT.mkdir(parents=True, exist_ok=True)
        try:
            checks(args, record)
        except say.PrepareError as e:
            record(Check('prepare', False, str(e)))
        write_junit(results, OUT / 'junit.xml')
        lines = [f"{'ok  ' if c.ok else 'FAIL'} {c.name} ({c.seconds:.0f} s): {c.detail}"
                 for c in results]
        ok = all(c.ok for c in results) and bool(results)
        lines.append(f"cpuhp-kunit tree-test: {'PASS' if ok else 'FAIL'}")
        (OUT / 'summary.txt').write_text('\n'.join(lines) + '\n')
        print(lines[-1])
        return 0 if ok else 1
    return cache.locked('make tree-test', job)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
