"""Tests for cpuhpk.ktap on recorded console logs (tests/data/)."""

from __future__ import annotations

import unittest
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict

from cpuhpk import ktap

DATA = Path(__file__).parent / 'data'


def load(name: str) -> ktap.Test:
    return ktap.parse(ktap.extract((DATA / name).read_text().splitlines()))


def statuses(root: ktap.Test) -> Dict[str, ktap.Status]:
    return {name: t.status for name, t in ktap.cases(root)}


def junit_cases(root: ktap.Test) -> Dict[str, ET.Element]:
    tree = ktap.junit(root)
    return {tc.get('name', ''): tc for tc in tree.getroot().iter('testcase')}


class ExtractTest(unittest.TestCase):
    def test_starts_at_version_and_strips_prefix(self) -> None:
        lines = ['[    1.000000] boot noise', '[    1.100000] KTAP version 1',
                 '[    1.100000] 1..1', '[    1.200000]     ok 1 case']
        self.assertEqual(ktap.extract(lines), ['KTAP version 1', '1..1', '    ok 1 case'])

    def test_stops_where_kunit_py_stops(self) -> None:
        lines = ['KTAP version 1', '1..1', 'ok 1 s', 'reboot: System halted', 'ok 2 x']
        self.assertEqual(ktap.extract(lines), ['KTAP version 1', '1..1', 'ok 1 s'])

    def test_no_ktap(self) -> None:
        self.assertEqual(ktap.extract(['just a boot log']), [])


class ParseTest(unittest.TestCase):
    def test_all_pass_with_parameters(self) -> None:
        root = load('pass_console.log')
        got = statuses(root)
        self.assertEqual(len(got), 9)
        self.assertEqual(set(got.values()), {ktap.Status.PASS})
        self.assertIn('timekeeping_crosststamp.crosststamp_driver_error.-16', got)
        self.assertIn('timekeeping_crosststamp.crosststamp_history_clocksource_changed', got)
        self.assertNotIn('timekeeping_crosststamp.crosststamp_driver_error', got)
        self.assertTrue(ktap.verdict(root).ok)

    def test_kernel_messages_are_diagnostics_of_the_running_case(self) -> None:
        cases = dict(ktap.cases(load('pass_console.log')))
        diags = cases['timekeeping_crosststamp.crosststamp_generic_id'].diagnostics
        self.assertIn('clocksource: Switched to clocksource crosststamp_test0', diags)

    def test_failure_keeps_diagnostics(self) -> None:
        root = load('fail_console.log')
        cases = dict(ktap.cases(root))
        failed = cases['timekeeping_crosststamp.crosststamp_current_clocksource']
        self.assertIs(failed.status, ktap.Status.FAIL)
        self.assertIn('Expected xt.sys_realtime == dev.now.real, but', failed.diagnostics)
        self.assertIn('xt.sys_realtime == 1111012074 (0x4238c1ea)', failed.diagnostics)
        v = ktap.verdict(root)
        self.assertEqual((v.passed, v.failed), (8, 1))
        self.assertFalse(v.ok)

    def test_parameter_failure_diagnostics(self) -> None:
        # KUnit prints a parameter's failure at the case's indentation.
        root = load('param_fail_console.log')
        cases = dict(ktap.cases(root))
        name = 'timekeeping_crosststamp.crosststamp_driver_error.'
        self.assertEqual([cases[name + e].status for e in ('-16', '-95', '-110', '-5')],
                         [ktap.Status.FAIL] * 3 + [ktap.Status.PASS])
        self.assertIn('*err == -95 (0xffffffffffffffa1)', cases[name + '-95'].diagnostics)
        self.assertNotIn('*err == -16 (0xfffffffffffffff0)', cases[name + '-95'].diagnostics)
        self.assertEqual(ktap.verdict(root).failed, 3)

    def test_skips_need_a_reason(self) -> None:
        root = load('skip_console.log')
        cases = dict(ktap.cases(root))
        skipped = cases['timekeeping_crosststamp.crosststamp_generic_id']
        self.assertIs(skipped.status, ktap.Status.SKIP)
        self.assertTrue(skipped.reason.startswith('no TSC'))
        v = ktap.verdict(root)
        self.assertEqual(v.skipped, 2)
        self.assertEqual(v.problems,
                         ['timekeeping_crosststamp.crosststamp_driver_error.-110: '
                          'skipped without a stated reason'])

    def test_crash_mid_suite(self) -> None:
        root = load('crash_console.log')
        got = statuses(root)
        v = ktap.verdict(root)
        # Cases 1-4 passed; 5 was running (its output is kept), 6 never ran.
        self.assertEqual((v.passed, v.crashed), (7, 2))
        self.assertFalse(v.ok)
        crashed = [n for n, s in got.items() if s is ktap.Status.CRASHED]
        self.assertEqual(crashed, ['timekeeping_crosststamp.#5', 'timekeeping_crosststamp.#6'])
        running = dict(ktap.cases(root))['timekeeping_crosststamp.#5']
        self.assertIn('Kernel panic - not syncing: Fatal exception', running.diagnostics)

    def test_crash_inside_a_parameterised_case(self) -> None:
        lines = ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s', '    1..2',
                 '        KTAP version 1', '        # Subtest: p', '        ok 1 a']
        root = ktap.parse(lines)
        got = statuses(root)
        self.assertEqual(got['s.p.a'], ktap.Status.PASS)
        self.assertEqual(got['s.#2'], ktap.Status.CRASHED)
        self.assertEqual(ktap.verdict(root).crashed, 1)

    def test_no_results_is_not_a_pass(self) -> None:
        v = ktap.verdict(ktap.parse(ktap.extract(['Kernel panic - not syncing: boom'])))
        self.assertFalse(v.ok)
        self.assertIn('no KUnit case ran', v.problems[0])

    def test_old_tap_with_tabs_and_hyphens(self) -> None:
        lines = ['TAP version 14', '1..1', '\t# Subtest: old', '\t1..2', '\tok 1 - a',
                 '\tnot ok 2 - b', 'not ok 1 - old']
        self.assertEqual(statuses(ktap.parse(lines)),
                         {'old.a': ktap.Status.PASS, 'old.b': ktap.Status.FAIL})


class JunitTest(unittest.TestCase):
    def test_counts_and_elements(self) -> None:
        root = ktap.junit(load('fail_console.log')).getroot()
        self.assertEqual((root.get('tests'), root.get('failures'), root.get('errors')),
                         ('9', '1', '0'))
        tc = junit_cases(load('fail_console.log'))[
            'timekeeping_crosststamp.crosststamp_current_clocksource']
        failure = tc.find('failure')
        assert failure is not None
        self.assertIn('EXPECTATION FAILED', failure.get('message', ''))
        self.assertIn('dev.now.real ==', failure.text or '')

    def test_skipped_and_crashed(self) -> None:
        tc = junit_cases(load('skip_console.log'))['timekeeping_crosststamp.crosststamp_generic_id']
        skipped = tc.find('skipped')
        assert skipped is not None
        self.assertTrue(skipped.get('message', '').startswith('no TSC'))
        tc = junit_cases(load('crash_console.log'))['timekeeping_crosststamp.#6']
        error = tc.find('error')
        assert error is not None
        self.assertIn('crashed', error.get('message', ''))

    def test_parameter_names(self) -> None:
        names = list(junit_cases(load('pass_console.log')))
        self.assertEqual(names[:4], [f'timekeeping_crosststamp.crosststamp_driver_error.{e}'
                                     for e in ('-16', '-95', '-110', '-5')])


if __name__ == '__main__':
    unittest.main()
