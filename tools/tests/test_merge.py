"""make merge-results: the CI jobs' out/ directories as one report."""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
import unittest
from pathlib import Path
from typing import Any, List, Sequence
from unittest import mock

from cpuhpk import merge, mutate, mutreport, outputs, serieschecks
from cpuhpk.paths import REPO
from tests.recorded import expectations as recorded_expectations

DATA = Path(__file__).parent / 'data'
junitparser: Any = importlib.import_module('junitparser')

INFO = '''TN:
SF:{root}/linux-6.12.118/kernel/cpu.c
FN:10,cpuhp_issue_call
FNDA:{calls},cpuhp_issue_call
FNF:1
FNH:1
DA:10,{calls}
DA:11,{line11}
LF:2
LH:{lh}
end_of_record
'''


class MergeTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.out = self.tmp / 'merged'
        patcher = mock.patch('sys.stdout')
        patcher.start()
        self.addCleanup(patcher.stop)

    def run_dir(self, name: str, console: str, config: str) -> Path:
        """The out/ directory of a make run judged from a recorded console."""
        d = self.tmp / name
        d.mkdir()
        shutil.copy(DATA / console, d / 'console.log')
        exp = recorded_expectations('', {'kver': '6.12', 'config': config, 'smp': '4'})
        outputs.judge(d, d / 'console.log', exp, 0, None, 60, None)
        return d

    def mutate_dir(self, name: str, shard: str, total: int, verdicts: Sequence[str],
                   set_: str = '') -> Path:
        d = self.tmp / name
        outcomes = [mutreport.Outcome(f'{name}-{i}', v, 'x', 1.0, 'promise')
                    for i, v in enumerate(verdicts)]
        mutreport.report(outcomes, d, {'kver': '6.12', 'config': 'default', 'strict': '0',
                                    'shard': shard, 'total': total, 'set': set_})
        return d

    def merged(self, *dirs: Path) -> int:
        return merge.merge(list(dirs), self.out)

    def bad(self) -> int:
        xml = junitparser.JUnitXml.fromfile(str(self.out / 'junit.xml'))
        return sum(1 for suite in xml for case in suite for r in case.result
                   if type(r).__name__ in ('Failure', 'Error'))

    def problems(self) -> List[str]:
        return [ln for ln in (self.out / 'summary.txt').read_text().splitlines()
                if ln.startswith('merge problem')]

    def test_green_jobs_make_one_green_junit(self) -> None:
        a = self.run_dir('6.12', 'pass_default_console.log', 'default')
        b = self.run_dir('6.12-debug', 'pass_debug_console.log', 'debug')
        self.assertEqual(self.merged(a, b), 0)
        xml = junitparser.JUnitXml.fromfile(str(self.out / 'junit.xml'))
        names = {s.name for s in xml}
        self.assertIn('KVER=6.12 CONFIG=default: cpuhp_install', names)
        self.assertIn('KVER=6.12 CONFIG=debug: cpuhp_install', names)
        single = [junitparser.JUnitXml.fromfile(str(d / 'junit.xml')) for d in (a, b)]
        self.assertEqual(sum(1 for s in xml for _ in s),
                         sum(1 for x in single for s in x for _ in s))
        self.assertEqual(self.bad(), 0)
        self.assertIn('merged 2 job(s): PASS', (self.out / 'summary.txt').read_text())

    def test_one_red_job_makes_it_red(self) -> None:
        a = self.run_dir('6.12', 'pass_default_console.log', 'default')
        b = self.run_dir('6.12-debug', 'fail_mutant_console.log', 'debug')
        self.assertEqual(self.merged(a, b), 1)
        self.assertGreater(self.bad(), 0)

    def test_no_result_in_a_directory_is_red(self) -> None:
        (self.tmp / 'empty').mkdir()
        self.assertEqual(self.merged(self.tmp / 'empty'), 1)
        self.assertIn('no verdict.json, report.json or series.json', self.problems()[0])
        self.assertEqual(self.bad(), 1)
        self.assertEqual(self.merged(), 1)

    def series_dir(self, name: str, *oks: bool) -> Path:
        report = serieschecks.Checks('6.12')
        for i, ok in enumerate(oks):
            report.add(f'check {i}', ok, 'fine' if ok else 'broken')
        report.write(self.tmp / name)
        return self.tmp / name

    def test_a_series_job_merges_and_its_red_check_is_red(self) -> None:
        a = self.run_dir('6.12', 'pass_default_console.log', 'default')
        self.assertEqual(self.merged(a, self.series_dir('6.12-series', True, True)), 0)
        xml = junitparser.JUnitXml.fromfile(str(self.out / 'junit.xml'))
        self.assertIn('series KVER=6.12: series KVER=6.12', {s.name for s in xml})
        self.assertIn('2/2 checks', (self.out / 'summary.txt').read_text())
        self.assertEqual(self.merged(a, self.series_dir('red-series', True, False)), 1)
        self.assertEqual(self.bad(), 1)

    def test_the_same_job_twice_is_red(self) -> None:
        a = self.run_dir('a', 'pass_default_console.log', 'default')
        b = self.run_dir('b', 'pass_default_console.log', 'default')
        self.assertEqual(self.merged(a, b), 1)
        self.assertIn('the same job', self.problems()[0])

    def test_output_directory_among_the_inputs_is_left_out(self) -> None:
        a = self.run_dir('6.12', 'pass_default_console.log', 'default')
        self.out.mkdir()
        self.assertEqual(self.merged(a, self.out), 0)

    def test_shards_add_up_to_the_set(self) -> None:
        s1 = self.mutate_dir('s1', '1/2', 3, ['killed', 'killed'])
        s2 = self.mutate_dir('s2', '2/2', 3, ['killed'])
        self.assertEqual(self.merged(s1, s2), 0)
        text = (self.out / 'mutants.md').read_text()
        self.assertIn('mutants overall: 3/3 killed (100.0%)', text)
        self.assertEqual(text.count('| s1-'), 2)

    def test_two_sets_each_add_up_on_their_own(self) -> None:
        s1 = self.mutate_dir('s1', '1/2', 3, ['killed', 'killed'])
        s2 = self.mutate_dir('s2', '2/2', 3, ['killed'])
        r1 = self.mutate_dir('r1', '1/2', 2, ['killed'], 'roads')
        r2 = self.mutate_dir('r2', '2/2', 2, ['killed'], 'roads')
        self.assertEqual(self.merged(s1, s2, r1, r2), 0, self.problems())
        text = (self.out / 'mutants.md').read_text()
        self.assertIn('mutants overall: 5/5 killed (100.0%)', text)
        self.assertIn('## KVER=6.12 CONFIG=default MUTANTS=mutants/roads', text)

    def test_survivor_in_a_shard_is_red(self) -> None:
        s1 = self.mutate_dir('s1', '1/2', 3, ['killed', 'survived'])
        s2 = self.mutate_dir('s2', '2/2', 3, ['killed'])
        self.assertEqual(self.merged(s1, s2), 1)
        self.assertIn('2/3 killed (66.7%)', (self.out / 'mutants.md').read_text())
        self.assertEqual(self.bad(), 1)

    def test_missing_shard_is_red(self) -> None:
        s1 = self.mutate_dir('s1', '1/3', 5, ['killed', 'killed'])
        s3 = self.mutate_dir('s3', '3/3', 5, ['killed'])
        self.assertEqual(self.merged(s1, s3), 1)
        self.assertIn('shards 2/3 missing', self.problems()[0])

    def test_shards_that_do_not_add_up_are_red(self) -> None:
        s1 = self.mutate_dir('s1', '1/2', 4, ['killed'])
        s2 = self.mutate_dir('s2', '2/2', 4, ['killed'])
        self.assertEqual(self.merged(s1, s2), 1)
        self.assertIn('hold 2 mutants, the set has 4', self.problems()[0])

    def test_mutant_in_two_shards_is_red(self) -> None:
        s1 = self.mutate_dir('m', '1/2', 2, ['killed'])
        s2 = self.tmp / 'm2'
        shutil.copytree(s1, s2)
        (s2 / 'report.json').write_text((s2 / 'report.json').read_text()
                                        .replace('"1/2"', '"2/2"'))
        self.assertEqual(self.merged(s1, s2), 1)
        self.assertIn('is in two shards', self.problems()[0])

    def test_whole_set_and_a_shard_are_red(self) -> None:
        whole = self.mutate_dir('w', '', 2, ['killed', 'killed'])
        s1 = self.mutate_dir('s1', '1/2', 2, ['killed'])
        self.assertEqual(self.merged(whole, s1), 1)

    def test_real_shards_of_mutants_dir_merge_to_the_set(self) -> None:
        patches = sorted((REPO / 'mutants').glob('*.patch'))
        dirs = []
        for i in (1, 2, 3):
            got = mutate.shard(patches, f'{i}/3')
            dirs.append(self.mutate_dir(f'r{i}', f'{i}/3', len(patches),
                                        ['killed'] * len(got)))
        self.assertEqual(self.merged(*dirs), 0)

    def test_coverage_of_two_machines_adds_up(self) -> None:
        a = self.run_dir('6.12', 'pass_default_console.log', 'default')
        b = self.run_dir('6.12-debug', 'pass_debug_console.log', 'debug')
        (a / 'coverage.info').write_text(INFO.format(root='/root/.cache/cpuhp-kunit',
                                                     calls=2, line11=0, lh=1))
        (b / 'coverage.info').write_text(INFO.format(root='/home/ci/.cache/cpuhp-kunit',
                                                     calls=3, line11=1, lh=2))
        self.assertEqual(self.merged(a, b), 0)
        text = (self.out / 'coverage-6.12.info').read_text()
        self.assertIn('SF:linux-6.12.118/kernel/cpu.c', text)
        self.assertEqual(text.count('SF:'), 1)
        self.assertIn('DA:10,5', text)
        self.assertIn('DA:11,1', text)
        self.assertTrue((self.out / 'html-6.12' / 'index.html').is_file())

    def test_relative_output_directory(self) -> None:
        # make merge-results passes out/merged, relative to the repository.
        a = self.run_dir('6.12', 'pass_default_console.log', 'default')
        (a / 'coverage.info').write_text(INFO.format(root='/x/.cache/cpuhp-kunit',
                                                     calls=1, line11=1, lh=2))
        cwd = os.getcwd()
        os.chdir(self.tmp)
        self.addCleanup(os.chdir, cwd)
        self.assertEqual(merge.merge([Path('6.12')], Path('rel-merged')), 0)
        self.assertTrue((self.tmp / 'rel-merged' / 'html-6.12' / 'index.html').is_file())


if __name__ == '__main__':
    unittest.main()
