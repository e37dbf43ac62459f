"""matrix.py: every job runs, a line as each starts and ends, the time left."""

from __future__ import annotations

import contextlib
import io
import unittest
from typing import Dict, List, Optional

from cpuhpk import matrix


class DefinitionTest(unittest.TestCase):
    def test_the_tier_names_jobs_of_the_matrix(self) -> None:
        every = [str(j) for j in matrix.jobs()]
        self.assertEqual(len(every), len(set(every)))
        for job in matrix.TIER:
            self.assertIn(job, every)
        self.assertEqual([str(j) for j in matrix.select(matrix.jobs(), tier=True)],
                         list(matrix.TIER))

    def test_a_job_is_its_make_arguments(self) -> None:
        job = matrix.Job('coverage', '6.12', 'default', ('ARCH=arm64',))
        self.assertEqual(str(job), 'coverage KVER=6.12 CONFIG=default ARCH=arm64')
        self.assertEqual(job.word, 'coverage,KVER=6.12,CONFIG=default,ARCH=arm64')
        self.assertEqual(matrix.words(job.word), ['make', *job.args])


class MatrixRunTest(unittest.TestCase):
    def run_jobs(self, jobs: List[str], status: Dict[str, int],
                 times: Dict[str, Optional[int]]) -> 'tuple[int, List[str], List[List[str]]]':
        lines: List[str] = []
        calls: List[List[str]] = []
        now = [0.0]

        def runner(argv: List[str]) -> int:
            calls.append(argv)
            job = ','.join(argv[argv.index('make') + 1:])
            now[0] += 60 * 7
            return status.get(job, 0)

        rc = matrix.run(jobs, '0', job_runner=runner, estimate=times.get,
                        clock=lambda: now[0], out=lines.append)
        return rc, lines, calls

    def test_every_job_runs_and_a_red_one_fails_the_whole(self) -> None:
        jobs = ['coverage,KVER=6.12,CONFIG=default', 'coverage,KVER=6.1,CONFIG=default',
                'fixes-test,KVER=6.12,CONFIG=default']
        rc, lines, calls = self.run_jobs(jobs, {jobs[0]: 2}, {})
        self.assertEqual(rc, 1)
        self.assertEqual([c[c.index('make'):] for c in calls],
                         [['make', *j.split(',')] for j in jobs])
        self.assertEqual(calls[0][:3], ['--force', '0', '--'])
        self.assertEqual(lines[-1], 'cpuhp-kunit matrix: FAIL')
        self.assertEqual(lines[-4], 'cpuhp-kunit matrix: RED  coverage KVER=6.12 CONFIG=default '
                                    '(exit 2, 420 s)')
        self.assertEqual(lines[-3], 'cpuhp-kunit matrix: ok   coverage KVER=6.1 CONFIG=default '
                                    '(exit 0, 420 s)')

    def test_progress_counts_and_estimates_from_the_last_passes(self) -> None:
        jobs = ['a', 'b', 'c']
        rc, lines, _ = self.run_jobs(jobs, {}, {'a': 600, 'b': 1200, 'c': None})
        self.assertEqual(rc, 0)
        self.assertEqual(lines[0], 'cpuhp-kunit [1/3] a ... (about 30 min left and 1 job never timed)')
        self.assertEqual(lines[1], 'cpuhp-kunit [1/3] a: ok in 7 min, about 20 min left and 1 job '
                                   'never timed')
        self.assertEqual(lines[4], 'cpuhp-kunit [3/3] c ... (1 job left, none timed yet)')
        self.assertEqual(lines[5], 'cpuhp-kunit [3/3] c: ok in 7 min, nothing left')
        self.assertEqual(lines[-1], 'cpuhp-kunit matrix: PASS')

    def test_no_selection_is_an_error(self) -> None:
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(matrix.main(['list', '--configs', 'sanitizers', '--tier', '1']), 2)
        self.assertIn("no job of make test's tier", err.getvalue())


if __name__ == '__main__':
    unittest.main()
