"""Tests for cpuhpk.verdict: no green by mistake, and what CI reads (195132d)."""

from __future__ import annotations

import fnmatch
import importlib
import re
import tempfile
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from cpuhpk import judging, junit, ktap, kunitspec, verdict
from cpuhpk.paths import REPO
from tests import recorded

DATA = Path(__file__).parent / 'data'
KUNIT = REPO / 'kunit'
# Debian's python3-junitparser: a real JUnit consumer, not our own reader.
junitparser: Any = importlib.import_module('junitparser')

WARN = ('WARNING: CPU: 1 PID: 42 at kernel/cpu.c:2299 cpuhp_reserve_state+0x5e/0x80')


def console(name: str) -> ktap.Console:
    return ktap.read_console(DATA / name)


def expectations(filter_glob: str = '', smp: str = '4') -> kunitspec.Expectations:
    return recorded.expectations(filter_glob, {'kver': '6.12', 'config': 'default',
                                               'smp': smp})


def judge(lines: List[str], exp: Optional[kunitspec.Expectations] = None) -> verdict.Verdict:
    return judging.judge_console(ktap.Console(lines=lines), exp or kunitspec.Expectations())[2]


def recorded_run(config: str, kver: str = '6.12', smp: str = '4') -> kunitspec.Expectations:
    """What a whole make run on 6.12.118 (or @kver) with @config expects: the real tables."""
    return kunitspec.Expectations(
        skips=kunitspec.read_expected_skips(KUNIT / 'expected-skips'),
        known=kunitspec.read_known_failures(KUNIT / f'known-failures-{kver}'),
        context={'kver': kver, 'config': config, 'smp': smp, 'fixes': '0'})


def categories(v: verdict.Verdict) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for p in v.problems:
        out.setdefault(p.category, []).append(p.name)
    return out


def junit_counts(lines: List[str], exp: Optional[kunitspec.Expectations] = None,
                 extra: Optional[List[verdict.Problem]] = None) -> Dict[str, int]:
    """Write junit.xml of a console and read it back with junitparser."""
    start, root, v = judging.judge_console(ktap.Console(lines=lines),
                                           exp or kunitspec.Expectations())
    v.problems += extra or []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'junit.xml'
        junit.write(path, root, v)
        xml = junitparser.JUnitXml.fromfile(str(path))
        counts = {'tests': 0, 'failures': 0, 'errors': 0, 'skipped': 0}
        for suite in xml:
            for case in suite:
                counts['tests'] += 1
                for r in case.result:
                    key = {'Failure': 'failures', 'Error': 'errors',
                           'Skipped': 'skipped'}[type(r).__name__]
                    counts[key] += 1
        return counts


# A suite whose last case has parameters; the console stops right after a
# passing parameter (QEMU exited, triple fault with -no-reboot).
CUT_AFTER_PARAM = ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s',
                   '    1..2', '    ok 1 plain', '        KTAP version 1',
                   '        # Subtest: p', '        ok 1 first']


class FalsePassTest(unittest.TestCase):
    def test_console_stopping_after_a_passing_parameter(self) -> None:
        v = judge(CUT_AFTER_PARAM)
        self.assertFalse(v.ok)
        self.assertEqual(categories(v)['crashed'], ['s', 's.p'])
        self.assertGreaterEqual(junit_counts(CUT_AFTER_PARAM)['errors'], 2)

    def test_recorded_console_cut_after_a_parameter(self) -> None:
        v = judging.judge_console(console('crafted_cut_after_param.log'), expectations())[2]
        self.assertIn('cpuhp_install.cpuhp_install_multi_instance', categories(v)['crashed'])
        self.assertFalse(v.ok)

    def test_whole_recorded_run_is_green(self) -> None:
        for name in ('pass_default_console.log', 'pass_debug_console.log'):
            with self.subTest(name=name):
                v = judging.judge_console(console(name), expectations())[2]
                self.assertEqual(v.problems, [])
                self.assertEqual((v.passed, v.failed, v.skipped), (44, 0, 0))

    def test_missing_suite_and_case(self) -> None:
        exp = expectations()
        assert exp.cases is not None
        exp.cases['cpuhp_sweep'] = ['cpuhp_sweep_up']
        exp.cases['cpuhp_rollback'] = exp.cases['cpuhp_rollback'] + ['cpuhp_rollback_new']
        v = judging.judge_console(console('pass_default_console.log'), exp)[2]
        self.assertEqual(sorted(categories(v)['missing']),
                         ['cpuhp_rollback.cpuhp_rollback_new', 'cpuhp_sweep'])
        self.assertEqual(v.missing, 2)

    def test_fewer_parameters_than_kunit_counted(self) -> None:
        lines = ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s',
                 '    1..1', '        KTAP version 1', '        # Subtest: p',
                 '        ok 1 a', '    # p: pass:2 fail:0 skip:0 total:2', '    ok 1 p',
                 'ok 1 s']
        v = judge(lines)
        self.assertEqual(categories(v), {'missing': ['s.p']})

    def test_filter_that_matches_nothing(self) -> None:
        self.assertEqual(kunitspec.filtered(kunitspec.declared_cases(KUNIT), 'nosuch.*'), {})
        v = judge(['KTAP version 1', '1..0'], expectations('nosuch.*'))
        self.assertEqual(categories(v), {'missing': ['']})
        self.assertIn('the filter selects no case', v.problems[0].message)

    def test_filter_selects_cases(self) -> None:
        got = kunitspec.filtered(kunitspec.declared_cases(KUNIT), 'cpuhp_rollback.*trace*')
        self.assertEqual(got, {'cpuhp_rollback': ['cpuhp_rollback_trace_up',
                                                  'cpuhp_rollback_trace_down',
                                                  'cpuhp_rollback_trace_multi']})

    def test_declared_cases_of_the_sources(self) -> None:
        got = kunitspec.declared_cases(KUNIT)
        # Counted another way: the KUNIT_CASE lines of each file, by its suite name.
        # A file of several suites: their names, and their cases together.
        names, want, have = set(), {}, {}
        for src in KUNIT.glob('*_kunit.c'):
            text = src.read_text()
            suites = re.findall(r'\.name = "(\w+)"', text)
            assert suites
            names |= set(suites)
            want[src.name] = len(re.findall(r'^\s*KUNIT_CASE', text, re.M))
            have[src.name] = sum(len(got.get(s, [])) for s in suites)
        self.assertEqual(set(got), names)
        self.assertEqual(have, want)
        self.assertIn('cpuhp_rollback_trace_multi', got['cpuhp_rollback'])

    def test_userspace_tests_are_declared_too(self) -> None:
        got = kunitspec.declared_cases(KUNIT, userspace=True)
        self.assertEqual(got['cpuhp_sysfs'][:2], ['states_lists_the_table',
                                                  'target_down_and_up'])
        self.assertNotIn('cpuhp_sysfs', kunitspec.declared_cases(KUNIT))

    def test_ok_after_an_empty_parameter_block(self) -> None:
        lines = ['KTAP version 1', '1..1', '  # Subtest: suite', '  1..1',
                 '    # Subtest: case', '  ok 1 - case', 'ok 1 - suite']
        self.assertEqual(categories(judge(lines)), {'missing': ['suite.case']})


class SkipTest(unittest.TestCase):
    SKIPPED = ['KTAP version 1', '1..1', '    KTAP version 1',
               '    # Subtest: timekeeping_crosststamp', '    1..1',
               '    ok 1 crosststamp_generic_id # SKIP no TSC of known frequency to back a '
               'test clocksource', 'ok 1 timekeeping_crosststamp']

    def test_no_tsc_is_not_a_green_row_of_skips(self) -> None:
        v = judge(self.SKIPPED, expectations('timekeeping_crosststamp.crosststamp_generic_id'))
        self.assertEqual(categories(v), {'unexpected-skip':
                                         ['timekeeping_crosststamp.crosststamp_generic_id']})
        self.assertEqual(v.skips[0].reason,
                         'no TSC of known frequency to back a test clocksource')
        self.assertFalse(v.skips[0].expected)
        self.assertEqual(junit_counts(self.SKIPPED)['failures'], 1)

    def test_expected_skip_with_one_cpu(self) -> None:
        lines = ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: cpuhp_rollback',
                 '    1..1', '    ok 1 cpuhp_rollback_up_ap_fails # SKIP needs two online CPUs',
                 'ok 1 cpuhp_rollback']
        exp = expectations('cpuhp_rollback.cpuhp_rollback_up_ap_fails', smp='1')
        v = judge(lines, exp)
        self.assertEqual(v.problems, [])
        self.assertTrue(v.skips[0].expected)
        self.assertIn('SMP=1', v.skips[0].why)
        # The same skip with four CPUs is not expected.
        exp = expectations('cpuhp_rollback.cpuhp_rollback_up_ap_fails', smp='4')
        self.assertEqual(list(categories(judge(lines, exp))), ['unexpected-skip'])

    def test_skip_without_reason(self) -> None:
        v = judge(['KTAP version 1', '1..1', 'ok 1 s # SKIP'])
        self.assertIn('without a stated reason', v.problems[0].message)

    def test_table_errors(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / 'expected-skips'
            for text in ('a | b\n', 'a.* | cpu=x86 | r | w\n'):
                path.write_text(text)
                with self.assertRaises(ValueError):
                    kunitspec.read_expected_skips(path)


class KernelLogTest(unittest.TestCase):
    """A kernel report is pinned on the case during which it was printed."""

    def lines(self) -> List[str]:
        return ['boot', 'KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s',
                '    1..2', '    ok 1 a', WARN, '---[ end trace 0000000000000000 ]---',
                '    ok 2 b', 'ok 1 s']

    def test_warning_during_a_case(self) -> None:
        v = judge(self.lines())
        self.assertEqual(categories(v), {'kernel-log': ['s.b']})
        self.assertIn('end trace', v.problems[0].detail)
        counts = junit_counts(self.lines())
        self.assertEqual((counts['failures'], counts['errors']), (1, 0))

    def test_warning_outside_every_case(self) -> None:
        for at, where in ((1, 'boot'), (10, 'suite init/exit'), (11, 'after the suites')):
            with self.subTest(where=where):
                lines = self.lines()
                lines.insert(at, WARN)
                v = judge(lines)
                run_level = [p for p in v.problems if p.category == 'kernel-log' and not p.name]
                self.assertEqual(len(run_level), 1, v.problems)
                self.assertIn(where.split()[0], run_level[0].message)
                self.assertGreaterEqual(junit_counts(lines)['errors'], 1)

    def test_warning_in_a_parameter(self) -> None:
        lines = ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s', '    1..1',
                 '        KTAP version 1', '        # Subtest: p', '        ok 1 x', WARN,
                 '        ok 2 y', '    ok 1 p', 'ok 1 s']
        self.assertEqual(categories(judge(lines)), {'kernel-log': ['s.p.y']})

    def test_declared_report_stays_green(self) -> None:
        lines = self.lines()
        lines[7:9] = ['cpuhp_kunit: expect report: cpuhp_reserve_state', WARN,
                      'cpuhp_kunit: expect end']
        self.assertTrue(judge(lines).ok)

    def test_recorded_warning_run(self) -> None:
        # A real WARNING in cpuhp_rollback_freeze_fails (crafted: see the file's head).
        start, root, v = judging.judge_console(console('crafted_warning_in_case.log'),
                                               expectations())
        self.assertEqual(categories(v),
                         {'kernel-log': ['cpuhp_rollback.cpuhp_rollback_freeze_fails']})


class KnownFailureTest(unittest.TestCase):
    LINES = ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s', '    1..2',
             '    # a: EXPECTATION FAILED at x.c:1', '    not ok 1 a', '    ok 2 b', 'not ok 1 s']

    def exp(self, strict: bool = False, fixes: str = '0') -> kunitspec.Expectations:
        return kunitspec.Expectations(
            known=[kunitspec.KnownFailure('s.a', {'kver': '6.12', 'fixes': '0'}, 'a finding',
                                          failed='FAILED at x.c:1')],
            strict=strict, context={'kver': '6.12', 'fixes': fixes})

    def test_known_failure_is_listed_not_red(self) -> None:
        start, root, v = judging.judge_console(ktap.Console(lines=self.LINES), self.exp())
        self.assertTrue(v.ok)
        self.assertEqual([p.name for p in v.known], ['s.a'])
        self.assertIn('known failure: a finding', v.known[0].message)
        self.assertEqual(v.closing_counts(), (1, 0, 0, 1))
        cases = {c.get('name'): c for c in junit.junit(root, v).getroot().iter('testcase')}
        skipped = cases['a'].find('skipped')
        assert skipped is not None
        self.assertIn('known failure', skipped.get('message', ''))

    def test_strict_makes_it_red(self) -> None:
        v = judging.judge_console(ktap.Console(lines=self.LINES), self.exp(strict=True))[2]
        self.assertEqual([(p.category, p.name) for p in v.problems], [('failed', 's.a')])
        self.assertEqual(v.known, [])

    def test_only_where_the_table_says(self) -> None:
        # With our fixes applied the finding must be gone: a failure is red.
        v = judging.judge_console(ktap.Console(lines=self.LINES), self.exp(fixes='1'))[2]
        self.assertFalse(v.ok)

    def test_the_real_table_parses(self) -> None:
        self.assertTrue(kunitspec.read_known_failures(KUNIT / 'known-failures-6.12'))

    def test_the_rcu_race_whichever_compiler_built_the_kernel(self) -> None:
        # Finding 08's WARN is in __call_rcu_common() (gcc) or, inlined, in
        # call_rcu() (clang, MAKE_OPTIONS=LLVM=1): both lines are the race.
        lines = {'6.12': ('WARNING: CPU: 3 PID: 30 at kernel/rcu/tree.c:3106 '
                          '__call_rcu_common.constprop.0+0x381/0x3b0',
                          'WARNING: CPU: 3 PID: 30 at kernel/rcu/tree.c:3106 '
                          'call_rcu+0x39a/0x3d0'),
                 '6.1': ('WARNING: CPU: 3 PID: 25 at kernel/rcu/tree.c:2856 '
                         'call_rcu+0x398/0x3c0',)}
        for kver, warns in lines.items():
            races = [k for k in kunitspec.read_known_failures(KUNIT / f'known-failures-{kver}')
                     if k.race and 'rcu/tree' in k.report]
            for line in warns:
                with self.subTest(kver=kver, line=line):
                    self.assertEqual(len(races), 1)
                    self.assertTrue(kunitspec.glob_search(races[0].report, line))


class FixesCoverTest(unittest.TestCase):
    """The tables say which of our fixes covers which entry (src/<KVER>/fixes/NNNN).

    An entry a fix covers applies with fixes=0 only: under FIXES=1 its failure
    is red, and without the fix a run where it did not occur says so. Every
    fix of a series covers at least one entry: a fix nothing proves is not
    kept.
    """
    FIX = re.compile(r'src/(?:<KVER>|[0-9.]+)/fixes/(\d{4})')

    def entries(self, kver: str) -> List[Tuple[str, Dict[str, str], str]]:
        known = kunitspec.read_known_failures(KUNIT / f'known-failures-{kver}')
        skips = [s for s in kunitspec.read_expected_skips(KUNIT / 'expected-skips')
                 if fnmatch.fnmatchcase(kver, s.when.get('kver', '*'))]
        return ([(k.case, k.when, k.why) for k in known] +
                [(s.case, s.when, s.why) for s in skips])

    def test_each_fix_covers_entries_that_apply_without_it(self) -> None:
        for kver in ('6.12', '6.1'):
            series = (REPO / 'src' / kver / 'fixes' / 'series').read_text().split()
            numbers = {name[:4] for name in series}
            named = set()
            for case, when, why in self.entries(kver):
                refs = self.FIX.findall(why)
                with self.subTest(kver=kver, case=case, why=why[:60]):
                    self.assertEqual(bool(refs), when.get('fixes') == '0',
                                     'an entry names its fix exactly when it applies with fixes=0')
                    self.assertLessEqual(set(refs), numbers, f'src/{kver}/fixes/series')
                named |= set(refs)
            with self.subTest(kver=kver):
                self.assertEqual(named, numbers, 'every fix covers an entry of the tables')


class KnownReportTest(unittest.TestCase):
    """A known failure by report= covers that kernel report only, in any case it lists."""
    # The report as the upstream vmstat fix (adcfb264c3ed, reverted, then 9fd8fcf171dc) quotes it, inside case b; CI hit it
    # in cpuhp_sweep_target.down 152 block/mq:online on the debug kernel.
    def lines(self, caller: str) -> List[str]:
        return ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s', '    1..2',
                '    ok 1 a',
                'BUG: using smp_processor_id() in preemptible [00000000] code: kworker/3:1/45',
                f'caller is {caller}+0x235/0x5f0',
                'CPU: 0 UID: 0 PID: 45 Comm: kworker/3:1 Tainted: G N 6.12.118 #1',
                'Workqueue: mm_percpu_wq vmstat_update', 'Call Trace:', ' <TASK>',
                ' dump_stack_lvl+0x8d/0xb0', ' check_preemption_disabled+0xce/0xe0',
                f' {caller}+0x235/0x5f0', ' vmstat_update+0x17/0xa0', ' </TASK>',
                '    ok 2 b', 'ok 1 s']

    def exp(self, strict: bool = False) -> kunitspec.Expectations:
        return kunitspec.Expectations(
            known=[kunitspec.KnownFailure('s.*', {'config': 'debug'}, 'vmstat race',
                                          report='caller is refresh_cpu_vm_stats+')],
            strict=strict, context={'config': 'debug'})

    def test_the_named_report_is_known(self) -> None:
        v = judging.judge_console(ktap.Console(lines=self.lines('refresh_cpu_vm_stats')),
                                  self.exp())[2]
        self.assertTrue(v.ok, v.problems)
        self.assertEqual([(p.category, p.name) for p in v.known], [('kernel-log', 's.b')])

    def test_another_report_in_the_same_case_is_red(self) -> None:
        # Same BUG line, another caller: not the finding, so not covered,
        # although the trace further down names refresh_cpu_vm_stats's caller.
        v = judging.judge_console(ktap.Console(lines=self.lines('drain_local_pages')),
                                  self.exp())[2]
        self.assertEqual([(p.category, p.name) for p in v.problems], [('kernel-log', 's.b')])

    def test_a_failed_case_is_not_covered_by_a_report_entry(self) -> None:
        lines = KnownFailureTest.LINES
        v = judging.judge_console(ktap.Console(lines=lines), self.exp())[2]
        self.assertEqual([(p.category, p.name) for p in v.problems], [('failed', 's.a')])

    def test_strict_makes_it_red(self) -> None:
        v = judging.judge_console(ktap.Console(lines=self.lines('refresh_cpu_vm_stats')),
                                  self.exp(strict=True))[2]
        self.assertFalse(v.ok)

    def test_recorded_debug_run_with_the_race(self) -> None:
        # make run CONFIG=debug on 6.12.118 that hit the race (unedited).
        exp = recorded_run('debug')
        v = judging.judge_console(console('vmstat_race_debug_console.log'), exp)[2]
        self.assertTrue(v.ok, [str(p) for p in v.problems])
        race = [p for p in v.known if 'refresh_cpu_vm_stats' in p.detail]
        self.assertEqual([(p.category, p.name) for p in race],
                         [('kernel-log', 'cpuhp_sweep.cpuhp_sweep_target.down 152 block/mq:online')])
        exp.strict = True
        v = judging.judge_console(console('vmstat_race_debug_console.log'), exp)[2]
        self.assertIn(('kernel-log', 'cpuhp_sweep.cpuhp_sweep_target.down 152 block/mq:online'),
                      [(p.category, p.name) for p in v.problems])

    def test_recorded_vmstat_race_from_both_callers(self) -> None:
        # CONFIG=debug, 57843b7: the race reported twice from
        # refresh_cpu_vm_stats() and once from vmstat_update() itself.
        exp = recorded_run('debug')
        v = judging.judge_console(console('vmstat_race2_debug_console.log'), exp)[2]
        self.assertTrue(v.ok, [str(p) for p in v.problems])
        self.assertEqual(len([p for p in v.known if 'smp_processor_id' in p.message]), 3)
        exp.known = [k for k in exp.known if 'vmstat_update' not in k.report]
        v = judging.judge_console(console('vmstat_race2_debug_console.log'), exp)[2]
        self.assertEqual([p.category for p in v.problems], ['kernel-log'])

    def test_recorded_rss_counter_race_is_known_by_its_report(self) -> None:
        # CONFIG=rt, 478c107+: two 'BUG: Bad rss-counter state' while CPU 3
        # rested at workqueue:prepare during the sysfs target test.
        exp = recorded_run('rt')
        v = judging.judge_console(console('rss_counter_rt_console.log'), exp)[2]
        self.assertTrue(v.ok, [str(p) for p in v.problems])
        self.assertEqual([p.name for p in v.known if 'rss-counter' in p.message],
                         ['cpuhp_sysfs.target_down_and_up'] * 2)
        exp.known = [k for k in exp.known if 'rss-counter' not in k.report]
        v = judging.judge_console(console('rss_counter_rt_console.log'), exp)[2]
        self.assertEqual([p.category for p in v.problems], ['kernel-log', 'kernel-log'])

    def test_recorded_smp2_prepare_rest_is_known_at_2_cpus_only(self) -> None:
        # make run SMP=2 on 6.12.118 and 6.1.192 (Documentation/findings/12-...):
        # CPU 1 resting offline at a PREPARE state cannot go down (-EBUSY).
        case = 'cpuhp_rollback.cpuhp_rollback_partial_target.offline_up_to_prepare_state'
        for kver in ('6.12', '6.1'):
            with self.subTest(kver=kver):
                log = console(f'smp2_{kver}_console.log')
                v = judging.judge_console(log, recorded_run('default', kver, '2'))[2]
                self.assertTrue(v.ok, [str(p) for p in v.problems])
                self.assertIn(case, [p.name for p in v.known])
                # The entry covers only what it names: not the same kernel at 4 CPUs.
                v = judging.judge_console(log, recorded_run('default', kver, '4'))[2]
                self.assertIn(case, [p.name for p in v.problems])
                exp = recorded_run('default', kver, '2')
                exp.known = [k for k in exp.known if k.case != case]
                v = judging.judge_console(log, exp)[2]
                self.assertIn(case, [p.name for p in v.problems])

    def test_recorded_crosststamp_after_wrap_is_known_without_fixes(self) -> None:
        # make coverage on 6.12.118 and 6.1.192 (Documentation/findings/13-...):
        # after a 32-bit wrap a counter value before the interval is taken as in it.
        case = 'timekeeping_crosststamp.crosststamp_history_after_wrap'
        for kver in ('6.12', '6.1'):
            with self.subTest(kver=kver):
                log = console(f'crosststamp_wrap_{kver}_console.log')
                v = judging.judge_console(log, recorded_run('default', kver))[2]
                self.assertTrue(v.ok, [str(p) for p in v.problems])
                self.assertIn(case, [p.name for p in v.known])
                # With our fix applied the same failure is red.
                exp = recorded_run('default', kver)
                exp.context['fixes'] = '1'
                v = judging.judge_console(log, exp)[2]
                self.assertIn(case, [p.name for p in v.problems])

    def test_report_is_only_for_known_failures(self) -> None:
        with self.assertRaises(ValueError):
            kunitspec._when('report=x', 'expected-skips:1')


class JunitTest(unittest.TestCase):
    def test_every_cause_is_red_in_junit(self) -> None:
        """No problem category leaves junit.xml without a failure or error."""
        passing = (DATA / 'pass_default_console.log').read_text().splitlines()
        for category in verdict.CATEGORIES:
            with self.subTest(category=category):
                counts = junit_counts(passing, extra=[verdict.Problem(category, '', 'x')])
                self.assertGreaterEqual(counts['failures'] + counts['errors'], 1)
                counts = junit_counts(passing, extra=[verdict.Problem(
                    category, 'cpuhp_rollback.cpuhp_rollback_cycles', 'x')])
                self.assertGreaterEqual(counts['failures'] + counts['errors'], 1)

    def test_recorded_run_in_junit(self) -> None:
        counts = junit_counts((DATA / 'pass_default_console.log').read_text().splitlines(),
                              expectations())
        self.assertEqual(counts, {'tests': 44, 'failures': 0, 'errors': 0, 'skipped': 0})

    def test_names_are_not_repeated(self) -> None:
        start, root, v = judging.judge_console(console('pass_default_console.log'),
                                               expectations())
        cases = list(junit.junit(root, v).getroot().iter('testcase'))
        self.assertIn(('timekeeping_crosststamp', 'crosststamp_driver_error.-16'),
                      [(c.get('classname'), c.get('name')) for c in cases])
        for c in cases:
            self.assertFalse((c.get('name') or '').startswith(f'{c.get("classname")}.'))

    def test_control_characters(self) -> None:
        lines = ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s', '    1..1',
                 '    # a: EXPECTATION FAILED \x1b[31mred\x1b[0m \x00 nul \x07',
                 '    not ok 1 a', 'not ok 1 s']
        self.assertEqual(junit_counts(lines)['failures'], 1)

    def test_missing_case_is_an_error_in_its_suite(self) -> None:
        exp = kunitspec.Expectations(cases={'s': ['a', 'b']})
        lines = ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s', '    1..1',
                 '    ok 1 a', 'ok 1 s']
        start, root, v = judging.judge_console(ktap.Console(lines=lines), exp)
        cases = {c.get('name'): c for c in junit.junit(root, v).getroot().iter('testcase')}
        self.assertIsNotNone(cases['b'].find('error'))

    def test_verdict_json_roundtrip(self) -> None:
        v = judge(self.lines_with_failure())
        with tempfile.TemporaryDirectory() as tmp:
            verdict.write_json(Path(tmp) / 'v.json', v, {'kver': '6.12'})
            back, context = verdict.read_json(Path(tmp) / 'v.json')
        self.assertEqual((back.problems, back.counts(), context), (v.problems, v.counts(),
                                                                   {'kver': '6.12'}))

    @staticmethod
    def lines_with_failure() -> List[str]:
        return ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s', '    1..1',
                '    # a: EXPECTATION FAILED at x.c:1', '    not ok 1 a', 'not ok 1 s']


if __name__ == '__main__':
    unittest.main()


class Kernel61Test(unittest.TestCase):
    """What the first run on Debian 12's 6.1.192 showed the verdict (recorded, unedited)."""

    def setUp(self) -> None:
        self.console = console('first_default_6.1_console.log')
        self.root = ktap.parse(ktap.extract(self.console.lines))

    def test_subtest_line_with_console_text_appended(self) -> None:
        # 6.1 prints ' #3' with pr_cont() when CPU 3 comes up: it landed on
        # '# Subtest: cpuhp_sweep_rollback'. Read as the name, the block's 112
        # results were lost and the case counted as one pass.
        sweep = next(s for s in self.root.subtests if s.name == 'cpuhp_sweep')
        rollback = next(c for c in sweep.subtests if c.name == 'cpuhp_sweep_rollback')
        self.assertEqual(len(rollback.subtests), 112)

    def test_skips_printed_as_ok_are_red(self) -> None:
        # 6.1's KUnit prints a skipped parameter as 'ok', without SKIP and
        # reason; only its count line says skip:N.
        v = judging.judge_console(self.console, kunitspec.Expectations())[2]
        hidden = {p.name: p.message for p in v.problems if p.category == 'unexpected-skip'}
        self.assertEqual(sorted(hidden), ['cpuhp_sweep.cpuhp_sweep_rollback',
                                          'cpuhp_sweep.cpuhp_sweep_target',
                                          'timekeeping_crosststamp.crosststamp_base_clock'])
        self.assertIn('KUnit counted 73 skipped results, 0 were printed as skipped',
                      hidden['cpuhp_sweep.cpuhp_sweep_rollback'])

    def test_failure_printed_as_ok_is_red(self) -> None:
        lines = ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s', '    1..1',
                 '        KTAP version 1', '        # Subtest: c', '        ok 1 p1',
                 '        ok 2 p2', '    # c: pass:1 fail:1 skip:0 total:2', '    ok 1 c',
                 '# s: pass:1 fail:0 skip:0 total:1', 'ok 1 s']
        self.assertEqual(categories(judge(lines)), {'failed': ['s.c']})
