"""Tests for cpuhpk.tree on a small git tree standing in for the kernel."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from cpuhpk import cache, packages, say, tree
from cpuhpk.paths import REPO


def sh(cwd: Path, *args: str) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


class VersionTest(unittest.TestCase):
    def test_upstream_version(self) -> None:
        self.assertEqual(packages.upstream_version('6.12.118-1~deb12u1'), '6.12.118')
        self.assertEqual(packages.upstream_version('6.1.192-1'), '6.1.192')
        with self.assertRaises(say.PrepareError):
            packages.upstream_version('garbage')


class SeriesTest(unittest.TestCase):
    """apply_series/install_kunit on a two-file 'kernel' with a baseline tag."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        root = Path(self._tmp.name)
        self.tree = root / 'linux'
        self.repo = root / 'repo'
        (self.repo / 'src').mkdir(parents=True)
        (self.repo / 'kunit').mkdir()
        self.tree.mkdir()
        (self.tree / 'a.c').write_text('int a;\n')
        tree.git(self.tree, 'init', '-q')
        tree.git(self.tree, 'add', '-A')
        tree.git(self.tree, 'commit', '-q', '-m', 'baseline')
        tree.git(self.tree, 'tag', 'baseline')
        # A patch made the way src/ patches are made: commit, format-patch.
        (self.tree / 'a.c').write_text('int a;\nint b;\n')
        tree.git(self.tree, 'commit', '-q', '-a', '-m', 'a: add b')
        patch = tree.git(self.tree, 'format-patch', '-1', '--stdout').stdout
        tree.git(self.tree, 'reset', '-q', '--hard', 'baseline')
        (self.repo / 'src' / '0001-a-add-b.patch').write_text(patch)
        (self.repo / 'src' / 'series').write_text('0001-a-add-b.patch\n')

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def test_applies_once(self) -> None:
        tree.apply_series(self.tree, '9.9', self.repo / 'src')
        self.assertEqual((self.tree / 'a.c').read_text(), 'int a;\nint b;\n')
        head = tree.git(self.tree, 'rev-parse', 'HEAD').stdout
        tree.apply_series(self.tree, '9.9', self.repo / 'src')
        self.assertEqual(tree.git(self.tree, 'rev-parse', 'HEAD').stdout, head)

    def test_changed_series_is_reapplied_from_baseline(self) -> None:
        tree.apply_series(self.tree, '9.9', self.repo / 'src')
        (self.repo / 'src' / 'series').write_text('')
        tree.apply_series(self.tree, '9.9', self.repo / 'src')
        self.assertEqual((self.tree / 'a.c').read_text(), 'int a;\n')

    def test_patch_that_does_not_apply(self) -> None:
        (self.tree / 'a.c').write_text('something else\n')
        tree.git(self.tree, 'commit', '-q', '-a', '-m', 'x')
        tree.git(self.tree, 'tag', '-f', 'baseline')
        with self.assertRaises(say.PrepareError) as cm:
            tree.apply_series(self.tree, '9.9', self.repo / 'src')
        msg = str(cm.exception)
        self.assertIn('0001-a-add-b.patch', msg)
        self.assertIn('linux 9.9', msg)
        self.assertIn('patch failed', msg)
        self.assertIsNone(tree.read_stamp(self.tree, tree.SERIES_STAMP))

    def test_hand_made_commit_is_refused(self) -> None:
        tree.apply_series(self.tree, '9.9', self.repo / 'src')
        (self.tree / 'a.c').write_text('int a;\nint b;\nint broken;\n')
        tree.git(self.tree, 'commit', '-q', '-a', '-m', 'a: a break never exported')
        with mock.patch.dict(os.environ, {'CPUHP_KUNIT_DIRTY': ''}):
            with self.assertRaises(say.PrepareError) as cm:
                tree.check_clean(self.tree)
        msg = str(cm.exception)
        self.assertIn('1 commit(s) not in src/', msg)
        self.assertIn('a: a break never exported', msg)
        self.assertIn('tools/export-series.sh', msg)
        self.assertIn('reset --hard', msg)
        with mock.patch.dict(os.environ, {'CPUHP_KUNIT_DIRTY': '1'}), mock.patch('sys.stdout'):
            tree.check_clean(self.tree)
        # FIXES=1's clone: export-series.sh does not export fixes
        fixes = self.tree.with_name(self.tree.name + '-fixes')
        self.tree.rename(fixes)
        with mock.patch.dict(os.environ, {'CPUHP_KUNIT_DIRTY': ''}):
            with self.assertRaises(say.PrepareError) as cm:
                tree.check_clean(fixes)
        self.assertIn('src/<KVER>/fixes/', str(cm.exception))
        self.assertNotIn('export-series.sh', str(cm.exception))
        fixes.rename(self.tree)

    def test_half_applied_series_is_reapplied(self) -> None:
        # An old stamp without the HEAD it produced (or a run killed half-way)
        # does not count as applied.
        tree.apply_series(self.tree, '9.9', self.repo / 'src')
        fp, head = tree.series_stamp(self.tree)
        tree.stamp_path(self.tree, tree.SERIES_STAMP).write_text(fp)
        tree.git(self.tree, 'reset', '-q', '--hard', 'baseline')
        with mock.patch('sys.stdout'):
            tree.apply_series(self.tree, '9.9', self.repo / 'src')
        self.assertEqual((self.tree / 'a.c').read_text(), 'int a;\nint b;\n')
        tree.check_clean(self.tree)

    def test_the_stamps_are_plain_text_and_a_corrupt_one_is_not_applied(self) -> None:
        # A cache stamped before keeps working: '<fingerprint> <HEAD>'.
        tree.apply_series(self.tree, '9.9', self.repo / 'src')
        head = tree.git(self.tree, 'rev-parse', 'HEAD').stdout.strip()
        series = tree.stamp_path(self.tree, tree.SERIES_STAMP)
        fp = series.read_text().split(' ')[0]
        self.assertEqual(series.read_text(), f'{fp} {head}')
        self.assertEqual(tree.stamp_path(self.tree, tree.HEADS_STAMP).read_text(),
                         f'{fp} {head}\n')
        self.assertEqual([n for n in os.listdir(self.tree / '.git') if n.endswith('.tmp')], [])
        series.write_bytes(b'\xff' + fp.encode() + b' ' + head.encode())
        self.assertEqual(tree.series_stamp(self.tree), ('', ''))
        tree.git(self.tree, 'reset', '-q', '--hard', 'baseline')
        with mock.patch('sys.stdout'):
            tree.apply_series(self.tree, '9.9', self.repo / 'src')
        self.assertEqual((self.tree / 'a.c').read_text(), 'int a;\nint b;\n')
        self.assertEqual(tree.series_stamp(self.tree), (fp, head))

    def test_fixes_only_when_asked(self) -> None:
        # A fix on top of the series, made the same way.
        tree.apply_series(self.tree, '9.9', self.repo / 'src')
        (self.tree / 'a.c').write_text('int a;\nint b;\nint fixed;\n')
        tree.git(self.tree, 'commit', '-q', '-a', '-m', 'a: fix')
        fix = tree.git(self.tree, 'format-patch', '-1', '--stdout').stdout
        tree.git(self.tree, 'reset', '-q', '--hard', 'HEAD~1')
        (self.repo / 'src' / 'fixes').mkdir()
        (self.repo / 'src' / 'fixes' / '0001-a-fix.patch').write_text(fix)
        (self.repo / 'src' / 'fixes' / 'series').write_text('0001-a-fix.patch\n')
        with mock.patch('sys.stdout'):
            tree.apply_series(self.tree, '9.9', self.repo / 'src')
            self.assertEqual((self.tree / 'a.c').read_text(), 'int a;\nint b;\n')
            tree.apply_series(self.tree, '9.9', self.repo / 'src', fixes=True)
            self.assertEqual((self.tree / 'a.c').read_text(), 'int a;\nint b;\nint fixed;\n')
            tree.check_clean(self.tree)
            tree.apply_series(self.tree, '9.9', self.repo / 'src')
            self.assertEqual((self.tree / 'a.c').read_text(), 'int a;\nint b;\n')
            # Switching back and forth goes to the commits made before.
            head = tree.git(self.tree, 'rev-parse', 'HEAD').stdout
            tree.apply_series(self.tree, '9.9', self.repo / 'src', fixes=True)
            tree.apply_series(self.tree, '9.9', self.repo / 'src')
            self.assertEqual(tree.git(self.tree, 'rev-parse', 'HEAD').stdout, head)

    def test_fixes_have_a_tree_of_their_own(self) -> None:
        """FIXES=1 applies to a clone: the tree as shipped is never rewritten by it."""
        tree.apply_series(self.tree, '9.9', self.repo / 'src')
        head = tree.git(self.tree, 'rev-parse', 'HEAD').stdout
        mtime = (self.tree / 'a.c').stat().st_mtime_ns
        with mock.patch('sys.stdout'):
            fixed = tree.fixes_clone(self.tree, '9.9-1')
        self.assertEqual(fixed.name, 'linux-fixes')
        self.assertEqual(tree.read_stamp(fixed, tree.PACKAGE_STAMP), '9.9-1')
        self.assertEqual(tree.git(fixed, 'rev-parse', 'HEAD').stdout,
                         tree.git(self.tree, 'rev-parse', 'baseline').stdout)
        tree.apply_series(fixed, '9.9', self.repo / 'src')
        self.assertEqual((fixed / 'a.c').read_text(), 'int a;\nint b;\n')
        self.assertEqual(tree.git(self.tree, 'rev-parse', 'HEAD').stdout, head)
        self.assertEqual((self.tree / 'a.c').stat().st_mtime_ns, mtime)
        # Kept while the package is the same; made again for another.
        (fixed / 'mark').write_text('')
        self.assertEqual(tree.fixes_clone(self.tree, '9.9-1'), fixed)
        self.assertTrue((fixed / 'mark').exists())
        with mock.patch('sys.stdout'):
            tree.fixes_clone(self.tree, '9.9-2')
        self.assertFalse((fixed / 'mark').exists())

    def test_series_names_a_missing_patch(self) -> None:
        (self.repo / 'src' / 'series').write_text('0002-missing.patch\n')
        with self.assertRaisesRegex(say.PrepareError, '0002-missing.patch'):
            tree.apply_series(self.tree, '9.9', self.repo / 'src')

    def test_dirty_tree_is_refused(self) -> None:
        (self.tree / 'a.c').write_text('broken\n')
        os.environ.pop('CPUHP_KUNIT_DIRTY', None)
        with self.assertRaisesRegex(say.PrepareError, 'local changes in a.c'):
            tree.check_clean(self.tree)

    def test_kunit_files_copied_only_when_changed(self) -> None:
        (self.repo / 'kunit' / 't_kunit.c').write_text('/* v1 */\n')
        (self.repo / 'kunit' / 'MANIFEST').write_text('t_kunit.c  sub/tests/t_kunit.c\n')
        tree.install_kunit(self.tree, self.repo / 'kunit')
        dest = self.tree / 'sub' / 'tests' / 't_kunit.c'
        self.assertEqual(dest.read_text(), '/* v1 */\n')
        os.utime(dest, (1, 1))
        tree.install_kunit(self.tree, self.repo / 'kunit')
        self.assertEqual(dest.stat().st_mtime, 1)
        (self.repo / 'kunit' / 't_kunit.c').write_text('/* v2 */\n')
        tree.install_kunit(self.tree, self.repo / 'kunit')
        self.assertEqual(dest.read_text(), '/* v2 */\n')
        # Dropped from the manifest: removed from the tree.
        (self.repo / 'kunit' / 'MANIFEST').write_text('')
        tree.install_kunit(self.tree, self.repo / 'kunit')
        self.assertFalse(dest.exists())

    def test_one_file_in_two_places(self) -> None:
        (self.repo / 'kunit' / 'compat.h').write_text('/* c */\n')
        (self.repo / 'kunit' / 'MANIFEST').write_text('compat.h a/compat.h\ncompat.h b/compat.h\n')
        tree.install_kunit(self.tree, self.repo / 'kunit')
        self.assertEqual((self.tree / 'a' / 'compat.h').read_text(), '/* c */\n')
        self.assertEqual((self.tree / 'b' / 'compat.h').read_text(), '/* c */\n')
        (self.repo / 'kunit' / 'MANIFEST').write_text('compat.h a/compat.h\n')
        tree.install_kunit(self.tree, self.repo / 'kunit')
        self.assertFalse((self.tree / 'b' / 'compat.h').exists())

    def test_parts_installed_without_harness_blocks(self) -> None:
        # A posted suite's later part is the harness's too, also in a source
        # with no harness block: installed with the directives resolved.
        (self.repo / 'kunit' / 't_kunit.c').write_text(
            'int a;\n#ifdef CPUHP_KUNIT_PART_more\nint b;\n#endif\n')
        (self.repo / 'kunit' / 'MANIFEST').write_text('t_kunit.c k/t_kunit.c\n')
        tree.install_kunit(self.tree, self.repo / 'kunit')
        self.assertEqual((self.tree / 'k' / 't_kunit.c').read_text(), 'int a;\nint b;\n')

    def test_manifest_errors(self) -> None:
        for text, what in (('x.c\n', 'expected'), ('x.c /abs/x.c\n', 'expected'),
                           ('missing.c a/missing.c\n', 'does not exist'),
                           ('x.c a/x.c\nx.c a/x.c\n', 'written twice')):
            with self.subTest(text=text):
                (self.repo / 'kunit' / 'x.c').write_text('')
                (self.repo / 'kunit' / 'MANIFEST').write_text(text)
                with self.assertRaisesRegex(say.PrepareError, what):
                    tree.read_manifest(self.repo / 'kunit')


class ExtractTest(unittest.TestCase):
    def test_tar_failure_is_one_line(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            bad = Path(tmp) / 'linux-source-9.9.tar.xz'
            bad.write_bytes(b'not a tarball')
            with mock.patch('sys.stdout'), self.assertRaises(say.PrepareError) as cm:
                tree.extract('9.9', '9.9.1-1', Path(tmp) / 'linux-9.9.1', bad)
            msg = str(cm.exception)
            self.assertNotIn('\n', msg)
            self.assertIn('extracting', msg)
            self.assertFalse((Path(tmp) / 'linux-9.9.1.partial').exists())


class AptTest(unittest.TestCase):
    def test_unknown_series_not_root(self) -> None:
        if packages.known_to_apt('linux-source-6.12') is False and not packages.similar_sources():
            self.skipTest('apt lists are empty here (apt-get update never ran)')
        with mock.patch.object(os, 'geteuid', return_value=1000):
            with self.assertRaises(say.PrepareError) as cm:
                packages.ensure_packages(['linux-source-6.13'])
        msg = str(cm.exception)
        self.assertIn('linux-source-6.13 is unknown to apt', msg)
        self.assertIn('linux-source-6.12', msg)
        self.assertNotIn('apt-get install', msg)


LOCKER = """
import sys, time
sys.path.insert(0, {tools!r})
from cpuhpk import cache
with cache.cache_lock('holder'):
    print('locked', flush=True)
    sys.stdin.readline()
"""


class LockTest(unittest.TestCase):
    """Two runs never share the cache at once."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        self.env = dict(os.environ, CPUHP_KUNIT_CACHE=self._tmp.name)
        self.env.pop(cache.LOCK_FD_ENV, None)
        tools = str(Path(tree.__file__).resolve().parents[1])
        self.holder = subprocess.Popen([sys.executable, '-c', LOCKER.format(tools=tools)],
                                       env=self.env, stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True)
        assert self.holder.stdout is not None
        self.assertEqual(self.holder.stdout.readline().strip(), 'locked')
        self.addCleanup(self.release)

    def release(self) -> None:
        if self.holder.poll() is None:
            assert self.holder.stdin is not None
            self.holder.stdin.write('\n')
            self.holder.stdin.flush()
            self.holder.wait(30)
        for f in (self.holder.stdin, self.holder.stdout):
            if f is not None:
                f.close()

    def test_nowait_fails_at_once_naming_the_holder(self) -> None:
        env = dict(self.env, CPUHP_KUNIT_NOWAIT='1')
        with mock.patch.dict(os.environ, env, clear=True):
            with self.assertRaises(cache.LockBusy) as cm:
                with cache.cache_lock('second'):
                    pass
        self.assertIn('holder', str(cm.exception))

    def test_second_run_waits_saying_so(self) -> None:
        tools = str(Path(tree.__file__).resolve().parents[1])
        code = (f'import sys; sys.path.insert(0, {tools!r})\n'
                'from cpuhpk import cache\n'
                "with cache.cache_lock('second'):\n    print('got it', flush=True)\n")
        second = subprocess.Popen([sys.executable, '-c', code], env=self.env,
                                  stdout=subprocess.PIPE, text=True)
        assert second.stdout is not None
        first = second.stdout.readline()
        self.assertIn('waiting for the cache', first)
        self.assertIn('holder', first)
        self.release()
        self.assertEqual(second.stdout.readline().strip(), 'got it')
        self.assertEqual(second.wait(30), 0)
        second.stdout.close()

    def test_reentrant_and_inherited(self) -> None:
        self.release()
        with mock.patch.dict(os.environ, self.env, clear=True):
            with cache.cache_lock('outer') as fd:
                with cache.cache_lock('inner'):
                    pass
                self.assertEqual(cache.lock_fds(), (fd,))
                tools = str(Path(tree.__file__).resolve().parents[1])
                code = (f'import sys, os; sys.path.insert(0, {tools!r})\n'
                        'os.environ["CPUHP_KUNIT_NOWAIT"] = "1"\n'
                        'from cpuhpk import cache\n'
                        "with cache.cache_lock('child'):\n    print('child ran')\n")
                res = subprocess.run([sys.executable, '-c', code], pass_fds=cache.lock_fds(),
                                     capture_output=True, text=True, check=False)
                self.assertEqual(res.stdout.strip(), 'child ran', res.stderr)
                # Without the inherited descriptor the child is refused.
                res = subprocess.run([sys.executable, '-c', code], capture_output=True,
                                     text=True, check=False)
                self.assertNotEqual(res.returncode, 0)
                self.assertIn('LockBusy', res.stderr)


if __name__ == '__main__':
    unittest.main()


class SeriesDirTest(unittest.TestCase):
    def test_one_directory_per_kernel_series(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            repo = Path(tmp)
            (repo / 'src' / '6.12').mkdir(parents=True)
            (repo / 'src' / '6.12' / 'series').write_text('')
            self.assertEqual(tree.series_dir(repo, '6.12'), repo / 'src' / '6.12')
            with self.assertRaises(say.PrepareError) as e:
                tree.series_dir(repo, '6.1')
            self.assertIn('no src/6.1/series', str(e.exception))
            self.assertIn('series with some: 6.12', str(e.exception))

    def test_the_repository_has_one_for_the_default_kver(self) -> None:
        self.assertTrue(tree.series_files(tree.series_dir(REPO, '6.12')))


class HarnessViewTest(unittest.TestCase):
    """kunit/ sources: the harness's form and the posted one, from one text."""
    TEXT = '\n'.join([
        'a',
        '#ifdef CPUHP_KUNIT_HARNESS',
        'h1',
        '#if IS_ENABLED(CONFIG_X)',
        'h2',
        '#else',
        'h3',
        '#endif',
        '#else',
        'p1',
        '#endif',
        'b',
        '#ifndef CPUHP_KUNIT_HARNESS',
        'p2',
        '#endif',
        'c'])

    def test_both_forms(self) -> None:
        self.assertEqual(tree.harness_view(self.TEXT, True).split('\n'),
                         ['a', 'h1', '#if IS_ENABLED(CONFIG_X)', 'h2', '#else', 'h3', '#endif',
                          'b', 'c'])
        self.assertEqual(tree.harness_view(self.TEXT, False).split('\n'),
                         ['a', 'p1', 'b', 'p2', 'c'])

    def test_parts_of_the_posted_suite(self) -> None:
        text = '\n'.join(['a', '#ifdef CPUHP_KUNIT_PART_freeze', 'f1',
                          '#ifdef CPUHP_KUNIT_HARNESS', 'h', '#else', 'p', '#endif',
                          '#if X', 'x', '#endif', '#endif', 'b'])
        self.assertEqual(tree.harness_view(text, True).split('\n'),
                         ['a', 'f1', 'h', '#if X', 'x', '#endif', 'b'])
        self.assertEqual(tree.harness_view(text, False).split('\n'),
                         ['a', 'f1', 'p', '#if X', 'x', '#endif', 'b'])
        self.assertEqual(tree.harness_view(text, False, ['freeze']),
                         tree.harness_view(text, False))
        self.assertEqual(tree.harness_view(text, False, []).split('\n'), ['a', 'b'])

    def test_errors(self) -> None:
        for text, what in (('#ifdef CPUHP_KUNIT_HARNESS\nx', 'without #endif'),
                           ('#ifdef CPUHP_KUNIT_HARNESS\n#ifndef CPUHP_KUNIT_HARNESS\n#endif\n'
                            '#endif', 'inside a block of its kind'),
                           ('#ifdef CPUHP_KUNIT_PART_a\n#else\n#endif', '#else in a part block'),
                           ('#ifdef CPUHP_KUNIT_PART_a\n', 'without #endif'),
                           ('#ifdef CPUHP_KUNIT_HARNESS\n#elif 1\n#endif', '#elif')):
            with self.subTest(text=text):
                with self.assertRaisesRegex(say.PrepareError, what):
                    tree.harness_view(text, True)

    def test_installed_as_the_harness_runs_it(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / 'kunit').mkdir()
            (root / 'linux' / '.git').mkdir(parents=True)
            (root / 'kunit' / 't.c').write_text(self.TEXT)
            (root / 'kunit' / 'MANIFEST').write_text('t.c k/t.c\n')
            tree.install_kunit(root / 'linux', root / 'kunit')
            self.assertEqual((root / 'linux' / 'k' / 't.c').read_text(),
                             tree.harness_view(self.TEXT, True))

    def test_the_real_sources_resolve(self) -> None:
        for path in sorted((REPO / 'kunit').glob('*.[ch]')):
            with self.subTest(path=path.name):
                text = path.read_text()
                tree.harness_view(text, True)
                tree.harness_view(text, False)
