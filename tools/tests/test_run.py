"""Tests for the verdict of cpuhpk.run and the mutant bookkeeping of cpuhpk.mutate."""

from __future__ import annotations

import shutil
import tempfile
import unittest
from pathlib import Path
from typing import List, Optional

from cpuhpk import mutate, run, tree

DATA = Path(__file__).parent / 'data'


class JudgeTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.out = Path(self._tmp.name)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def judge(self, console: Optional[str], rc: Optional[int], kunit_log: str = '') -> List[str]:
        if console:
            shutil.copy(DATA / console, self.out / 'console.log')
        (self.out / 'kunit.log').write_text(kunit_log)
        return run.judge(self.out, rc, 600)

    def test_pass_writes_outputs(self) -> None:
        self.assertEqual(self.judge('pass_console.log', 0), [])
        self.assertTrue((self.out / 'junit.xml').is_file())
        ktap = (self.out / 'results.ktap').read_text().splitlines()
        self.assertEqual(ktap[0], 'KTAP version 1')

    def test_failure(self) -> None:
        problems = self.judge('fail_console.log', 1)
        self.assertEqual(problems,
                         ['timekeeping_crosststamp.crosststamp_current_clocksource: failed'])

    def test_crash_is_red_and_quotes_the_report(self) -> None:
        problems = self.judge('crash_console.log', 1)
        self.assertTrue(any('crashed' in p for p in problems))
        self.assertTrue(any('BUG: kernel NULL pointer dereference' in p for p in problems))

    def test_hang(self) -> None:
        problems = self.judge('crash_console.log', None)
        self.assertTrue(any('did not finish within 600 s' in p for p in problems))
        problems = self.judge('pass_console.log', 1,
                              "Command '['qemu-system-x86_64']' timed out after 600 seconds")
        self.assertTrue(any('did not finish' in p for p in problems))

    def test_kernel_never_ran(self) -> None:
        problems = self.judge(None, 1)
        self.assertEqual(len(problems), 1)
        self.assertIn('the kernel never ran', problems[0])

    def test_counts_line(self) -> None:
        self.judge('crash_console.log', 1)
        self.assertEqual(run.counts_line(self.out), 'kunit: 7 passed, 2 failed, 0 skipped')

    def test_kunit_py_disagreeing(self) -> None:
        self.assertIn('kunit.py exited 1', ' '.join(self.judge('pass_console.log', 1)))


class MutantTest(unittest.TestCase):
    def test_mutant_that_does_not_apply(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            linux = Path(tmp) / 'linux'
            linux.mkdir()
            (linux / 'a.c').write_text('int a;\n')
            tree.git(linux, 'init', '-q')
            tree.git(linux, 'add', '-A')
            tree.git(linux, 'commit', '-q', '-m', 'baseline')
            patch = Path(tmp) / 'm.patch'
            patch.write_text('# breaks b\n--- a/b.c\n+++ b/b.c\n@@ -1 +1 @@\n-int b;\n+int c;\n')
            t = tree.Tree(kver='9.9', package='9.9.1-1', version='9.9.1', path=linux)
            outcome = mutate.run_one(patch, t, [], Path(tmp) / 'out')
            self.assertEqual(outcome.verdict, 'not-applicable')
            self.assertEqual(outcome.promise, 'breaks b')


    def test_promise_is_the_comment_line(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            p = Path(tmp) / 'm.patch'
            p.write_text('# a promise\ndiff --git a/x b/x\n')
            self.assertEqual(mutate.promise(p), 'a promise')
            p.write_text('diff --git a/x b/x\n')
            self.assertEqual(mutate.promise(p), '')

    def test_killers_name_failed_cases(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            shutil.copy(DATA / 'fail_console.log', out / 'console.log')
            (out / 'kunit.log').write_text('')
            run.judge(out, 1, 600)
            self.assertEqual(mutate.killers(out),
                             'timekeeping_crosststamp.crosststamp_current_clocksource')


if __name__ == '__main__':
    unittest.main()
