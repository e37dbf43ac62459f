"""Tests for cpuhpk.usertree and cpuhpk.bisect on small git trees standing in for a kernel."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import unittest
from pathlib import Path
from typing import Dict, List, Tuple
from unittest import mock

from cpuhpk import bisect, judging, kunitspec, packages, say, tree, usertree, verdict

CPU_C = ''.join(f'int line{i};\n' for i in range(40))


def commit_all(path: Path, msg: str) -> str:
    tree.git(path, 'add', '-A')
    tree.git(path, 'commit', '-q', '-m', msg)
    return tree.git(path, 'rev-parse', 'HEAD').stdout.strip()


def state(path: Path) -> Dict[str, str]:
    """git's view of a tree and the mtime of every file in it, .git included.

    Objects: name and size only (git freshens the mtime of an object of the
    user's store that our repository would otherwise write: usertree.py).
    """
    objects = path / '.git' / 'objects'
    files = sorted(f'{p} {p.lstat().st_size}' if objects in p.parents else
                   f'{p} {p.lstat().st_mtime_ns}' for p in path.rglob('*'))
    def g(*a: str) -> str:
        return usertree.user_git(path, *a, check=False).stdout
    return {'status': g('status', '--porcelain'), 'stash': g('stash', 'list'),
            'worktrees': g('worktree', 'list'), 'head': g('rev-parse', 'HEAD'),
            'files': '\n'.join(files)}


class UserTreeTest(unittest.TestCase):
    """A 'kernel' of a Makefile and kernel/cpu.c; a repo with src/6.1, src/6.12 and kunit/."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        root = Path(self._tmp.name)
        self.user, self.repo = root / 'linux', root / 'repo'
        env = {'CPUHP_KUNIT_CACHE': str(root / 'cache'), 'CPUHP_KUNIT_DIRTY': ''}
        for p in (mock.patch.dict(os.environ, env), mock.patch('sys.stdout'),
                  mock.patch.object(packages, 'ensure_packages')):
            p.start()  # type: ignore[attr-defined]
            self.addCleanup(p.stop)  # type: ignore[attr-defined]
        self.user.mkdir()
        (self.user / 'kernel').mkdir()
        (self.user / 'Makefile').write_text('# SPDX\nVERSION = 6\nPATCHLEVEL = 13\n'
                                            'SUBLEVEL = 0\nEXTRAVERSION = -rc1\n')
        (self.user / 'kernel' / 'cpu.c').write_text(CPU_C)
        tree.git(self.user, 'init', '-q')
        self.base = commit_all(self.user, 'base')
        # A series patch made as src/ patches are: commit, format-patch, reset.
        (self.user / 'kernel' / 'cpu.c').write_text(CPU_C.replace('line20;', 'line20; /* T */'))
        commit_all(self.user, 'cpu: add a test hook')
        patch = tree.git(self.user, 'format-patch', '-1', '--stdout').stdout
        tree.git(self.user, 'reset', '-q', '--hard', self.base)
        for kver in ('6.1', '6.12'):
            src = self.repo / 'src' / kver
            src.mkdir(parents=True)
            (src / '0001-cpu-add-a-test-hook.patch').write_text(patch)
            (src / 'series').write_text('0001-cpu-add-a-test-hook.patch\n')
        (self.repo / 'kunit').mkdir()
        (self.repo / 'kunit' / 'x_kunit.c').write_text('/* suite */\n')
        (self.repo / 'kunit' / 'MANIFEST').write_text('x_kunit.c kernel/tests/x_kunit.c\n')

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def resolve(self, **kw: object) -> usertree.Resolved:
        return usertree.resolve(usertree.Spec(self.user, **kw), self.repo)  # type: ignore[arg-type]

    def test_version_and_series_choice(self) -> None:
        self.assertEqual(usertree.makefile_version('VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 92\n'),
                         '6.1.92')
        self.assertEqual(usertree.makefile_version('VERSION = 7\nPATCHLEVEL = 0\nSUBLEVEL =\n'),
                         '7.0.0')
        with self.assertRaises(ValueError):
            usertree.makefile_version('all:\n')
        carried = usertree.carried_series(self.repo)
        self.assertEqual(carried, ['6.1', '6.12'])
        self.assertEqual(usertree.choose_series('6.13.0', carried), '6.12')
        self.assertEqual(usertree.choose_series('6.12.118', carried), '6.12')
        self.assertEqual(usertree.choose_series('6.11.0', carried), '6.1')
        self.assertEqual(usertree.choose_series('6.1.0', carried), '6.1')
        with self.assertRaisesRegex(say.PrepareError, 'older than every kernel series'):
            usertree.choose_series('5.15.0', carried)

    def test_resolve_reads_rev_version_and_local_changes(self) -> None:
        r = self.resolve()
        self.assertEqual((r.sha, r.version, r.kver, r.subject), (self.base, '6.13.0', '6.12',
                                                                 'base'))
        self.assertEqual(r.local_note, 'no uncommitted changes')
        (self.user / 'kernel' / 'cpu.c').write_text(CPU_C + 'int wip;\n')
        (self.user / 'untracked.c').write_text('not tested\n')
        r = self.resolve()
        self.assertEqual(r.local_files, ('kernel/cpu.c',))
        self.assertIn(b'+int wip;', r.local_diff)
        self.assertNotIn(b'untracked', r.local_diff)
        self.assertIn('with the uncommitted changes of 1 file(s): kernel/cpu.c', r.describe())
        self.assertEqual(self.resolve(local=False).local_diff, b'')
        self.assertIn('left out (LOCAL=0)', self.resolve(local=False).local_note)

    def test_rev_other_than_head_leaves_local_changes_out(self) -> None:
        (self.user / 'README').write_text('x\n')
        commit_all(self.user, 'readme')
        (self.user / 'kernel' / 'cpu.c').write_text(CPU_C + 'int wip;\n')
        r = self.resolve(rev='HEAD~1')
        self.assertEqual((r.sha, r.local_diff), (self.base, b''))
        self.assertIn('REV=HEAD~1 is not HEAD', r.local_note)

    def test_bad_inputs_say_what_is_wrong(self) -> None:
        with self.assertRaisesRegex(say.PrepareError, 'not a commit'):
            self.resolve(rev='nosuchrev')
        with self.assertRaisesRegex(say.PrepareError, 'no such directory'):
            usertree.resolve(usertree.Spec(self.user / 'nope'), self.repo)
        plain = Path(self._tmp.name) / 'plain'
        plain.mkdir()
        with self.assertRaisesRegex(say.PrepareError, 'not a git work tree'):
            usertree.resolve(usertree.Spec(plain), self.repo)
        (self.user / 'Makefile').write_text('all:\n')
        commit_all(self.user, 'not a kernel')
        with self.assertRaisesRegex(say.PrepareError, 'not a kernel tree'):
            self.resolve()

    def test_prepare_tests_rev_local_changes_and_series_without_writing_the_tree(self) -> None:
        (self.user / 'kernel' / 'cpu.c').write_text(CPU_C.replace('line3;', 'line3; /* wip */'))
        subprocess.run(['git', '-C', str(self.user), 'stash', 'list'], check=True,
                       capture_output=True)
        before = state(self.user)
        t = usertree.prepare(self.resolve(), self.repo)
        cpu = (t.path / 'kernel' / 'cpu.c').read_text()
        self.assertIn('line3; /* wip */', cpu)          # the local change
        self.assertIn('line20; /* T */', cpu)           # the series
        self.assertEqual((t.path / 'kernel' / 'tests' / 'x_kunit.c').read_text(),
                         '/* suite */\n')              # kunit/
        self.assertEqual((t.kver, t.version, t.build_key[:11]), ('6.12', '6.13.0',
                                                                 'tree-linux-'))
        log = tree.git(t.path, 'log', '--format=%s').stdout.splitlines()
        self.assertEqual(log[:2], ['cpu: add a test hook',
                                   f'cpuhp-kunit: uncommitted changes of {self.user}'])
        self.assertEqual(state(self.user), before)
        # The same input again: nothing rewritten (make stays incremental).
        mtime = (t.path / 'kernel' / 'cpu.c').stat().st_mtime_ns
        usertree.prepare(self.resolve(), self.repo)
        self.assertEqual((t.path / 'kernel' / 'cpu.c').stat().st_mtime_ns, mtime)
        # LOCAL=0: the change is gone from what is tested, the tree still untouched.
        usertree.prepare(self.resolve(local=False), self.repo)
        self.assertNotIn('wip', (t.path / 'kernel' / 'cpu.c').read_text())
        self.assertEqual(state(self.user), before)

    def test_a_conflict_names_patch_file_and_hunk(self) -> None:
        (self.user / 'kernel' / 'cpu.c').write_text(CPU_C.replace('line20;', 'line20_renamed;'))
        commit_all(self.user, 'rename line20')
        with self.assertRaises(usertree.SeriesConflict) as cm:
            usertree.prepare(self.resolve(), self.repo)
        msg = str(cm.exception)
        for want in ('patch 0001-cpu-add-a-test-hook.patch (src/6.12/series)',
                     'kernel/cpu.c, hunk @@ -18,7 +18,7 @@', 'three-way merge fails too',
                     'SERIES=<that directory>'):
            self.assertIn(want, msg)
        clone = usertree.clone_path(self.resolve())
        self.assertFalse((clone / '.git' / 'rebase-apply').exists())

    def test_a_moved_context_applies_three_way(self) -> None:
        (self.user / 'kernel' / 'cpu.c').write_text(CPU_C.replace('line17;', 'line17_x;'))
        commit_all(self.user, 'touch the context')
        t = usertree.prepare(self.resolve(), self.repo)
        cpu = (t.path / 'kernel' / 'cpu.c').read_text()
        self.assertIn('line17_x;', cpu)
        self.assertIn('line20; /* T */', cpu)

    def test_series_dir_of_ones_own(self) -> None:
        own = Path(self._tmp.name) / 'own'
        own.mkdir()
        (own / '0001-x.patch').write_text((self.repo / 'src' / '6.12' /
                                           '0001-cpu-add-a-test-hook.patch').read_text())
        t = usertree.prepare(self.resolve(series=own), self.repo)
        self.assertIn('/* T */', (t.path / 'kernel' / 'cpu.c').read_text())
        empty = Path(self._tmp.name) / 'empty'
        empty.mkdir()
        with self.assertRaisesRegex(say.PrepareError, 'no series file and no'):
            usertree.prepare(self.resolve(series=empty), self.repo)

    def test_a_tree_with_the_suites_is_recognised(self) -> None:
        clone = usertree.ensure_clone(self.resolve())
        self.assertFalse(usertree.has_suites(clone, self.base, self.repo))
        (self.user / 'kernel' / 'tests').mkdir()
        (self.user / 'kernel' / 'tests' / 'x_kunit.c').write_text('/* merged */\n')
        sha = commit_all(self.user, 'add the suites')
        self.assertTrue(usertree.has_suites(clone, sha, self.repo))


class FixedInThisTreeTest(unittest.TestCase):
    def test_known_failure_that_did_not_occur_in_a_user_tree(self) -> None:
        known = [kunitspec.KnownFailure(case='s.c', when={}, why='a finding', failed='*')]
        cases: List[Tuple[Dict[str, str], str]] = [
            ({}, 'fixed, or the test changed'), ({'tree': '/src/linux'}, 'fixed in this tree')]
        for context, word in cases:
            v = verdict.Verdict()
            v.statuses['s.c'] = 'pass'
            exp = kunitspec.Expectations(cases={'s': ['c']}, skips=[], known=known,
                                         context=context)
            judging.apply_known(v, exp)
            self.assertEqual(len(v.not_seen), 1)
            self.assertIn(word, v.not_seen[0].message)
            self.assertTrue(v.ok)


class BisectTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.root = Path(self._tmp.name)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def write_verdict(self, name: str, problems: list) -> Path:  # type: ignore[type-arg]
        out = self.root / name
        out.mkdir()
        v = verdict.Verdict()
        for category, case in problems:
            v.add(category, case, f'{category} in {case}')
        verdict.write_json(out / 'verdict.json', v, {})
        return out

    def test_step_exit_codes(self) -> None:
        self.assertEqual(bisect.step_verdict(self.write_verdict('g', []))[0], bisect.GOOD)
        self.assertEqual(bisect.step_verdict(self.write_verdict('b', [('failed', 's.c')])),
                         (bisect.BAD, 'red: s.c'))
        code, why = bisect.step_verdict(self.write_verdict('n', [('build', '')]))
        self.assertEqual(code, bisect.SKIP)
        self.assertIn('skipped', why)
        self.assertEqual(bisect.step_verdict(self.write_verdict('p', [('prepare', '')]))[0],
                         bisect.ABORT)
        self.assertEqual(bisect.step_verdict(self.root / 'none')[0], bisect.ABORT)

    def test_turned_red_lists_what_the_parent_did_not_have(self) -> None:
        bad = self.write_verdict('bad', [('failed', 's.a'), ('failed', 's.b')])
        good = self.write_verdict('good', [('failed', 's.a')])
        self.assertEqual(bisect.turned_red(bad, good), ['s.b [failed] failed in s.b'])

    def test_steps_log_and_first_bad(self) -> None:
        log = self.root / 'steps.log'
        log.write_text('abc123 exit 125 12s skipped: x\nabc124 exit 1 30s red: s.c\n')
        self.assertEqual(bisect.read_steps(log), [('abc123', 125, 'skipped: x'),
                                                  ('abc124', 1, 'red: s.c')])
        sha = 'f' * 40
        self.assertEqual(bisect.first_bad(f'git bisect bad {sha}\n# first bad commit: [{sha}] '
                                          'x: y\n'), sha)
        self.assertIsNone(bisect.first_bad('git bisect start\n'))

    def test_bisection_is_reset_on_every_way_out(self) -> None:
        repo = self.root / 'r'
        repo.mkdir()
        tree.git(repo, 'init', '-q')
        shas = []
        for i in range(4):
            (repo / 'f').write_text(f'{i}\n')
            shas.append(commit_all(repo, f'c{i}'))
        bare = self.root / 'b.git'
        tree.git(bare.parent, 'init', '-q', '--bare', str(bare))
        (bare / 'objects' / 'info' / 'alternates').write_text(f'{repo}/.git/objects\n')
        with self.assertRaises(KeyboardInterrupt):
            with bisect.bisection(bare, shas[0], shas[3]):
                self.assertTrue((bare / 'BISECT_START').is_file())
                raise KeyboardInterrupt
        self.assertFalse((bare / 'BISECT_START').exists())
        self.assertFalse((repo / '.git' / 'BISECT_START').exists())
        result = {'tree': str(repo), 'good': shas[0], 'bad': shas[3], 'filter': '',
                  'config': 'default', 'first_bad': shas[2], 'subject': 'c2', 'builds': 2,
                  'commits': 3, 'skipped': [], 'steps': [{'rev': shas[1][:12], 'exit': 0,
                                                          'why': 'green'}]}
        lines = bisect.write_result(self.root, result, ['s.c [failed] x'])
        self.assertIn(f'cpuhp-kunit: first bad commit: {shas[2]} c2', lines)
        self.assertIn('cpuhp-kunit: turned red: s.c [failed] x', lines)
        self.assertEqual(json.loads((self.root / 'result.json').read_text())['first_bad'],
                         shas[2])


if __name__ == '__main__':
    unittest.main()
