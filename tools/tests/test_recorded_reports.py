"""The consoles make reports recorded (tools/tests/data/reports/, unedited).

A real 6.12.118 kernel (kconfigs/reports.config) provoked each crash type
of provoke.BOOTS with LKDTM; each recording is judged as make reports
judged it when it was recorded: no report before the first provoked one,
and a report of every kind the crash type names in its section. And the
verdict of each, as make judge gives it, is red with those kinds.
"""

from __future__ import annotations

import unittest

from cpuhpk import judging, junit, ktap, kunitspec, provoke


class RecordedReportsTest(unittest.TestCase):
    def test_every_boot_is_recorded_and_judged_right(self) -> None:
        for boot in provoke.BOOTS:
            with self.subTest(boot=boot.name):
                path = provoke.RECORDINGS / f'{boot.name}.log'
                self.assertTrue(path.is_file(), f'{path} missing: make reports RECORD=1')
                errors, _ = provoke.check(boot, path.read_text(errors='replace').splitlines())
                self.assertEqual(errors, [])

    def test_the_verdict_names_the_kinds(self) -> None:
        for boot in provoke.BOOTS:
            path = provoke.RECORDINGS / f'{boot.name}.log'
            if not path.is_file():
                continue    # the test above is red for it
            with self.subTest(boot=boot.name):
                _, root, v = judging.judge_console(ktap.read_console(path),
                                                   kunitspec.Expectations())
                self.assertFalse(v.ok)
                kinds = {p.kind for p in v.problems if p.category == 'kernel-log'}
                # No KTAP here: every report is the run's, one JUnit error per kind.
                types = {e.get('type') for e in junit.junit(root, v).getroot().iter('error')}
                for p in boot.provokes:
                    self.assertLessEqual(set(p.kinds), kinds)
                    self.assertLessEqual({f'kernel-log:{k}' for k in p.kinds}, types)

    def test_a_section_without_its_report_is_red(self) -> None:
        boot = provoke.BOOTS[0]
        lines = [f'{provoke.MARK}{p.crashtype}' for p in boot.provokes]
        errors, _ = provoke.check(boot, lines)
        self.assertEqual(len(errors), sum(len(p.kinds) for p in boot.provokes))

    def test_a_report_during_boot_is_red(self) -> None:
        boot = provoke.BOOTS[1]
        lines = ['WARNING: CPU: 0 PID: 1 at init/main.c:1 f+0x0/0x10', f'{provoke.MARK}BUG',
                 'kernel BUG at drivers/misc/lkdtm/bugs.c:86!']
        errors, found = provoke.check(boot, lines)
        self.assertEqual(found, {'': ['warning'], 'BUG': ['bug']})
        self.assertEqual(len(errors), 1)


if __name__ == '__main__':
    unittest.main()
