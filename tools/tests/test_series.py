"""make series: the plan, the sources as the series carries them, the identity."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path
import re
from typing import Dict, List
from unittest import mock

from cpuhpk import outputs, series, seriesmake, seriesplan, serieschecks, tree
from cpuhpk.paths import REPO
from tests import recorded

SOURCE = '''#include <kunit/test.h>
#include <linux/version.h>

#include "cpuhp_kunit_compat.h"

/* Both kernels. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
static int new_way;
#else
static int old_way;
#endif

static int both;
'''


class PlanTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.src = self.tmp / '6.12'
        shutil.copytree(REPO / 'src' / '6.12', self.src)
        self.plan = self.src / 'upstream' / 'plan'

    def test_the_plan_of_6_12_names_every_patch_and_source(self) -> None:
        plan = seriesplan.read_plan(self.src)
        self.assertEqual([s.name for s in plan.series], ['cpu-hotplug', 'timekeeping'])
        self.assertTrue(plan.drop_compat)
        self.assertEqual(len(plan.harness), 1)
        self.assertIn('gcov', (self.src / plan.harness[0]).read_text())
        self.assertEqual(sorted(plan.not_posted_sources),
                         ['cpuhp_stress_kunit.c', 'cpuhp_sweep_kunit.c',
                          'timekeeping_crosststamp_kunit.c'])
        patches = [p for p, _ in plan.series[0].patches]
        self.assertEqual([p.split('/')[0] for p in patches][:2], ['fixes', 'fixes'])

    def test_the_build_checks_enable_every_posted_suite(self) -> None:
        # a suite option a posted patch adds that series-check leaves off
        # would make its per-patch builds skip the tests they are to build
        added = set()
        for patch in (REPO / 'src' / '6.12' / 'upstream').glob('*.patch'):
            added |= set(re.findall(r'^\+config (\w+_KUNIT_TEST)$', patch.read_text(), re.M))
        self.assertIn('TIMEKEEPING_KUNIT_TEST', added)
        for option in added:
            with self.subTest(option):
                self.assertIn(f'CONFIG_{option}', series.SUITE_OPTIONS)
                self.assertTrue(any(c.startswith(f'CONFIG_{option}=')
                                    for c in series.BASE_CONFIG))

    def test_cpus_of_the_cover_letters_command(self) -> None:
        plan = seriesplan.read_plan(self.src)
        hotplug, timekeeping = plan.series
        # the hotplug cases need a second CPU; the timekeeping ones one
        self.assertIn("--qemu_args='-smp 4'", seriesmake.run_command(hotplug))
        self.assertEqual(timekeeping.cpus, 1)
        self.assertNotIn('--qemu_args', seriesmake.run_command(timekeeping))
        self.assertEqual(seriesmake.cpus(timekeeping, 4), 1)
        self.plan.write_text(self.plan.read_text().replace('cpus 1', 'cpus none'))
        with self.assertRaises(seriesplan.SeriesError):
            seriesplan.read_plan(self.src)

    def test_a_patch_in_no_series_is_refused(self) -> None:
        text = self.plan.read_text()
        self.plan.write_text('\n'.join(ln for ln in text.splitlines()
                                       if not ln.startswith('harness ')))
        with self.assertRaisesRegex(seriesplan.SeriesError, 'not named.*0007'):
            seriesplan.read_plan(self.src)

    def test_a_source_in_no_patch_is_refused(self) -> None:
        self.plan.write_text('\n'.join(ln for ln in self.plan.read_text().splitlines()
                                       if not ln.startswith('not-posted-source cpuhp_sweep')))
        with self.assertRaisesRegex(seriesplan.SeriesError, r"missing \['cpuhp_sweep_kunit.c'\]"):
            seriesplan.read_plan(self.src)

    def test_a_part_never_added_is_refused(self) -> None:
        self.plan.write_text(self.plan.read_text().replace(' cpuhp_rollback_kunit.c+freeze', ''))
        with self.assertRaisesRegex(seriesplan.SeriesError,
                                    r"cpuhp_rollback_kunit.c has the parts \['freeze'\]"):
            seriesplan.read_plan(self.src)

    def test_fixes_after_the_tests_are_refused(self) -> None:
        lines = self.plan.read_text().splitlines()
        i = next(n for n, ln in enumerate(lines) if ln.startswith('patch fixes/0011'))
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
        self.plan.write_text('\n'.join(lines))
        with self.assertRaisesRegex(seriesplan.SeriesError, 'fixes after the tests'):
            seriesplan.read_plan(self.src)

    def test_a_kernel_without_a_plan_is_refused(self) -> None:
        shutil.rmtree(self.src / 'upstream')
        with self.assertRaisesRegex(seriesplan.SeriesError, 'no src/6.12/upstream/plan'):
            seriesplan.read_plan(self.src)

    def test_a_missing_patch_is_refused(self) -> None:
        (self.src / 'upstream' / '0004-cpu-hotplug-Add-KUnit-tests-for-installing-and-'
         'remov.patch').unlink()
        with self.assertRaisesRegex(seriesplan.SeriesError, 'no src/6.12/upstream/0004'):
            seriesplan.read_plan(self.src)


class ResultsTest(unittest.TestCase):
    """The cover letter's results: the last series-test's run, clean or refused."""

    def write(self, root: Path, verdict_json: Dict[str, object]) -> None:
        out = root / 'out' / '6.12-series' / 'pristine-cpu-hotplug'
        out.mkdir(parents=True)
        (out / 'verdict.json').write_text(json.dumps(verdict_json))

    def test_a_clean_run_is_said_with_its_skips(self) -> None:
        s = seriesplan.Series('cpu-hotplug')
        with tempfile.TemporaryDirectory() as tmp, mock.patch.object(seriesmake, 'REPO', Path(tmp)):
            self.write(Path(tmp), {'verdict': 'pass', 'known_failures': [], 'context': {},
                                   'statuses': {'a.x': 'pass', 'a.y': 'skip'},
                                   'skips': [{'reason': 'needs two online CPUs'}]})
            text = seriesmake.results_text('6.12', s, '6.12.118')
        self.assertIn("linux-source-6.12 (6.12.118)", ' '.join(text.split()))
        self.assertIn('2 results, 1 passed, 1 skipped, 0 failed; no kernel warning', ' '.join(
            text.split()))
        self.assertIn('1 skipped: needs two online CPUs', text)

    def test_known_failures_or_none_are_refused(self) -> None:
        s = seriesplan.Series('cpu-hotplug')
        with tempfile.TemporaryDirectory() as tmp, mock.patch.object(seriesmake, 'REPO', Path(tmp)):
            with self.assertRaisesRegex(seriesplan.SeriesError, 'run make series-test'):
                seriesmake.results_text('6.12', s, '6.12.118')
            self.write(Path(tmp), {'verdict': 'pass', 'known_failures': [{'name': 'a.x'}],
                                   'context': {}, 'statuses': {}})
            with self.assertRaisesRegex(seriesplan.SeriesError, 'not a clean pass'):
                seriesmake.results_text('6.12', s, '6.12.118')


class RecipientsTest(unittest.TestCase):
    PATCH = ('From 0 Mon Sep 17 00:00:00 2001\nFrom: A <a@b.org>\nDate: x\n'
             'Subject: [PATCH 1/2] cpu/hotplug: Add KUnit tests for\n something\n'
             'To: Old <old@x.org>,\n    Older <older@x.org>\nCc: l@x.org\n\nbody\n---\n'
             ' kernel/tests/x.c | 1 +\n\n--- /dev/null\n+++ b/kernel/tests/x.c\n'
             '+\tfreeze_secondary_cpus(0);\n')

    def test_each_patch_its_own(self) -> None:
        out = seriesmake.with_recipients(self.PATCH, ['T <t@x.org>', 'U <u@x.org>'], ['l@y.org'])
        head = out.partition('\n\n')[0]
        self.assertNotIn('old@x.org', out)
        self.assertTrue(head.endswith('something\nTo: T <t@x.org>,\n    U <u@x.org>\n'
                                      'Cc: l@y.org'))
        self.assertTrue(out.endswith(self.PATCH.partition('\n\n')[2]))

    def test_sections(self) -> None:
        self.assertEqual(seriesmake.sections_for(self.PATCH),
                         [seriesmake.KUNIT_SECTION, seriesmake.PM_SECTION])
        fix = 'Subject: [PATCH] cpu/hotplug: Fix\n\n+++ b/kernel/cpu.c\n+\tx = 1;\n'
        self.assertEqual(seriesmake.sections_for(fix), [])


class PostedFormTest(unittest.TestCase):
    """What the posted series carries, read without a kernel tree."""

    def posted(self) -> Dict[str, str]:
        """Cover letters, patch messages and diffs, and sources in their
        posted form; From:/Signed-off-by: lines are the sender's when made."""
        src = REPO / 'src' / '6.12'
        plan = seriesplan.read_plan(src)
        texts: Dict[str, str] = {}
        for s in plan.series:
            texts[f'{s.name}.cover'] = (src / 'upstream' / f'{s.name}.cover').read_text()
            parts: Dict[str, List[str]] = {}
            for patch, specs in s.patches:
                texts[patch] = '\n'.join(
                    ln for ln in seriesplan.patch_path(src, patch).read_text().splitlines()
                    if not ln.startswith(('From:', 'Signed-off-by:')))
                for spec in specs:
                    name, part = seriesplan.source_parts(spec)
                    parts.setdefault(name, []).extend([part] if part else [])
                    texts[f'{patch}: {spec}'] = seriesmake.for_kernel(
                        (REPO / 'kunit' / name).read_text(), '6.12.118', True, parts[name])
        return texts

    def test_no_harness_words(self) -> None:
        for where, text in self.posted().items():
            with self.subTest(where=where):
                self.assertEqual(seriesplan.harness_words(text), [])

    def test_the_words_are_found(self) -> None:
        for text in ('(README Findings); STRICT=1 runs it', 'make run SEED=', "the harness's",
                     'see kunit/expected-skips', 'a known failure', 'tools/cpuhpk/states.py'):
            with self.subTest(text=text):
                self.assertTrue(seriesplan.harness_words(text))
        for text in ('cpuhp_stress.seed=', 'the findings of', 'readme.txt', 'strict'):
            with self.subTest(text=text):
                self.assertEqual(seriesplan.harness_words(text), [])

    def test_no_debug_knob_no_warning_no_clock(self) -> None:
        """No posted case uses the target or fail rules, provokes a WARN on
        purpose, drives the real suspend or sets the clock."""
        banned = re.compile(r'cpuhp_kunit_(?:set_target|set_fail|get_fail|step)\b|'
                            r'expect_report|suspend_devices_and_enter|power/power\.h|'
                            r'do_settimeofday64|do_adjtimex|clocksource_register|'
                            r'EXPORT_SYMBOL_IF_KUNIT|MODULE_IMPORT_NS|get_random_u32')
        for where, text in self.posted().items():
            with self.subTest(where=where):
                self.assertEqual([m.group(0) for m in banned.finditer(text)], [])

    def test_the_harness_runs_what_it_ran(self) -> None:
        """The harness's form keeps the cases the posted form leaves out."""
        text = (REPO / 'kunit' / 'cpuhp_rollback_kunit.c').read_text()
        harness = tree.harness_view(text, True)
        posted = seriesmake.for_kernel(text, '6.12.118', True)
        for case in ('cpuhp_rollback_up_undo_fails', 'cpuhp_rollback_partial_target',
                     'cpuhp_rollback_real_resume_fails'):
            with self.subTest(case=case):
                self.assertIn(f'KUNIT_CASE', harness)
                self.assertRegex(harness, rf'KUNIT_CASE(?:_PARAM)?\({case}\b')
                self.assertNotIn(case, posted)
        self.assertIn('cpuhp_rollback_thaw_fails', posted)
        self.assertNotIn('cpuhp_rollback_thaw_fails',
                         seriesmake.for_kernel(text, '6.12.118', True, []))


class ForKernelTest(unittest.TestCase):
    def test_6_12_keeps_the_new_branch_without_compat(self) -> None:
        out = seriesmake.for_kernel(SOURCE, '6.12.118', drop_compat=True)
        self.assertIn('new_way', out)
        self.assertNotIn('old_way', out)
        self.assertNotIn('compat', out)
        self.assertNotIn('version.h', out)
        self.assertNotIn('#if', out)
        self.assertNotIn('\n\n\n', out)
        self.assertIn('static int both;', out)

    def test_6_1_keeps_the_old_branch_and_compat(self) -> None:
        out = seriesmake.for_kernel(SOURCE, '6.1.192', drop_compat=False)
        self.assertIn('old_way', out)
        self.assertNotIn('new_way', out)
        self.assertIn('#include "cpuhp_kunit_compat.h"', out)

    def test_nested_blocks_are_refused(self) -> None:
        nested = SOURCE.replace('static int new_way;', '#ifdef X\nstatic int new_way;\n#endif')
        with self.assertRaisesRegex(seriesplan.SeriesError, 'inside a version check'):
            seriesmake.for_kernel(nested, '6.12.118', True)

    def test_version_codes(self) -> None:
        self.assertEqual(seriesmake.version_code('6.12.118'), (6 << 16) + (12 << 8) + 118)
        self.assertEqual(seriesmake.version_code('4.9.337'), (4 << 16) + (9 << 8) + 255)

    def test_the_real_crosststamp_source(self) -> None:
        text = (REPO / 'kunit' / 'timekeeping_crosststamp_kunit.c').read_text()
        new = seriesmake.for_kernel(text, '6.12.118', True)
        old = seriesmake.for_kernel(text, '6.1.192', False)
        self.assertIn('counter->cs_id = id;', new)
        self.assertNotIn('LINUX_VERSION_CODE', new + old)
        self.assertLess(len(new), len(text))


class AuthorTest(unittest.TestCase):
    def test_given_author(self) -> None:
        self.assertEqual(seriesmake.author_of('Ada L <ada@lovelace.dev>'), 'Ada L <ada@lovelace.dev>')

    def test_an_address_nobody_reads_is_refused(self) -> None:
        for email in ('ada@example.org', 'a@example.com', 'a@b.example', 'ci@host.localhost',
                      'a@x.invalid', 'a@x.test', 'a@users.noreply.github.com',
                      'maintainers@users.noreply.a-seed-0b6cd6bd.example', 'no-reply@x.org'):
            with self.subTest(email=email):
                with self.assertRaisesRegex(seriesplan.SeriesError, 'nobody reads'):
                    seriesmake.author_of(f'Ada <{email}>')
                # A series made for the checks only may carry it.
                self.assertEqual(seriesmake.author_of(f'Ada <{email}>', checks_only=True),
                                 f'Ada <{email}>')
        for email in ('ada@examples.org', 'ada@contest.org', 'noreplyguy@x.org'):
            with self.subTest(email=email):
                self.assertEqual(seriesmake.author_of(f'Ada <{email}>'), f'Ada <{email}>')

    def test_git_config_nobody_reads_is_named(self) -> None:
        def cfg(cmd: List[str], **_: object) -> 'subprocess.CompletedProcess[str]':
            value = 'x@example.com' if cmd[-1] == 'user.email' else 'X'
            return subprocess.CompletedProcess(cmd, 0, value + '\n', '')
        with mock.patch('subprocess.run', side_effect=cfg):
            with self.assertRaisesRegex(seriesplan.SeriesError,
                                        '^git config user.email is x@example.com, an address'):
                seriesmake.author_of('')

    def test_placeholder_and_garbage_are_refused(self) -> None:
        with self.assertRaisesRegex(seriesplan.SeriesError, 'placeholder'):
            seriesmake.author_of(f'cpuhp-kunit developers <{seriesmake.PLACEHOLDER}>')
        with self.assertRaisesRegex(seriesplan.SeriesError, 'no author'):
            seriesmake.author_of('just a name')

    def test_no_git_config_is_refused(self) -> None:
        done = subprocess.CompletedProcess([], 1, '', '')
        with mock.patch('subprocess.run', return_value=done):
            with self.assertRaisesRegex(seriesplan.SeriesError, 'git config user.name'):
                seriesmake.author_of('')

    def test_sign_off_joins_the_trailers(self) -> None:
        msg = ('sub\n\nbody\n\nFixes: 090e77c391dd ("x")\nCc: stable@vger.kernel.org\n'
               'Signed-off-by: cpuhp-kunit developers <dev@cpuhp-kunit.example>\n')
        self.assertEqual(seriesmake.signed_off(msg, 'Ada <a@b.org>'),
                         'sub\n\nbody\n\nFixes: 090e77c391dd ("x")\nCc: stable@vger.kernel.org\n'
                         'Signed-off-by: Ada <a@b.org>\n')

    def test_sign_off_is_replaced(self) -> None:
        msg = 'sub\n\nbody\n\nSigned-off-by: cpuhp-kunit developers <dev@cpuhp-kunit.example>\n'
        self.assertEqual(seriesmake.signed_off(msg, 'Ada <a@b.org>'),
                         'sub\n\nbody\n\nSigned-off-by: Ada <a@b.org>\n')


class PristineCommitTest(unittest.TestCase):
    def test_same_tree_same_commit_anywhere(self) -> None:
        ids = []
        for _ in range(2):
            tmp = Path(tempfile.mkdtemp())
            self.addCleanup(shutil.rmtree, tmp)
            (tmp / 'f').write_text('x\n')
            for args in (['init', '-q'], ['add', 'f'],
                         ['-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-q', '-m', 'm']):
                subprocess.run(['git', '-C', str(tmp), *args], check=True)
            ids.append(seriesmake.pristine_commit(tmp, 'HEAD', 'linux-source-6.12 1'))
        self.assertEqual(ids[0], ids[1])


class ModuleTest(unittest.TestCase):
    def setUp(self) -> None:
        self.d = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.d)
        (self.d / '.config').write_text('CONFIG_CPUHP_KUNIT_TEST=y\n'
                                        'CONFIG_TIMEKEEPING_CROSSTSTAMP_KUNIT_TEST=m\n')
        (self.d / 'kernel/time/tests').mkdir(parents=True)
        self.ko = self.d / 'kernel/time/tests/timekeeping_crosststamp_kunit.ko'

    def test_the_module_this_build_made(self) -> None:
        self.ko.write_text('')
        (self.d / 'modules.order').write_text('kernel/time/tests/timekeeping_crosststamp_kunit.o\n')
        self.assertEqual(series.missing_modules(self.d), [])

    def test_a_ko_an_earlier_build_left_is_not_enough(self) -> None:
        self.ko.write_text('')
        (self.d / 'modules.order').write_text('')
        self.assertEqual(series.missing_modules(self.d),
                         ['CONFIG_TIMEKEEPING_CROSSTSTAMP_KUNIT_TEST'])

    def test_a_builtin_suite_needs_no_module(self) -> None:
        (self.d / '.config').write_text('CONFIG_TIMEKEEPING_CROSSTSTAMP_KUNIT_TEST=y\n')
        self.assertEqual(series.missing_modules(self.d), [])


class ReportTest(unittest.TestCase):
    def test_no_check_is_not_a_pass(self) -> None:
        self.assertFalse(serieschecks.Checks('6.12').ok)

    def test_one_red_check_is_red(self) -> None:
        r = serieschecks.Checks('6.12')
        with mock.patch('sys.stdout'):
            r.add('a', True)
            r.add('b', False, 'broken')
        self.assertFalse(r.ok)


if __name__ == '__main__':
    unittest.main()


class PristineJudgeTest(unittest.TestCase):
    """The verdict of a pristine kunit.py run, as series-test asks for it."""

    def test_the_recorded_pristine_console_is_green(self) -> None:
        # out/6.12-series/pristine-cpu-hotplug/console.log of make series-test
        # (6.12.118, kunit.py run --kunitconfig=kernel/tests, unedited), of
        # the series posted before 0b5cc34: its cases are a superset of
        # today's, its known failures those of fixes=0.
        console = Path(__file__).parent / 'data' / 'series_pristine_6.12_console.log'
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(outputs, 'expectations', recorded.run_default_expectations):
            spec = series.pristine_spec(console, '6.12', 4, 'cpuhp_*', Path(tmp) / 'out')
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(outputs.judge_file(spec), 0)
                self.assertEqual((spec.fixes, spec.userspace, spec.config),
                                 (False, False, 'series'))

    def test_the_posted_cases_are_expected(self) -> None:
        """A posted series' run is judged against the posted form of its sources."""
        cases = outputs.expectations('cpuhp_*', {'kver': '6.12', 'config': 'series'}).cases or {}
        self.assertEqual(sorted(cases), ['cpuhp_install', 'cpuhp_rollback'])
        self.assertIn('cpuhp_rollback_thaw_fails', cases['cpuhp_rollback'])
        for case in ('cpuhp_rollback_up_undo_fails', 'cpuhp_rollback_partial_target',
                     'cpuhp_rollback_real_resume_fails'):
            self.assertNotIn(case, cases['cpuhp_rollback'])
        harness = outputs.expectations('cpuhp_*', {'kver': '6.12'}).cases or {}
        self.assertIn('cpuhp_rollback_up_undo_fails', harness['cpuhp_rollback'])
