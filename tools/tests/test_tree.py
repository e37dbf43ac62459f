"""Tests for cpuhpk.tree on a small git tree standing in for the kernel."""

from __future__ import annotations

import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from cpuhpk import tree


def sh(cwd: Path, *args: str) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


class VersionTest(unittest.TestCase):
    def test_upstream_version(self) -> None:
        self.assertEqual(tree.upstream_version('6.12.118-1~deb12u1'), '6.12.118')
        self.assertEqual(tree.upstream_version('6.1.192-1'), '6.1.192')
        with self.assertRaises(tree.PrepareError):
            tree.upstream_version('garbage')


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
        with self.assertRaises(tree.PrepareError) as cm:
            tree.apply_series(self.tree, '9.9', self.repo / 'src')
        msg = str(cm.exception)
        self.assertIn('0001-a-add-b.patch', msg)
        self.assertIn('linux 9.9', msg)
        self.assertIn('patch failed', msg)
        self.assertIsNone(tree.read_stamp(self.tree, tree.SERIES_STAMP))

    def test_series_names_a_missing_patch(self) -> None:
        (self.repo / 'src' / 'series').write_text('0002-missing.patch\n')
        with self.assertRaisesRegex(tree.PrepareError, '0002-missing.patch'):
            tree.apply_series(self.tree, '9.9', self.repo / 'src')

    def test_dirty_tree_is_refused(self) -> None:
        (self.tree / 'a.c').write_text('broken\n')
        os.environ.pop('CPUHP_KUNIT_DIRTY', None)
        with self.assertRaisesRegex(tree.PrepareError, 'local changes in a.c'):
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

    def test_manifest_errors(self) -> None:
        for text, what in (('x.c\n', 'expected'), ('x.c /abs/x.c\n', 'expected'),
                           ('missing.c a/missing.c\n', 'does not exist')):
            with self.subTest(text=text):
                (self.repo / 'kunit' / 'x.c').write_text('')
                (self.repo / 'kunit' / 'MANIFEST').write_text(text)
                with self.assertRaisesRegex(tree.PrepareError, what):
                    tree.read_manifest(self.repo / 'kunit')


if __name__ == '__main__':
    unittest.main()
