"""make matrix skips a job that passed when nothing it reads changed (jobstamp.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from typing import List
from unittest import mock

from cpuhpk import jobstamp


class JobStampTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.repo = Path(self.tmp.name)
        subprocess.run(['git', 'init', '-q', str(self.repo)], check=True)
        (self.repo / 'kunit').mkdir()
        (self.repo / 'kunit' / 'a.c').write_text('int a;\n')
        (self.repo / 'Makefile').write_text('all:\n')
        (self.repo / 'README.md').write_text('not an input\n')
        self.count = self.repo / 'runs'
        repo = mock.patch.object(jobstamp, 'REPO', self.repo)
        repo.start()
        self.addCleanup(repo.stop)
        pkgs = mock.patch.object(jobstamp, 'packages', return_value='gcc-12 1\n')
        pkgs.start()
        self.addCleanup(pkgs.stop)
        env = mock.patch.dict(os.environ, {'MAKEFLAGS': ''})
        env.start()
        self.addCleanup(env.stop)
        os.environ.pop('CPUHP_KUNIT_DIRTY', None)

    def tearDown(self) -> None:
        self.tmp.cleanup()

    def job(self, rc: int = 0) -> List[str]:
        """A job that counts its runs and exits @rc."""
        return [sys.executable, '-c', f'import sys; open({str(self.count)!r}, "a").write("x");'
                f' sys.exit({rc})']

    def runs(self) -> int:
        return len(self.count.read_text()) if self.count.exists() else 0

    def test_a_passed_job_runs_again_only_when_an_input_changed(self) -> None:
        job = self.job()
        self.assertEqual(jobstamp.main(['--', *job]), 0)
        self.assertEqual(jobstamp.main(['--', *job]), 0)
        self.assertEqual(self.runs(), 1)
        (self.repo / 'README.md').write_text('still not an input\n')
        jobstamp.main(['--', *job])
        self.assertEqual(self.runs(), 1)
        (self.repo / 'kunit' / 'b.c').write_text('int b;\n')    # untracked counts too
        jobstamp.main(['--', *job])
        self.assertEqual(self.runs(), 2)
        (self.repo / 'kunit' / 'a.c').write_text('int a2;\n')
        jobstamp.main(['--', *job])
        self.assertEqual(self.runs(), 3)
        with mock.patch.object(jobstamp, 'packages', return_value='gcc-12 2\n'):
            jobstamp.main(['--', *job])
        self.assertEqual(self.runs(), 4)
        jobstamp.main(['--force', '1', '--', *job])
        self.assertEqual(self.runs(), 5)

    def test_a_red_job_always_runs_again(self) -> None:
        job = self.job(rc=3)
        self.assertEqual(jobstamp.main(['--', *job]), 3)
        self.assertEqual(jobstamp.main(['--', *job]), 3)
        self.assertEqual(self.runs(), 2)
        self.assertFalse(jobstamp.stamp_path(job).exists())

    def test_other_arguments_are_another_job(self) -> None:
        jobstamp.main(['--', *self.job()])
        jobstamp.main(['--', *self.job(), 'KVER=6.1'])
        self.assertEqual(self.runs(), 2)

    def test_experiments_and_dry_runs_leave_no_stamp(self) -> None:
        job = self.job()
        for env in ({'CPUHP_KUNIT_DIRTY': '1'}, {'MAKEFLAGS': 'n --no-print-directory'}):
            with mock.patch.dict(os.environ, env):
                jobstamp.main(['--', *job])
                self.assertFalse(jobstamp.stamp_path(job).exists())
        self.assertEqual(self.runs(), 2)
        self.assertTrue(jobstamp.dry_run('-- --just-print'))
        self.assertFalse(jobstamp.dry_run('s -- CONFIG=debian'))

    def test_a_dry_run_keeps_the_stamp_of_a_pass(self) -> None:
        """tools-test runs make -n test: it removed every stamp, so a warm
        make test never found a job up to date (until da9ade5)."""
        job = self.job()
        jobstamp.main(['--', *job])
        with mock.patch.dict(os.environ, {'MAKEFLAGS': 'n --no-print-directory'}):
            jobstamp.main(['--', *job])
        self.assertTrue(jobstamp.stamp_path(job).exists())
        jobstamp.main(['--', *job])
        self.assertEqual(self.runs(), 2)
        with mock.patch.dict(os.environ, {'CPUHP_KUNIT_DIRTY': '1'}):
            jobstamp.main(['--', *job])
        self.assertFalse(jobstamp.stamp_path(job).exists())

    def test_outside_git_the_files_are_walked(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            (root / 'kunit' / '__pycache__').mkdir(parents=True)
            (root / 'kunit' / 'a.c').write_text('int a;\n')
            (root / 'kunit' / '__pycache__' / 'x.pyc').write_bytes(b'')
            (root / 'Makefile').write_text('all:\n')
            (root / 'README.md').write_text('no\n')
            self.assertEqual(jobstamp.repo_files(root), [root / 'Makefile', root / 'kunit' / 'a.c'])

    def test_stamp_names_the_make_job(self) -> None:
        self.assertEqual(jobstamp.stamp_path(['make', 'run', 'KVER=6.12', 'CONFIG=rt+debug']).name,
                         'run_KVER=6.12_CONFIG=rt+debug.json')


if __name__ == '__main__':
    unittest.main()
