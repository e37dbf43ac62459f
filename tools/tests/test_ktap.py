"""Tests for cpuhpk.ktap on recorded console logs (tests/data/).

Recorded, unedited (6.12.118, SMP=4): pass_default_console.log and
pass_debug_console.log (make run, make run CONFIG=debug), coverage_console.log
(make coverage), and three mutant runs of make mutate: fail_mutant (a case
fails), param_fail_mutant (parameters fail) and hang_mutant (the bring-up
hangs, kunit.py's timeout). The crafted_*.log files say at their top what was
changed.
"""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path
from typing import Dict

from cpuhpk import judging, ktap, kunitspec, verdict

DATA = Path(__file__).parent / 'data'


def load(name: str) -> ktap.Test:
    return ktap.parse(ktap.extract(ktap.read_console(DATA / name).lines))


def statuses(root: ktap.Test) -> Dict[str, ktap.Status]:
    return {name: t.status for name, t in ktap.cases(root)}


def judge(root: ktap.Test) -> verdict.Verdict:
    return judging.judge_ktap(root, kunitspec.Expectations())


class ExtractTest(unittest.TestCase):
    def test_starts_at_version_and_strips_prefix(self) -> None:
        lines = ['[    1.000000] boot noise', '[    1.100000] KTAP version 1',
                 '[    1.100000] 1..1', '[    1.200000]     ok 1 case']
        self.assertEqual(ktap.extract(lines), ['KTAP version 1', '1..1', '    ok 1 case'])
        self.assertEqual(ktap.extract_at(lines)[0], 1)

    def test_stops_where_kunit_py_stops(self) -> None:
        lines = ['KTAP version 1', '1..1', 'ok 1 s', 'reboot: System halted', 'ok 2 x']
        self.assertEqual(ktap.extract(lines), ['KTAP version 1', '1..1', 'ok 1 s'])

    def test_no_ktap(self) -> None:
        self.assertEqual(ktap.extract_at(['just a boot log']), (-1, []))


class ReadConsoleTest(unittest.TestCase):
    """The console is untrusted: bounded bytes and lines, any bytes decode."""

    def write(self, data: bytes) -> Path:
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        path = Path(self._tmp.name) / 'console.log'
        path.write_bytes(data)
        return path

    def test_invalid_utf8_and_binary(self) -> None:
        c = ktap.read_console(self.write(b'\xff\xfe\x00garbage\x1b[0m\nKTAP version 1\n\x80'))
        self.assertEqual(len(c.lines), 3)
        self.assertEqual(c.lines[1], 'KTAP version 1')
        self.assertFalse(c.truncated)

    def test_long_line_is_cut(self) -> None:
        c = ktap.read_console(self.write(b'a' * (10 << 20) + b'\nok 1 x\n'))
        self.assertEqual([len(ln) for ln in c.lines], [ktap.MAX_LINE, 6])
        self.assertEqual(c.long_lines, 1)

    def test_large_console_is_truncated(self) -> None:
        path = self.write(b'')
        with open(path, 'wb') as f:
            f.truncate(1 << 30)     # 1 GiB of NUL bytes, sparse
        c = ktap.read_console(path)
        self.assertTrue(c.truncated)
        self.assertLessEqual(sum(map(len, c.lines)), ktap.MAX_CONSOLE)


class ParseTest(unittest.TestCase):
    def test_all_pass_with_parameters(self) -> None:
        root = load('pass_default_console.log')
        got = statuses(root)
        self.assertEqual(len(got), 44)
        self.assertEqual(set(got.values()), {ktap.Status.PASS})
        self.assertIn('timekeeping_crosststamp.crosststamp_driver_error.-16', got)
        self.assertIn('cpuhp_rollback.cpuhp_rollback_cycles', got)
        self.assertNotIn('timekeeping_crosststamp.crosststamp_driver_error', got)
        self.assertTrue(judge(root).ok)

    def test_kernel_messages_are_diagnostics_of_the_running_case(self) -> None:
        cases = dict(ktap.cases(load('pass_default_console.log')))
        diags = cases['timekeeping_crosststamp.crosststamp_generic_id'].diagnostics
        self.assertIn('clocksource: Switched to clocksource crosststamp_test0', diags)

    def test_case_spans(self) -> None:
        root = load('pass_default_console.log')
        cases = dict(ktap.cases(root))
        a = cases['cpuhp_rollback.cpuhp_rollback_tasks_frozen']
        b = cases['cpuhp_rollback.cpuhp_rollback_freeze_fails']
        self.assertEqual(b.first, a.last + 1)
        for index in range(b.first, b.last + 1):
            hit = ktap.case_at(root, index)
            self.assertEqual(hit[0] if hit else None, 'cpuhp_rollback.cpuhp_rollback_freeze_fails')

    def test_case_index_answers_as_case_at(self) -> None:
        # The index make judge uses for a console of many reports.
        for name in ('pass_default_console.log', 'run_default_6.12_console.log',
                     'hang_mutant_console.log', 'param_fail_mutant_console.log'):
            with self.subTest(console=name):
                root = load(name)
                index = ktap.CaseIndex(root)
                last = max((t.last for _, t in ktap.cases(root)), default=0) + 3
                for i in range(-3, last):
                    self.assertEqual(index.at(i), ktap.case_at(root, i), i)

    def test_failure_keeps_diagnostics(self) -> None:
        root = load('fail_mutant_console.log')
        failed = [(n, t) for n, t in ktap.cases(root) if t.status is ktap.Status.FAIL]
        self.assertEqual([n for n, _ in failed],
                         ['timekeeping_crosststamp.crosststamp_current_clocksource.'
                          'realtime+333333333ns'])
        self.assertTrue(any('EXPECTATION FAILED' in d for d in failed[0][1].diagnostics))

    def test_parameter_failure_diagnostics(self) -> None:
        # KUnit prints a parameter's failure at the case's indentation.
        root = load('param_fail_mutant_console.log')
        failed = {n: t for n, t in ktap.cases(root) if t.status is ktap.Status.FAIL}
        self.assertEqual(len(failed), 19)
        params = [n for n in failed if n.startswith('cpuhp_install.cpuhp_install_startup_fails.')]
        self.assertEqual(len(params), 6)
        for name in params:
            self.assertTrue(any('EXPECTATION FAILED' in d for d in failed[name].diagnostics),
                            name)

    def test_hang_before_the_suites(self) -> None:
        # The bring-up of the secondary CPUs hangs at boot: no KTAP at all.
        root = load('hang_mutant_console.log')
        self.assertEqual(ktap.cases(root), [])
        self.assertIn('no KUnit case ran', judge(root).problems[0].message)

    def test_crash_mid_suite(self) -> None:
        lines = ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s', '    1..3',
                 '    ok 1 a', '    # b: running', 'BUG: kernel NULL pointer dereference',
                 'Kernel panic - not syncing: Fatal exception']
        root = ktap.parse(lines)
        got = statuses(root)
        self.assertEqual(got, {'s.a': ktap.Status.PASS, 's.b': ktap.Status.CRASHED,
                               's.#3': ktap.Status.CRASHED})
        running = dict(ktap.cases(root))['s.b']
        self.assertIn('Kernel panic - not syncing: Fatal exception', running.diagnostics)
        v = judge(root)
        self.assertEqual((v.passed, v.crashed), (1, 3))     # b, #3 and the suite s

    def test_crash_inside_a_parameterised_case(self) -> None:
        lines = ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s', '    1..2',
                 '        KTAP version 1', '        # Subtest: p', '        ok 1 a']
        root = ktap.parse(lines)
        got = statuses(root)
        self.assertEqual(got['s.p.a'], ktap.Status.PASS)
        self.assertEqual(got['s.#2'], ktap.Status.CRASHED)
        # p (no result line), #2 (planned) and s (no result line).
        self.assertEqual(judge(root).crashed, 3)

    def test_no_results_is_not_a_pass(self) -> None:
        v = judge(ktap.parse(ktap.extract(['Kernel panic - not syncing: boom'])))
        self.assertFalse(v.ok)
        self.assertIn('no KUnit case ran', v.problems[0].message)

    def test_old_tap_with_tabs_and_hyphens(self) -> None:
        lines = ['TAP version 14', '1..1', '\t# Subtest: old', '\t1..2', '\tok 1 - a',
                 '\tnot ok 2 - b', 'not ok 1 - old']
        self.assertEqual(statuses(ktap.parse(lines)),
                         {'old.a': ktap.Status.PASS, 'old.b': ktap.Status.FAIL})

    def test_crashed_parameter_is_named_by_number(self) -> None:
        lines = ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s', '    1..1',
                 '        KTAP version 1', '        # Subtest: p', '        ok 1 a',
                 '    # p: EXPECTATION FAILED at x.c:1', 'Kernel panic - not syncing: oops']
        self.assertIn('s.p.#2', statuses(ktap.parse(lines)))

    def test_two_space_indentation(self) -> None:
        lines = ['KTAP version 1', '1..1', '  KTAP version 1', '  1..3', '  ok 1 case_1',
                 '  ok 2 case_2', '  ok 3 case_3', 'ok 1 suite']
        self.assertEqual(list(statuses(ktap.parse(lines))),
                         ['suite.case_1', 'suite.case_2', 'suite.case_3'])

    def test_diagnostics_are_bounded(self) -> None:
        lines = ['KTAP version 1', '1..1', *(['noise'] * (ktap.MAX_DIAGNOSTICS + 50)), 'ok 1 s']
        root = ktap.parse(lines)
        self.assertEqual(len(root.subtests[0].diagnostics), ktap.MAX_DIAGNOSTICS)
        self.assertEqual(root.subtests[0].cut, 50)
        lines[-1] = 'not ok 1 s'
        v = judging.judge_ktap(ktap.parse(lines), kunitspec.Expectations())
        self.assertTrue(v.problems[0].detail.endswith(f'({ktap.MAX_DIAGNOSTICS - 40 + 50} '
                                                      'more lines)'))


if __name__ == '__main__':
    unittest.main()
