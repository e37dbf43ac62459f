"""Tests for cpuhpk.hygiene."""

from __future__ import annotations

import unittest
from pathlib import Path

from cpuhpk import hygiene

DATA = Path(__file__).parent / 'data'

WARN = 'WARNING: CPU: 1 PID: 42 at kernel/cpu.c:2299 cpuhp_reserve_state+0x5e/0x80'


class HygieneTest(unittest.TestCase):
    def test_clean_recorded_runs(self) -> None:
        for name in ('pass_default_console.log', 'pass_debug_console.log',
                     'coverage_console.log'):
            with self.subTest(name=name):
                self.assertEqual(hygiene.check((DATA / name).read_text().splitlines()), [])

    def test_each_report_kind(self) -> None:
        for line in (WARN, 'BUG: kernel NULL pointer dereference, address: 10',
                     'Oops: 0000 [#1] PREEMPT SMP', 'general protection fault, probably',
                     'Kernel panic - not syncing: Fatal exception',
                     'WARNING: possible circular locking dependency detected',
                     'rcu: INFO: rcu_preempt self-detected stall on CPU',
                     'rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:'):
            with self.subTest(line=line):
                found = hygiene.check(['ok 1 x', line])
                self.assertEqual([f.lineno for f in found], [2])

    def test_debug_kernel_banners_are_not_reports(self) -> None:
        lines = ['rcu: RCU lockdep checking is enabled.',
                 ' MAX_LOCKDEP_SUBCLASSES:  8', 'Lock dependency validator: Copyright (c) 2006']
        self.assertEqual(hygiene.check(lines), [])

    def test_declared_report_is_allowed(self) -> None:
        lines = ['cpuhp_kunit: expect report: cpuhp_reserve_state', WARN,
                 '---[ end trace 0000000000000000 ]---', 'cpuhp_kunit: expect end']
        self.assertEqual(hygiene.check(lines), [])

    def test_other_report_inside_window_is_not(self) -> None:
        lines = ['cpuhp_kunit: expect report: cpuhp_reserve_state', WARN,
                 'BUG: sleeping function called from invalid context', 'cpuhp_kunit: expect end']
        self.assertEqual([f.lineno for f in hygiene.check(lines)], [3])

    def test_report_outside_window_is_not(self) -> None:
        lines = ['cpuhp_kunit: expect report: cpuhp_reserve_state', WARN,
                 'cpuhp_kunit: expect end', WARN]
        self.assertEqual([f.lineno for f in hygiene.check(lines)], [4])

    def test_declared_report_must_appear(self) -> None:
        found = hygiene.check(['cpuhp_kunit: expect report: cpuhp_reserve_state',
                               'cpuhp_kunit: expect end'])
        self.assertEqual([f.why for f in found], ['a declared report did not appear'])

    def test_window_must_end(self) -> None:
        found = hygiene.check(['cpuhp_kunit: expect report: cpuhp_reserve_state', WARN])
        self.assertEqual([f.why for f in found], ['a declared report window never ended'])


if __name__ == '__main__':
    unittest.main()
