"""Tests for cpuhpk.states (states.html) and the sweep's verdict, on a recorded sweep."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path

from cpuhpk import judging, ktap, states, verdict

from tests import recorded

DATA = Path(__file__).parent / 'data'
# make run on 6.12.118, SMP=4, default config, unedited (all four suites).
SWEEP = DATA / 'sweep_default_console.log'


def judged() -> 'tuple[ktap.Console, ktap.Test, verdict.Verdict]':
    console = ktap.read_console(SWEEP)
    exp = recorded.expectations('', {'kver': '6.12', 'config': 'default', 'smp': '4',
                                     'fixes': '0'}, suites=recorded.SWEEP_SUITES)
    _, root, v = judging.judge_console(console, exp)
    return console, root, v


class SweepVerdictTest(unittest.TestCase):
    def test_green_with_the_known_failures_listed(self) -> None:
        _, _, v = judged()
        self.assertEqual(v.problems, [])
        self.assertEqual(len(v.known), 22)
        self.assertEqual(sum(p.name.startswith('cpuhp_sweep.cpuhp_sweep_fail_fires.')
                             for p in v.known), 21)
        self.assertTrue(all(s.expected for s in v.skips))

    def test_red_when_fixes_are_claimed(self) -> None:
        # The same console judged as a FIXES=1 run: the lingering failures are red.
        console = ktap.read_console(SWEEP)
        exp = recorded.expectations('', {'kver': '6.12', 'config': 'default', 'smp': '4',
                                         'fixes': '1'}, suites=recorded.SWEEP_SUITES)
        v = judging.judge_console(console, exp)[2]
        self.assertEqual(len([p for p in v.problems if p.category == 'failed']), 21)

    def test_strict(self) -> None:
        console = ktap.read_console(SWEEP)
        exp = recorded.expectations('', {'kver': '6.12', 'config': 'default', 'smp': '4',
                                         'fixes': '0'}, strict=True,
                                    suites=recorded.SWEEP_SUITES)
        v = judging.judge_console(console, exp)[2]
        self.assertEqual(len(v.problems), 22)


class StatesTest(unittest.TestCase):
    def test_table_and_outcomes(self) -> None:
        console, root, v = judged()
        table = states.table(console.lines)
        self.assertEqual(len(table), 57)
        by_name = {s.name: s for s in table}
        active = by_name['sched:active']
        self.assertEqual((active.section, active.startup, active.teardown), ('ap', True, True))
        states.outcomes(table, root, v)
        self.assertEqual(active.cells, {'up': 'clean', 'down': 'clean', 'target': 'clean'})
        self.assertEqual(by_name['x86/mce:dead'].cells['up'], 'finding')
        self.assertEqual(by_name['RCU/tree:prepare'].cells['target'], 'finding')
        self.assertEqual(by_name['sched:starting'].cells['up'], 'refused')
        self.assertEqual(by_name['cpu:kick_ap'].cells['target'], 'finding')

    def test_html(self) -> None:
        console, root, v = judged()
        with tempfile.TemporaryDirectory() as tmp:
            path = states.write(Path(tmp), console.lines, root, v, 'linux 6.12.118 <default>')
            assert path is not None
            text = path.read_text()
        self.assertIn('&lt;default&gt;', text)
        self.assertNotIn('<script', text)
        self.assertEqual(text.count('<tr class='), 57)

    def test_text_counts_what_the_html_shows(self) -> None:
        """states.txt: the counts a comparison of two kernels' tables starts from."""
        console, root, v = judged()
        with tempfile.TemporaryDirectory() as tmp:
            states.write(Path(tmp), console.lines, root, v, 't')
            lines = (Path(tmp) / 'states.txt').read_text().splitlines()
        table = states.table(console.lines)
        states.outcomes(table, root, v)
        self.assertEqual(len(lines), 1 + 57)
        self.assertTrue(lines[0].startswith('57 named states (bp '))
        sections = {sec: sum(1 for s in table if s.section == sec) for sec in ('bp', 'atomic', 'ap')}
        self.assertIn(f'(bp {sections["bp"]}, atomic {sections["atomic"]}, ap {sections["ap"]})',
                      lines[0])
        clean_up = sum(1 for s in table if s.cells.get('up') == 'clean')
        self.assertIn(f'rolled back up: {clean_up} clean', lines[0])
        self.assertIn('sched:active ap up=clean down=clean target=clean', '\n'.join(lines))

    def test_no_sweep_no_picture(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            self.assertIsNone(states.write(Path(tmp), ['boot'], ktap.Test(name=''),
                                           verdict.Verdict(), 't'))


if __name__ == '__main__':
    unittest.main()
