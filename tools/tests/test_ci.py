"""The CI definitions fan out over exactly the jobs of `make matrix-list`.

.gitlab-ci.yml and .github/workflows/cpuhp-kunit.yml cannot run here: they
are read as YAML (python3-yaml) and their matrices expanded the way each
engine does (GitLab: the product of each parallel:matrix entry's lists;
GitHub: strategy.matrix include rows, or the product of its lists).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import itertools
import os
import re
import subprocess
import unittest
from typing import Any, Callable, Dict, List

from cpuhpk import matrix, mutate
from cpuhpk.paths import REPO

PYTHON = '/usr/bin/python3'
yaml: Any = importlib.import_module('yaml')


# The make of this file's checks sees the Makefile's defaults, not what a
# calling make was given: make test KVER=6.1 (or ARCH=arm64) runs tools-test
# with that in MAKEFLAGS and in the environment (make exports command-line
# variables), which every sub-make would otherwise take up.
KNOBS = set(re.findall(r'^([A-Z][A-Z0-9_]*)\s*\?=', (REPO / 'Makefile').read_text(), re.M))
MAKE_ENV = {k: v for k, v in os.environ.items()
            if k not in KNOBS | {'MAKEFLAGS', 'MFLAGS', 'MAKELEVEL', 'MAKEOVERRIDES'}}


def make(*args: str) -> 'subprocess.CompletedProcess[str]':
    """make @args in the repository, with MAKE_ENV, output captured."""
    return subprocess.run(['make', '--no-print-directory', *args], cwd=REPO, capture_output=True,
                          text=True, check=False, env=MAKE_ENV)


def matrix_list(*args: str) -> List[str]:
    res = make('-s', 'matrix-list', *args)
    res.check_returncode()
    return res.stdout.splitlines()


def product(entry: Dict[str, Any]) -> List[Dict[str, str]]:
    """One combination per element of the product of @entry's values (a str is a list of one)."""
    keys = list(entry)
    values = [v if isinstance(v, list) else [v] for v in entry.values()]
    return [dict(zip(keys, map(str, combo))) for combo in itertools.product(*values)]


def gitlab_jobs(doc: Dict[str, Any], name: str) -> List[Dict[str, str]]:
    job = doc[name]
    base = {k: str(v) for k, v in job.get('variables', {}).items()}
    return [dict(base, **combo) for entry in job['parallel']['matrix'] for combo in product(entry)]


def github_jobs(doc: Dict[str, Any], name: str) -> List[Dict[str, str]]:
    matrix = dict(doc['jobs'][name]['strategy']['matrix'])
    include = matrix.pop('include', [])
    combos = product(matrix) if matrix else []
    return combos + [{k: str(v) for k, v in row.items()} for row in include]


def shards(specs: List[str]) -> None:
    """@specs are SHARD=1/N .. N/N, each once."""
    n = int(specs[0].partition('/')[2])
    assert sorted(specs) == sorted(f'{i}/{n}' for i in range(1, n + 1)), specs


def shards_per_kver(jobs: List[Dict[str, str]], kver: str, shard: str,
                    road: Callable[[Dict[str, str]], bool]) -> None:
    """Each series of make matrix-list has its mutants sharded 1/N .. N/N, and no
    other has; mutants/roads/ (the jobs @road tells) is sharded on 6.12 alone."""
    kvers = sorted({line.split()[1] for line in matrix_list()})
    own = [j for j in jobs if not road(j)]
    assert sorted({'KVER=' + j[kver] for j in own}) == kvers, (jobs, kvers)
    for k in kvers:
        shards([j[shard].removeprefix('SHARD=') for j in own if 'KVER=' + j[kver] == k])
    roads = [j for j in jobs if road(j)]
    assert {j[kver] for j in roads} == {'6.12'}, roads
    shards([j[shard].rpartition('SHARD=')[2] for j in roads])


class GitLabTest(unittest.TestCase):
    def setUp(self) -> None:
        self.doc = yaml.safe_load((REPO / '.gitlab-ci.yml').read_text())

    def test_kernel_jobs_are_matrix_list(self) -> None:
        jobs = [f"{j['TARGET']} KVER={j['KVER']} CONFIG={j['CONFIG']} {j.get('EXTRA', '')}".strip()
                for j in gitlab_jobs(self.doc, 'kernel')]
        self.assertEqual(sorted(jobs), sorted(matrix_list()))
        self.assertIn('make $TARGET KVER=$KVER CONFIG=$CONFIG $EXTRA || rc=$?',
                      ' '.join(self.doc['kernel']['script']))

    def test_mutant_shards_cover_the_set_once(self) -> None:
        jobs = gitlab_jobs(self.doc, 'mutants')
        self.assertEqual({j['TARGET'] for j in jobs}, {'mutate'})
        shards_per_kver(jobs, 'KVER', 'EXTRA', lambda j: 'MUTANTS=mutants/roads' in j['EXTRA'])

    def test_each_job_caches_its_kernel_and_keeps_its_results(self) -> None:
        self.assertTrue(self.doc['variables']['CPUHP_KUNIT_CACHE'].startswith('$CI_PROJECT_DIR/'))
        for name in ('kernel', 'mutants'):
            job = self.doc[name]
            self.assertIn('$KVER', job['cache']['key'])
            self.assertIn('$CONFIG', job['cache']['key'])
            self.assertEqual(job['cache']['paths'], ['.cache/cpuhp-kunit/'])
            self.assertEqual(job['artifacts']['when'], 'always')
            self.assertIn('results/$CI_JOB_ID', ' '.join(job['script']))

    def test_merge_job_reads_every_job(self) -> None:
        job = self.doc['merge-results']
        self.assertEqual(job['when'], 'always')
        self.assertEqual({n['job'] for n in job['needs']}, {'kernel', 'mutants'})
        self.assertIn('make merge-results DIRS="$(echo results/*/*)"', job['script'])
        self.assertEqual(self.doc['tools-test']['script'], ['make tools-test'])


class GitHubTest(unittest.TestCase):
    def setUp(self) -> None:
        self.doc = yaml.safe_load((REPO / '.github' / 'workflows' / 'cpuhp-kunit.yml')
                                  .read_text())

    def steps(self, job: str) -> List[Dict[str, Any]]:
        steps: List[Dict[str, Any]] = self.doc['jobs'][job]['steps']
        return steps

    def test_kernel_jobs_are_matrix_list(self) -> None:
        jobs = [f"{j['target']} KVER={j['kver']} CONFIG={j['config']} {j.get('extra', '')}".strip()
                for j in github_jobs(self.doc, 'kernel')]
        self.assertEqual(sorted(jobs), sorted(matrix_list()))
        runs = [s.get('run', '') for s in self.steps('kernel')]
        self.assertIn('make ${{ matrix.target }} KVER=${{ matrix.kver }} '
                      'CONFIG=${{ matrix.config }} ${{ matrix.extra }}', runs)
        self.assertFalse(self.doc['jobs']['kernel']['strategy']['fail-fast'])

    def test_mutant_shards_cover_the_set_once(self) -> None:
        shards_per_kver(github_jobs(self.doc, 'mutants'), 'kver', 'shard',
                        lambda j: j.get('set') == 'roads')
        runs = [s.get('run', '') for s in self.steps('mutants')]
        self.assertTrue(any('make mutate' in r and 'SHARD=${{ matrix.shard }}' in r
                            and "format(' MUTANTS=mutants/{0}', matrix.set)" in r for r in runs))

    def test_each_job_caches_its_kernel_and_uploads_out(self) -> None:
        for job in ('kernel', 'mutants'):
            cache = [s for s in self.steps(job) if s.get('uses', '').startswith('actions/cache')]
            self.assertEqual(cache[0]['with']['path'], '~/.cache/cpuhp-kunit')
            self.assertIn('matrix.kver', cache[0]['with']['key'])
            self.assertIn('matrix.config', cache[0]['with']['key'])
            upload = [s for s in self.steps(job)
                      if s.get('uses', '').startswith('actions/upload-artifact')]
            self.assertEqual((upload[0]['with']['path'], upload[0]['if']), ('out/', 'always()'))

    def test_merge_job_reads_every_job(self) -> None:
        job = self.doc['jobs']['merge-results']
        self.assertEqual((sorted(job['needs']), job['if']), (['kernel', 'mutants'], 'always()'))
        runs = [s.get('run', '') for s in self.steps('merge-results')]
        self.assertIn('make merge-results DIRS="$(echo artifacts/*/*)"', runs)
        self.assertIn('make tools-test', [s.get('run') for s in self.steps('tools-test')])


class GeneratedTest(unittest.TestCase):
    """The CI definitions' job lists are matrix.py's, written by make ci-files."""

    def test_the_files_are_as_generated(self) -> None:
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(matrix.main(['ci', '--check']), 0, err.getvalue())

    def test_an_edited_list_is_found_and_rewritten(self) -> None:
        text = (REPO / '.gitlab-ci.yml').read_text()
        edited = text.replace('        CONFIG: "rt+debug"\n', '        CONFIG: "rt"\n')
        self.assertNotEqual(edited, text)
        blocks = matrix.ci_blocks(matrix.jobs(), ('6.12', '6.1'))
        name = 'kernel jobs (GitLab)'
        self.assertEqual(matrix.rewrite(edited, name, blocks[name]), text)
        with self.assertRaises(matrix.SelectionError):
            matrix.rewrite('no markers\n', name, blocks[name])


class MatrixListTest(unittest.TestCase):
    def test_default_is_the_coverage_job(self) -> None:
        self.assertEqual(matrix_list('CONFIGS=default debug', 'KVER=6.1'),
                         ['coverage KVER=6.1 CONFIG=default', 'run KVER=6.1 CONFIG=debug',
                          'run KVER=6.1 CONFIG=default SMP=2',
                          'fixes-test KVER=6.1 CONFIG=default',
                          'fixes-series-test KVER=6.1 CONFIG=default'])
        self.assertEqual(matrix_list('CONFIGS=default', 'KVERS=6.12 6.1'),
                         ['coverage KVER=6.12 CONFIG=default', 'coverage KVER=6.1 CONFIG=default',
                          'run KVER=6.12 CONFIG=default SMP=2',
                          'run KVER=6.1 CONFIG=default SMP=2',
                          'fixes-test KVER=6.12 CONFIG=default',
                          'fixes-series-test KVER=6.12 CONFIG=default',
                          'fixes-test KVER=6.1 CONFIG=default',
                          'fixes-series-test KVER=6.1 CONFIG=default',
                          'series-test KVER=6.12 CONFIG=default',
                          'tree-test KVER=6.12 CONFIG=default',
                          'coverage KVER=6.12 CONFIG=default ARCH=arm64'])
        self.assertEqual(matrix_list('CONFIGS=default', 'KVERS=6.1'),
                         ['coverage KVER=6.1 CONFIG=default', 'run KVER=6.1 CONFIG=default SMP=2',
                          'fixes-test KVER=6.1 CONFIG=default',
                          'fixes-series-test KVER=6.1 CONFIG=default'])

    def test_the_default_kernel_boots_with_2_cpus_too(self) -> None:
        """SMP=2 is the same kernel booted again (findings/12): only where default is built."""
        jobs = matrix_list()
        for kver in ('6.12', '6.1'):
            self.assertIn(f'run KVER={kver} CONFIG=default SMP=2', jobs)
        self.assertEqual([j for j in matrix_list('CONFIGS=debug', 'KVERS=6.1') if 'SMP' in j], [])

    def test_arm64_boots_6_12_s_default_kernel(self) -> None:
        """One arm64 job: 6.12's default kernel with its coverage gate, in make
        matrix and not in make test's tier, in neither without 6.12's default,
        none with OTHER_ARCHS=."""
        jobs = [j for j in matrix_list() if 'ARCH=' in j]
        self.assertEqual(jobs, ['coverage KVER=6.12 CONFIG=default ARCH=arm64'])
        self.assertNotIn(jobs[0], matrix_list('TIER=1'))
        self.assertEqual([j for j in matrix_list('KVERS=6.1') if 'ARCH=' in j], [])
        self.assertEqual([j for j in matrix_list('CONFIGS=debug') if 'ARCH=' in j], [])
        self.assertEqual([j for j in matrix_list('OTHER_ARCHS=') if 'ARCH=' in j], [])

    def test_arch_on_the_command_line_selects_its_jobs(self) -> None:
        """make matrix ARCH=arm64 runs the arm64 jobs only: every job would
        inherit ARCH=arm64, and the x86 ones (fixes, series, own tree) are
        not built for it. No job for it is an error, not an empty matrix."""
        self.assertEqual(matrix_list('ARCH=arm64'), ['coverage KVER=6.12 CONFIG=default ARCH=arm64'])
        self.assertEqual(matrix_list('ARCH=x86_64'), matrix_list())
        res = make('-s', 'matrix-list', 'ARCH=arm64', 'KVERS=6.1')
        self.assertEqual(res.returncode, 2)
        self.assertIn('ARCH=arm64: no job of the matrix is for it', res.stderr)

    def test_the_series_is_checked_for_6_12(self) -> None:
        self.assertIn('series-test KVER=6.12 CONFIG=default', matrix_list())
        self.assertNotIn('series-test', [j.split()[0] for j in matrix_list('SERIES_KVERS=')])

    def test_both_series_rt_only_on_6_12(self) -> None:
        jobs = matrix_list()
        self.assertEqual({j.split()[1] for j in jobs}, {'KVER=6.12', 'KVER=6.1'})
        self.assertIn('run KVER=6.12 CONFIG=rt+debug', jobs)
        self.assertEqual([j for j in jobs if 'KVER=6.1 ' in j and 'CONFIG=rt' in j], [])
        self.assertEqual([j for j in matrix_list('KVER=6.1') if 'KVER=6.1 ' not in j], [])

    def test_one_sanitizer_kernel_per_series(self) -> None:
        """The detectors in one kernel: no separate debug or kasan job (since 1091ffd)."""
        jobs = matrix_list()
        for kver in ('6.12', '6.1'):
            self.assertIn(f'run KVER={kver} CONFIG=sanitizers', jobs)
        self.assertEqual([j for j in jobs if 'CONFIG=debug' in j or 'CONFIG=kasan' in j], [])

    def test_series_without_configs_is_refused(self) -> None:
        res = make('-s', 'matrix-list', 'KVERS=6.12 5.10')
        self.assertEqual(res.returncode, 2)
        self.assertIn('no configs for 5.10', res.stderr)

    def test_make_matrix_runs_the_list(self) -> None:
        """make matrix runs what make matrix-list prints: the same selection."""
        res = make('-n', 'matrix', 'KVER=6.1', 'TIER=1')
        self.assertIn('-m cpuhpk matrix ', res.stdout)
        args = res.stdout.split('-m cpuhpk matrix', 1)[1].split()
        self.assertEqual(args[:2], ["--force", "'0'"])
        listed = subprocess.run([PYTHON, '-m', 'cpuhpk.matrix', 'list',
                                 *[a.strip("'") for a in args[2:]]], cwd=REPO / 'tools',
                                capture_output=True, text=True, check=True).stdout.splitlines()
        self.assertEqual(listed, matrix_list('KVER=6.1', 'TIER=1'))

    def test_debian_kernel_in_matrix_not_in_test(self) -> None:
        """Debian's kernel is a job of make matrix and of the CI definitions,
        not of make test."""
        self.assertIn('run KVER=6.12 CONFIG=debian', matrix_list())
        self.assertNotIn('run KVER=6.12 CONFIG=debian', matrix_list('CONFIGS=default'))
        self.assertNotIn('run KVER=6.1 CONFIG=debian', matrix_list('KVERS=6.1'))
        self.assertNotIn('run KVER=6.12 CONFIG=debian', matrix_list('TIER=1'))

    def test_the_tier_is_make_test(self) -> None:
        """make test runs the tier: both default kernels with the coverage
        gate and 6.12's fixes, each a job of the matrix too; KVER= narrows
        it, another ARCH takes that architecture's jobs."""
        tier = ['coverage KVER=6.12 CONFIG=default', 'coverage KVER=6.1 CONFIG=default',
                'fixes-test KVER=6.12 CONFIG=default']
        self.assertEqual(matrix_list('TIER=1'), tier)
        self.assertTrue(set(tier) < set(matrix_list()))
        self.assertEqual(matrix_list('TIER=1', 'KVER=6.1'), ['coverage KVER=6.1 CONFIG=default'])
        self.assertEqual(matrix_list('TIER=1', 'ARCH=arm64'),
                         ['coverage KVER=6.12 CONFIG=default ARCH=arm64'])
        res = make('-n', 'test')
        self.assertIn('matrix TIER=1', res.stdout)
        self.assertIn("--tier '1'", make('-n', 'matrix', 'TIER=1').stdout)
        res = make('-s', 'matrix-list', 'TIER=1', 'CONFIGS=sanitizers')
        self.assertEqual(res.returncode, 2)
        self.assertIn("no job of make test's tier", res.stderr)

    def test_mutate_takes_timeout_only_when_given(self) -> None:
        """make mutate TIMEOUT=300 limits a mutant's run; without it the
        limit is mutate.py's, derived from the unmutated run (the make
        default of 600 s is a run's, not a mutant's)."""
        def dry(*args: str) -> str:
            res = make('-n', 'mutate', *args)   # MAKE_ENV holds no TIMEOUT
            self.assertEqual(res.returncode, 0, res.stderr)
            return res.stdout
        self.assertIn("--timeout '300'", dry('TIMEOUT=300'))
        self.assertNotIn('--timeout', dry())

    def test_mutants_shard_into_the_set(self) -> None:
        patches = sorted((REPO / 'mutants').glob('*.patch'))
        for n in (1, 2, 4, 7):
            got = [p for i in range(1, n + 1) for p in mutate.shard(patches, f'{i}/{n}')]
            self.assertEqual(sorted(got), patches)
            self.assertEqual(len(got), len(set(got)))


if __name__ == '__main__':
    unittest.main()
