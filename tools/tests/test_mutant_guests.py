"""make mutate's guests by coverage (cpuhpk.mutant_guests): a mutant's changed
lines, the guests whose tracefile reaches them, the tracefiles' freshness,
the runs until one kills it (cpuhpk.mutate.run_one) and the counts per road."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import shutil
import tempfile
import unittest
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Sequence
from unittest import mock

from cpuhpk import buildstamp, execute, gcov, mutant_guests, mutate, mutreport, tree, verdict
from cpuhpk.mutant_guests import Hunk
from cpuhpk.paths import REPO
from cpuhpk.runspec import RunSpec

junitparser: Any = importlib.import_module('junitparser')
ORDER = ('flat', 'smt', 'hotplug', 'nosmt', 'nosmt-force')
ROOT = Path('/cache/linux-6.12.118')

CHANGE = '''# CPUHP_OFFLINE cannot be installed (-EINVAL)
diff --git a/kernel/cpu.c b/kernel/cpu.c
index 91da0b2..d4a7cd2 100644
--- a/kernel/cpu.c
+++ b/kernel/cpu.c
@@ -2266,7 +2266,7 @@ static struct cpuhp_step cpuhp_hp_states[] = {
 /* Sanity check for callbacks */
 static int cpuhp_cb_check(enum cpuhp_state state)
 {
-\tif (state <= CPUHP_OFFLINE || state >= CPUHP_ONLINE)
+\tif (state < CPUHP_OFFLINE || state >= CPUHP_ONLINE)
 \t\treturn -EINVAL;
 \treturn 0;
 }
'''

INSERTION = '''# a CPU brought up to an AP target stops there
diff --git a/kernel/cpu.c b/kernel/cpu.c
--- a/kernel/cpu.c
+++ b/kernel/cpu.c
@@ -848,6 +848,7 @@ static int cpuhp_bringup_ap(unsigned int cpu)
 \tif (st->target <= CPUHP_AP_ONLINE_IDLE)
 \t\treturn 0;
 
+\tst->target = CPUHP_ONLINE;
 \treturn cpuhp_kick_ap(cpu, st, st->target);
 
 out_unlock:
'''

# Two files, three hunks: an insertion, a removal of two lines apart, a change.
MULTI = '''# three breaks at once
diff --git a/kernel/time/timekeeping.c b/kernel/time/timekeeping.c
--- a/kernel/time/timekeeping.c
+++ b/kernel/time/timekeeping.c
@@ -979,6 +979,7 @@ void ktime_get_snapshot(struct system_time_snapshot *systime_snapshot)
 \t\tbase_raw = tk->tkr_raw.base;
 \t\tnsec_real = timekeeping_cycles_to_ns(&tk->tkr_mono, now);
 \t\tnsec_raw  = timekeeping_cycles_to_ns(&tk->tkr_raw, now);
+\t\tnsec_raw += (now - tk->tkr_raw.cycle_last) >> 10;
 \t} while (read_seqcount_retry(&tk_core.seq, seq));
 
 \tsystime_snapshot->cycles = now;
diff --git a/kernel/cpu.c b/kernel/cpu.c
--- a/kernel/cpu.c
+++ b/kernel/cpu.c
@@ -2543,10 +2543,8 @@
 {
 \tint ret;
 
-\tcpus_read_lock();
 \tret = __cpuhp_setup_state_cpuslocked(state, name, invoke, startup,
 \t\t\t\t\t     teardown, multi_instance);
-\tcpus_read_unlock();
 \treturn ret;
 }
 EXPORT_SYMBOL(__cpuhp_setup_state);
@@ -2600,3 +2598,3 @@
 \ta = 1;
-\tb = 2;
+\tb = 3;
 \tc = 4;
'''


def info(records: Dict[str, Dict[int, int]]) -> str:
    """An lcov tracefile: per SF: path, DA:<line>,<count>."""
    return ''.join('TN:\nSF:' + sf + '\n' + ''.join(f'DA:{n},{c}\n' for n, c in hits.items())
                   + 'end_of_record\n' for sf, hits in records.items())


def cov(records: Dict[str, Dict[int, int]]) -> Dict[str, gcov.FileCov]:
    return gcov.parse_info(info(records))


class HunkLinesTest(unittest.TestCase):
    def test_a_changed_line_counts_by_its_number_before_the_patch(self) -> None:
        self.assertEqual(mutant_guests.changed_lines(CHANGE), {'kernel/cpu.c': [2269]})
        self.assertEqual(mutant_guests.hunks(CHANGE), [Hunk('kernel/cpu.c', (2269,), 2272)])

    def test_a_pure_insertion_counts_by_the_line_it_follows(self) -> None:
        # Inserted after line 850 (the blank line below 'return 0;').
        self.assertEqual(mutant_guests.changed_lines(INSERTION), {'kernel/cpu.c': [850]})

    def test_several_hunks_and_files(self) -> None:
        self.assertEqual(mutant_guests.hunks(MULTI), [
            Hunk('kernel/time/timekeeping.c', (981,), 984),
            Hunk('kernel/cpu.c', (2546, 2549), 2552),
            Hunk('kernel/cpu.c', (2601,), 2602)])
        self.assertEqual(mutant_guests.changed_lines(MULTI),
                         {'kernel/time/timekeeping.c': [981], 'kernel/cpu.c': [2546, 2549, 2601]})
        self.assertEqual(mutant_guests.describe(mutant_guests.hunks(MULTI)),
                         'kernel/time/timekeeping.c:981; kernel/cpu.c:2546,2549,2601')

    def test_an_insertion_of_a_hunk_without_context(self) -> None:
        """diff -U0: '@@ -5,0 +6,2 @@' inserts after line 5."""
        patch = '--- a/k.c\n+++ b/k.c\n@@ -5,0 +6,2 @@\n+x;\n+y;\n@@ -9 +11 @@\n-a;\n+b;\n'
        self.assertEqual(mutant_guests.changed_lines(patch), {'k.c': [5, 9]})

    def test_every_mutant_of_the_repository_changes_a_profiled_line(self) -> None:
        for patch in sorted((REPO / 'mutants').rglob('*.patch')):
            lines = mutant_guests.changed_lines(patch.read_text())
            self.assertTrue(lines, patch)
            self.assertLessEqual(set(lines), set(gcov.FILES), patch)


class GuestChoiceTest(unittest.TestCase):
    CPU = str(ROOT / 'kernel/cpu.c')

    def test_a_line_only_smt_reaches(self) -> None:
        covs = {'flat': cov({self.CPU: {2269: 0, 2270: 5}}),
                'smt': cov({self.CPU: {2269: 3}}),
                'hotplug': cov({self.CPU: {2269: 0, 2270: 1}})}
        self.assertEqual(mutant_guests.route(mutant_guests.hunks(CHANGE), covs, ROOT, ORDER),
                         ['smt'])

    def test_flat_first_then_make_coverages_order(self) -> None:
        covs = {g: cov({self.CPU: {2269: 1}}) for g in reversed(ORDER)}
        self.assertEqual(mutant_guests.route(mutant_guests.hunks(CHANGE), covs, ROOT, ORDER),
                         list(ORDER))

    def test_no_guest_reaches_it(self) -> None:
        covs = {g: cov({self.CPU: {2269: 0}, str(ROOT / 'kernel/time/timekeeping.c'):
                        {2269: 9}}) for g in ORDER}
        hs = mutant_guests.hunks(CHANGE)
        self.assertEqual(mutant_guests.route(hs, covs, ROOT, ORDER), [])
        self.assertEqual(mutant_guests.road([]), 'none')

    def test_a_line_read_0_where_its_function_ran_routes_by_the_function(self) -> None:
        """gcc gives an inlined call's counts to the callee's lines: the call's
        own line can read 0 in every guest although its function ran."""
        def fn(called: int, line: int) -> Dict[str, gcov.FileCov]:
            return gcov.parse_info(f'SF:{self.CPU}\nFN:2260,f\nFNDA:{called},f\n'
                                   f'FN:2280,g\nFNDA:5,g\nDA:2269,{line}\nDA:2270,4\n'
                                   'end_of_record\n')
        hs = mutant_guests.hunks(CHANGE)
        covs = {'flat': fn(0, 0), 'smt': fn(2, 0), 'nosmt': fn(1, 0)}
        self.assertEqual(mutant_guests.route(hs, covs, ROOT, ORDER), ['smt', 'nosmt'])
        # Line counts win when any guest has them.
        covs['hotplug'] = fn(1, 3)
        self.assertEqual(mutant_guests.route(hs, covs, ROOT, ORDER), ['hotplug'])

    def test_sf_paths_of_a_tree_elsewhere(self) -> None:
        """A tracefile of another cache (a CI machine): SF: ends in the file's path."""
        covs = {'nosmt': cov({'/home/ci/.cache/cpuhp-kunit/linux-6.12.118/kernel/cpu.c':
                              {2269: 2}})}
        self.assertEqual(mutant_guests.route(mutant_guests.hunks(CHANGE), covs, ROOT, ORDER),
                         ['nosmt'])

    def test_a_line_lcov_does_not_instrument_stands_for_the_next_one(self) -> None:
        """The insertion follows a blank line: the return below it is what runs."""
        covs = {'flat': cov({self.CPU: {848: 4, 849: 2, 851: 0}}),
                'hotplug': cov({self.CPU: {848: 4, 849: 0, 851: 2}}),
                # Beyond the hunk (its last line is 853): not this change's code.
                'smt': cov({self.CPU: {848: 1, 851: 0, 900: 7}})}
        self.assertEqual(mutant_guests.route(mutant_guests.hunks(INSERTION), covs, ROOT, ORDER),
                         ['hotplug'])


class FreshnessTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.infos = {g: self.tmp / f'6.12-{g}' / 'coverage.info' for g in ('flat', 'smt')}

    def tracefile(self, guest: str, count: int, sources: str) -> None:
        path = self.infos[guest]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(info({str(ROOT / 'kernel/cpu.c'): {2269: count}}))
        buildstamp.remember_coverage(path.parent, sources)

    def fresh(self, run_guest: Any) -> Any:
        with contextlib.redirect_stdout(io.StringIO()) as said:
            covs, why = mutant_guests.fresh_coverage(self.infos, 'now', run_guest)
        return covs, why, said.getvalue()

    def test_fresh_tracefiles_are_read_as_they_are(self) -> None:
        self.tracefile('flat', 1, 'now')
        self.tracefile('smt', 0, 'now')
        covs, why, said = self.fresh(lambda g: self.fail(f'{g} ran'))
        self.assertEqual((why, said), ('', ''))
        self.assertEqual(covs['flat'][str(ROOT / 'kernel/cpu.c')].line_hits, {2269: 1})

    def test_stale_or_missing_tracefiles_are_made_again_and_said_so(self) -> None:
        self.tracefile('flat', 0, 'before')      # made from other sources
        ran: List[str] = []

        def run_guest(g: str) -> int:
            ran.append(g)
            self.tracefile(g, 5, 'now')
            return 0
        covs, why, said = self.fresh(run_guest)
        self.assertEqual((ran, why), (['flat', 'smt'], ''))
        self.assertEqual(len(said.splitlines()), 1, said)
        self.assertIn('flat (made from other sources than the tree holds now), smt (none yet)',
                      said)
        self.assertIn("running make coverage's run of each first", said)
        self.assertEqual(mutant_guests.route(mutant_guests.hunks(CHANGE), covs, ROOT, ORDER),
                         ['flat', 'smt'])

    def test_a_tracefile_without_its_sources_stamp_is_stale(self) -> None:
        self.tracefile('flat', 1, 'now')
        (self.infos['flat'].parent / buildstamp.COVERAGE_STAMP).unlink()
        self.assertEqual(mutant_guests.staleness(self.infos['flat'], 'now'),
                         'no record of the sources it was made from')
        self.assertEqual(mutant_guests.staleness(self.infos['smt'], 'now'), 'none yet')

    def test_a_red_coverage_run_ends_it(self) -> None:
        self.tracefile('flat', 1, 'now')
        covs, why, said = self.fresh(lambda g: 1)
        self.assertEqual(covs, {})
        self.assertIn("make coverage's run of the smt guest, unmutated, is red (exit 1", why)
        self.assertIn('smt (none yet)', said)


def tiny_tree(root: Path) -> Path:
    linux = root / 'linux'
    (linux / 'kernel').mkdir(parents=True)
    (linux / 'a.c').write_text('int a;\n')
    (linux / 'kernel' / 'cpu.c').write_text(''.join(f'int l{n};\n' for n in range(1, 11)))
    tree.git(linux, 'init', '-q')
    tree.git(linux, 'add', '-A')
    tree.git(linux, 'commit', '-q', '-m', 'baseline')
    return linux


MUTANT = '''# l5 is six
--- a/kernel/cpu.c
+++ b/kernel/cpu.c
@@ -4,3 +4,3 @@
 int l4;
-int l5;
+int l6;
 int l6;
'''


class RunUntilKilledTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.linux = tiny_tree(self.tmp)
        self.t = tree.Tree(kver='9.9', package='9.9.1-1', version='9.9.1', path=self.linux)
        self.patch = self.tmp / 'm.patch'
        self.patch.write_text(MUTANT)
        self.ran: List[str] = []

    def runner(self, red: Dict[str, verdict.Problem]) -> mutate.Runner:
        """A run.py that writes the verdict @red names for its topology (green otherwise)."""
        def run(spec: RunSpec, env: Dict[str, str]) -> int:
            guest = spec.topology
            self.ran.append(guest)
            self.assertIn('int l6;\nint l6;', (self.linux / 'kernel' / 'cpu.c').read_text())
            assert spec.out is not None
            out = spec.out
            out.mkdir(parents=True)
            problems = [red[guest]] if guest in red else []
            verdict.write_json(out / 'verdict.json', verdict.Verdict(problems=problems), {})
            return 1 if problems else 0
        return run

    def run_one(self, red: Dict[str, verdict.Problem], guests: Sequence[str]) -> mutreport.Outcome:
        o = mutate.run_one(self.patch, self.t, {g: RunSpec(topology=g) for g in guests},
                           self.tmp / 'out', self.runner(red))
        self.assertEqual((self.linux / 'kernel' / 'cpu.c').read_text().count('int l5;'), 1)
        return o

    def test_the_guests_in_order_until_one_kills_it(self) -> None:
        o = self.run_one({'smt': verdict.Problem('failed', 'cpuhp_sysfs.smt_control', 'x'),
                          'hotplug': verdict.Problem('timeout', '', 'hung')},
                         ['flat', 'smt', 'hotplug'])
        self.assertEqual(self.ran, ['flat', 'smt'])
        self.assertEqual((o.verdict, o.by, o.guest, o.road), ('killed', 'cpuhp_sysfs.smt_control',
                                                               'smt', 'flat'))
        self.assertEqual([(r.guest, r.verdict) for r in o.runs],
                         [('flat', 'survived'), ('smt', 'killed')])
        self.assertEqual(o.lines, 'kernel/cpu.c:5')
        self.assertTrue((self.tmp / 'out' / 'smt' / 'verdict.json').is_file())
        self.assertEqual(mutreport.note(o), 'on smt: cpuhp_sysfs.smt_control')

    def test_a_known_failure_gone_once_is_run_again(self) -> None:
        gone = verdict.Problem('known-not-seen', 'cpuhp_sysfs.smt_*', 'did not occur (x: y)')
        results: List[List[verdict.Problem]] = []

        def run(spec: RunSpec, env: Dict[str, str]) -> int:
            self.ran.append(spec.topology)
            assert spec.out is not None
            spec.out.mkdir(parents=True)
            verdict.write_json(spec.out / 'verdict.json',
                               verdict.Verdict(not_seen=results.pop(0)), {})
            return 0

        def outcome(first: List[verdict.Problem], second: List[verdict.Problem],
                    baseline_unmet: FrozenSet[str] = frozenset()) -> mutreport.Outcome:
            self.ran.clear()
            results[:] = [first, second]
            shutil.rmtree(self.tmp / 'out', ignore_errors=True)
            return mutate.run_one(self.patch, self.t, {'smt': RunSpec(topology='smt')},
                                  self.tmp / 'out', run, unmet={'smt': baseline_unmet})

        # Gone twice: killed, on the second run's word.
        o = outcome([gone], [gone])
        self.assertEqual((self.ran, o.verdict, o.by), (
            ['smt', 'smt'], 'killed', 'cpuhp_sysfs.smt_* (known failure did not occur)'))
        self.assertTrue((self.tmp / 'out' / 'smt-again' / 'verdict.json').is_file())
        # Gone once, met on the second run: a sample, not a kill.
        self.assertEqual(outcome([gone], []).verdict, 'survived')
        # Unmet by the unmutated run too: no kill, no second run.
        o = outcome([gone], [], frozenset({str(gone)}))
        self.assertEqual((self.ran, o.verdict), (['smt'], 'survived'))

    def test_survived_on_every_guest(self) -> None:
        o = self.run_one({}, ['smt', 'nosmt'])
        self.assertEqual(self.ran, ['smt', 'nosmt'])
        self.assertEqual((o.verdict, o.road), ('survived', 'smt'))
        self.assertEqual(mutreport.note(o), 'green on smt, nosmt')

    def test_a_mutant_that_does_not_build_runs_nowhere_else(self) -> None:
        o = self.run_one({'flat': verdict.Problem('build', '', 'the kernel did not build')},
                         ['flat', 'smt'])
        self.assertEqual((self.ran, o.verdict), (['flat'], 'invalid'))

    def test_not_covered_runs_nowhere(self) -> None:
        o = self.run_one({}, [])
        self.assertEqual((self.ran, o.verdict, o.road), ([], 'not-covered', 'none'))
        self.assertEqual(o.by, 'no guest reaches kernel/cpu.c:5')


class EachGuestsBaselineTest(unittest.TestCase):
    def test_each_guest_a_mutant_needs_gets_its_own_baseline_and_timeout(self) -> None:
        spec = RunSpec(kver='6.12', arch='x86_64', smp=4, config='default',
                       coverage_report=False)
        patches = [Path('a.patch'), Path('b.patch'), Path('c.patch')]
        chosen = {patches[0]: ['flat', 'nosmt'], patches[1]: ['nosmt'], patches[2]: []}
        baselines: List[str] = []
        guests: Dict[str, Dict[str, RunSpec]] = {}

        def baseline(g_spec: RunSpec, out: Path) -> Any:
            baselines.append(out.name)
            out.mkdir(parents=True, exist_ok=True)
            verdict.write_json(out / 'verdict.json', verdict.Verdict(), {})
            self.assertEqual(g_spec.timeout, mutate.BASELINE_TIMEOUT)
            return {'baseline': 20.0, 'baseline-nosmt': 50.0}[out.name], ''

        def run_one(patch: Path, t: Any, g: Dict[str, RunSpec], out: Path,
                    **_: Any) -> mutreport.Outcome:
            guests[patch.stem] = g
            return mutreport.Outcome(patch.stem, 'killed' if g else 'not-covered', 'x', 1.0, 'p',
                                  road=mutant_guests.road(list(g)))
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(execute, 'prepare_tree'), \
                mock.patch.object(mutate, 'out_base', return_value=Path(tmp)), \
                mock.patch.object(mutant_guests, 'routes', return_value=(chosen, '')), \
                mock.patch.object(mutate, 'baseline', side_effect=baseline), \
                mock.patch.object(mutate, 'run_one', side_effect=run_one), \
                contextlib.redirect_stdout(io.StringIO()) as said:
            rc = mutate.mutate(spec, None, patches, total=3)
        self.assertEqual(rc, 1)         # c is not covered
        self.assertEqual(baselines, ['baseline', 'baseline-nosmt'])
        self.assertEqual(list(guests['a']), ['flat', 'nosmt'])
        self.assertEqual(guests['c'], {})

        self.assertEqual([(g.topology, g.filter, g.timeout) for g in guests['a'].values()],
                         [('flat', '', 70), ('nosmt', 'cpuhp_sysfs.*', 130)])
        self.assertIn('guests by coverage: 1 mutant(s) first reached by flat, 1 mutant(s) first '
                      'reached by nosmt, 1 by none (not covered)', said.getvalue())


class GuestFilterTest(unittest.TestCase):
    def test_make_coverages_unless_given_but_maxcpus_its_own(self) -> None:
        self.assertEqual(mutant_guests.guest_filter('', 'nosmt'), 'cpuhp_sysfs.*')
        self.assertEqual(mutant_guests.guest_filter('x.*', 'nosmt'), 'x.*')
        self.assertEqual(mutant_guests.guest_filter('', 'flat'), '')
        self.assertEqual(mutant_guests.guest_filter('x.*', 'maxcpus'), 'cpuhp_sysfs.maxcpus_*')


class FixedGuestsTest(unittest.TestCase):
    def test_named_in_order(self) -> None:
        self.assertEqual(mutate.fixed_guests(''), [])
        self.assertEqual(mutate.fixed_guests('smt, flat'), ['smt', 'flat'])

    def test_unknown_or_twice_refused(self) -> None:
        with self.assertRaisesRegex(ValueError, 'no arm64 guest smt'):
            mutate.fixed_guests('flat,smt', 'arm64')
        with self.assertRaisesRegex(ValueError, 'named twice'):
            mutate.fixed_guests('flat,flat')

    def test_every_mutant_on_the_guests_named_and_no_tracefile(self) -> None:
        spec = RunSpec(kver='6.12', arch='x86_64', smp=4, config='default',
                       coverage_report=False)
        patches = [Path('a.patch'), Path('b.patch')]
        baselines: List[str] = []
        guests: Dict[str, List[str]] = {}

        def baseline(g_spec: RunSpec, out: Path) -> Any:
            baselines.append(out.name)
            out.mkdir(parents=True, exist_ok=True)
            verdict.write_json(out / 'verdict.json', verdict.Verdict(), {})
            return 20.0, ''

        def run_one(patch: Path, t: Any, g: Dict[str, RunSpec], out: Path,
                    **_: Any) -> mutreport.Outcome:
            guests[patch.stem] = list(g)
            return mutreport.Outcome(patch.stem, 'killed', 'x', 1.0, 'p',
                                  road=mutant_guests.road(list(g)))
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(execute, 'prepare_tree'), \
                mock.patch.object(mutate, 'out_base', return_value=Path(tmp)), \
                mock.patch.object(mutant_guests, 'routes') as routes, \
                mock.patch.object(mutate, 'baseline', side_effect=baseline), \
                mock.patch.object(mutate, 'run_one', side_effect=run_one), \
                contextlib.redirect_stdout(io.StringIO()) as said:
            rc = mutate.mutate(spec, None, patches, total=2, fixed=['smt', 'flat'])
        self.assertEqual(rc, 0)
        routes.assert_not_called()
        self.assertEqual(baselines, ['baseline-smt', 'baseline'])
        self.assertEqual(guests, {'a': ['smt', 'flat'], 'b': ['smt', 'flat']})
        self.assertIn('guests by GUESTS=: every mutant on smt, flat, in that order', said.getvalue())


class ReportTest(unittest.TestCase):
    @staticmethod
    def oc(name: str, v: str, road: str) -> mutreport.Outcome:
        runs = [] if v == 'not-covered' else [mutreport.GuestRun(road, v, 'c.x', 2.0)]
        return mutreport.Outcome(name, v, 'c.x', 2.0, 'p', road=road, runs=runs)

    def test_counts_per_road(self) -> None:
        outcomes = [self.oc('a', 'killed', 'smt'), self.oc('b', 'killed', 'flat'),
                    self.oc('c', 'survived', 'flat'), self.oc('d', 'not-covered', 'none'),
                    self.oc('e', 'invalid', 'hotplug'), self.oc('f', 'killed', 'flat'),
                    self.oc('g', 'error', 'smt')]
        zero = dict.fromkeys(mutreport.ROAD_COLUMNS, 0)
        self.assertEqual(mutreport.road_counts(outcomes), {
            'flat': {**zero, 'killed': 2, 'survived': 1},
            'smt': {**zero, 'killed': 1, 'other': 1},
            'hotplug': {**zero, 'invalid': 1},
            'none': {**zero, 'not-covered': 1}})
        with tempfile.TemporaryDirectory() as tmp, \
                contextlib.redirect_stdout(io.StringIO()) as said:
            rc = mutreport.report(outcomes, Path(tmp), {'kver': '6.12'})
            md = (Path(tmp) / 'report.md').read_text()
            data = json.loads((Path(tmp) / 'report.json').read_text())
            xml = junitparser.JUnitXml.fromfile(str(Path(tmp) / 'junit.xml'))
        self.assertEqual(rc, 1)
        self.assertIn('| flat | 2 | 1 | 0 | 0 | 0 |', md)
        self.assertIn('| none | 0 | 0 | 1 | 0 | 0 |', md)
        self.assertIn('| a | p | smt | smt killed 2 s | killed | on smt: c.x | 2 |', md)
        self.assertEqual(data['roads']['smt']['killed'], 1)
        self.assertEqual(data['outcomes'][0]['runs'][0]['guest'], 'smt')
        lines = said.getvalue().splitlines()
        self.assertIn('cpuhp-kunit: road flat: 2 killed, 1 survived, 0 not covered, 0 invalid, '
                      '0 other', lines)
        self.assertIn('3/7 killed, 1 survived, 1 not covered (d), 1 invalid', lines[-1])
        failed = {c.name: type(c.result[0]).__name__ for s in xml for c in s if c.result}
        self.assertEqual(failed, {'c': 'Failure', 'd': 'Failure', 'e': 'Error', 'g': 'Error'})

    def test_not_covered_alone_fails_make_mutate(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(mutreport.report([self.oc('a', 'killed', 'flat')], Path(tmp), {}), 0)
            self.assertEqual(mutreport.report([self.oc('a', 'killed', 'flat'),
                                            self.oc('d', 'not-covered', 'none')], Path(tmp), {}),
                             1)


if __name__ == '__main__':
    unittest.main()
