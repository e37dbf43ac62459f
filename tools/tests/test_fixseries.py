"""Tests for cpuhpk.fixseries (make fixes-series) that need no kernel tree."""

from __future__ import annotations

import json
import os
import tempfile
import unittest
from pathlib import Path
from typing import Tuple
from unittest import mock

from cpuhpk import fixseries, series, seriesmake, seriesplan
from cpuhpk.paths import REPO


def fixes_dir(tmp: Path, plan: str, patches: Tuple[str, ...] = ('0001-a.patch', '0002-b.patch')) -> Path:
    d = tmp / '6.12' / 'fixes'
    d.mkdir(parents=True)
    for p in patches:
        (d / p).write_text('')
    (d / 'series').write_text(''.join(f'{p}\n' for p in patches))
    (d / 'plan').write_text(plan)
    return d


class PlanTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        self.tmp = Path(self._tmp.name)

    def test_our_plans_name_every_fix_once(self) -> None:
        for kver in ('6.12', '6.1'):
            with self.subTest(kver=kver):
                fixes = REPO / 'src' / kver / 'fixes'
                plan = fixseries.read_plan(fixes)
                named = sorted(p for s in plan for p in s.patches)
                self.assertEqual(named, sorted((fixes / 'series').read_text().split()))
                for s in plan:
                    for tested, posted in s.posted.items():
                        same, why = fixseries.same_change(fixes / tested, fixes / posted)
                        self.assertTrue(same, why)

    def test_stable_series_are_marked(self) -> None:
        plan = {s.name: s for s in fixseries.read_plan(REPO / 'src' / '6.12' / 'fixes')}
        self.assertEqual((plan['vmstat-6.12.y'].stable, plan['vmstat-6.12.y'].prefix),
                         (True, 'PATCH 6.12.y'))
        self.assertFalse(plan['cpu-hotplug'].stable)

    def test_a_patch_left_out_is_an_error(self) -> None:
        d = fixes_dir(self.tmp, '[a]\ntitle A\npatch 0001-a.patch\n')
        with self.assertRaisesRegex(seriesplan.SeriesError, 'not named: 0002-b.patch'):
            fixseries.read_plan(d)

    def test_a_patch_named_twice_is_an_error(self) -> None:
        d = fixes_dir(self.tmp, '[a]\ntitle A\npatch 0001-a.patch\npatch 0002-b.patch\n'
                      '[b]\ntitle B\npatch 0001-a.patch\n')
        with self.assertRaisesRegex(seriesplan.SeriesError, 'twice: 0001-a.patch'):
            fixseries.read_plan(d)

    def test_stable_needs_its_prefix(self) -> None:
        d = fixes_dir(self.tmp, '[a]\ntitle A\nstable\npatch 0001-a.patch\npatch 0002-b.patch\n')
        with self.assertRaisesRegex(seriesplan.SeriesError, 'PATCH <x.y>.y'):
            fixseries.read_plan(d)

    def test_unknown_line_and_missing_posted_form(self) -> None:
        d = fixes_dir(self.tmp, '[a]\ntitle A\nsend-to someone\n')
        with self.assertRaisesRegex(seriesplan.SeriesError, 'plan:3'):
            fixseries.read_plan(d)
        (d / 'plan').write_text('[a]\ntitle A\npatch 0001-a.patch upstream/0001-a.patch\n'
                                'patch 0002-b.patch\n')
        with self.assertRaisesRegex(seriesplan.SeriesError,
                                    'no src/6.12/fixes/upstream/0001-a.patch'):
            fixseries.read_plan(d)


class MakeStepsTest(unittest.TestCase):
    def test_objects_one_job_at_a_time_after_prepare(self) -> None:
        """Two makes compiled arch/x86/power/hibernate.o at once under -j2
        (6.1, the project CI's run of 2026-12-06): objects are built with -j1."""
        steps = fixseries.make_steps(Path('/w'), Path('/b'), ['arch/x86/power/hibernate.o'])
        self.assertEqual(len(steps), 2)
        self.assertEqual(steps[0][-1], 'prepare')
        self.assertIn('-j1', steps[1])
        self.assertEqual(steps[1][-1], 'arch/x86/power/hibernate.o')
        self.assertEqual([a for a in steps[1] if a.startswith('-j')], ['-j1'])

    def test_vmlinux_on_every_cpu(self) -> None:
        steps = fixseries.make_steps(Path('/w'), Path('/b'), ['vmlinux'])
        self.assertEqual(steps, [series.make_command(Path('/w'), Path('/b')) + ['vmlinux']])


class PatchTextTest(unittest.TestCase):
    def test_a_backports_note_is_signed_with_the_senders_name(self) -> None:
        msg = ('x86/topology: Y\n\ncommit 2066f00e5b2d upstream.\n\n'
               '[ cpuhp-kunit: only the place of the hunk changed. ]\n\n'
               'Signed-off-by: Thomas Gleixner <tglx@linutronix.de>\n')
        out = fixseries.signed_off(msg, 'A User <user@example.org>')
        self.assertIn('[ A User: only the place of the hunk changed. ]', out)
        self.assertTrue(out.endswith('Signed-off-by: Thomas Gleixner <tglx@linutronix.de>\n'
                                     'Signed-off-by: A User <user@example.org>\n'))

    def test_a_backport_is_known_by_its_upstream_line(self) -> None:
        self.assertTrue(fixseries.is_backport('Subject: x\n\ncommit d385febc9a19 upstream.\n'))
        self.assertFalse(fixseries.is_backport('Subject: x\n\nLike commit d385febc9a19 '
                                               'upstream.\n'))
        for kver in ('6.12', '6.1'):
            for patch in (REPO / 'src' / kver / 'fixes').glob('*.patch'):
                with self.subTest(patch=f'{kver}/{patch.name}'):
                    text = patch.read_text()
                    self.assertEqual(fixseries.is_backport(text), ' upstream.\n' in text
                                     and '\ncommit ' in text)

    def test_sign_off_keeps_a_backports_trailers(self) -> None:
        msg = ('cpu/hotplug: Set cpuhp target for boot cpu\n\ncommit d385febc9a19 upstream.\n\n'
               'Signed-off-by: Phil Auld <pauld@redhat.com>\n'
               'Signed-off-by: Thomas Gleixner <tglx@linutronix.de>\n'
               f'Signed-off-by: cpuhp-kunit developers <{seriesmake.PLACEHOLDER}>\n')
        out = fixseries.signed_off(msg, 'A User <user@example.org>')
        self.assertEqual(out.splitlines()[-3:], [
            'Signed-off-by: Phil Auld <pauld@redhat.com>',
            'Signed-off-by: Thomas Gleixner <tglx@linutronix.de>',
            'Signed-off-by: A User <user@example.org>'])
        self.assertNotIn(seriesmake.PLACEHOLDER, out)
        self.assertEqual(fixseries.signed_off(out, 'A User <user@example.org>'), out)

    def test_posted_form_must_say_and_add_the_same(self) -> None:
        fixes = REPO / 'src' / '6.12' / 'fixes'
        tested = fixes / '0005-cpu-hotplug-Keep-cpuN-online-in-step-with-the-target.patch'
        posted = fixes / 'upstream' / tested.name
        self.assertTrue(fixseries.same_change(tested, posted)[0])
        with tempfile.TemporaryDirectory() as tmp:
            other = Path(tmp) / posted.name
            other.write_text(posted.read_text().replace('A write to', 'A store to', 1))
            self.assertEqual(fixseries.same_change(tested, other),
                             (False, 'the commit messages differ'))
            other.write_text(posted.read_text().replace('+\tdev->offline = offline;\n', '')
                             .replace('+\tbool offline', '+\tint offline'))
            same, why = fixseries.same_change(tested, other)
            self.assertFalse(same)
            self.assertIn('only in', why)


class CoverTest(unittest.TestCase):
    def test_counts_the_known_failures_each_fix_covers(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            for d in ('kunit', 'Documentation'):
                os.symlink(REPO / d, root / d)
            for name, n in (('6.12', 3), ('6.12-fixes', 0)):
                (root / 'out' / name).mkdir(parents=True)
                (root / 'out' / name / 'verdict.json').write_text(json.dumps({
                    'verdict': 'pass', 'context': {'smp': '4', 'filter': ''},
                    'counts': {'passed': 1, 'failed': 0, 'skipped': 0},
                    'known_failures': [{'name': 'x', 'message': '[known failure: y '
                                        '(src/<KVER>/fixes/0001)]'}] * n}))
            plan = {s.name: s for s in fixseries.read_plan(REPO / 'src' / '6.12' / 'fixes')}
            s = plan['cpu-hotplug']
            with mock.patch.object(fixseries, 'REPO', root):
                text = fixseries.cover_blurb('6.12', s, {p: f'[x] {p}' for p in s.patches},
                                             'base')
        self.assertIn('report: Documentation/findings/04-fail-stays-armed.md', text)
        self.assertIn('seen as known failures in 6.12 3, 6.12-fixes 0', text)
        self.assertIn('6.12-smp2: no run', text)
        self.assertIn('covers cpuhp_sweep.cpuhp_sweep_fail_fires.*', text)


if __name__ == '__main__':
    unittest.main()
