"""The verdict of a whole make run console of today's kunit/, one change each.

data/run_default_6.12_console.log is out/6.12/console.log of `make run`
(6.12.118, CONFIG=default, SMP=4, unedited): every suite, the user-space
suite and the gcov dump. Each test below changes one thing in it, as a
console captured elsewhere would have it (a report, a reboot, a console cut
short), and judges it as `make judge` does: what make run expects, the
user-space suite included, with the real tables of kunit/.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
import unittest
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from unittest import mock

from cpuhpk import hygiene, judging, junit, ktap, kunitjson, kunitspec, outputs, run, say, verdict
from tests.recorded import derailed_expectations, run_default_expectations

DATA = Path(__file__).parent / 'data'
CONSOLE = DATA / 'run_default_6.12_console.log'
CONTEXT = {'kver': '6.12', 'config': 'default', 'smp': '4', 'fixes': '0'}


def lines() -> List[str]:
    return CONSOLE.read_text().splitlines()


def judge(console: List[str], userspace: bool = True,
          context: Optional[Dict[str, str]] = None) -> verdict.Verdict:
    """The verdict of @console, read from a file as make judge reads it."""
    exp = run_default_expectations('', dict(context or CONTEXT), userspace=userspace)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'console.log'
        path.write_text('\n'.join(console) + '\n')
        return judging.judge_console(ktap.read_console(path), exp)[2]


def at(console: List[str], text: str) -> int:
    """Index of the first line of @console that contains @text."""
    return next(i for i, ln in enumerate(console) if text in ln)


def inserted(extra: List[str], before: str = '') -> List[str]:
    """The recorded console with @extra printed before the line with @before
    (default: the result line of CASE, i.e. while that case ran)."""
    console = lines()
    i = at(console, before or CASE)
    return console[:i] + extra + console[i:]


def problems(v: verdict.Verdict) -> List[Tuple[str, str, str]]:
    return [(p.category, p.name, p.kind) for p in v.problems]


UBSAN = ['================================================================================',
         'UBSAN: shift-out-of-bounds in kernel/cpu.c:1234:20',
         "shift exponent 64 is too large for 64-bit type 'long unsigned int'",
         'CPU: 1 UID: 0 PID: 80 Comm: kunit_try_catch Tainted: G                 N 6.12.118 #1',
         'Call Trace:', ' <TASK>', ' dump_stack_lvl+0x5d/0x80',
         ' __ubsan_handle_shift_out_of_bounds+0x10a/0x1a0', ' </TASK>',
         '---[ end trace ]---',
         '================================================================================']
HUNG = ['INFO: task cpuhp/3:30 blocked for more than 122 seconds.',
        '      Not tainted 6.12.118 #1',
        '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
        'task:cpuhp/3         state:D stack:0     pid:30    tgid:30    ppid:2      flags:0x00004000',
        'Call Trace:', ' <TASK>', ' __schedule+0x3c4/0xc10', ' </TASK>']
LOCKUP = ['watchdog: Watchdog detected hard LOCKUP on cpu 2',
          'Modules linked in:', 'CPU: 2 UID: 0 PID: 30 Comm: cpuhp/2 Not tainted 6.12.118 #1',
          'RIP: 0010:cpuhp_invoke_callback+0x1e/0x40', '---[ end trace ]---']
CASE = '    ok 3 cpuhp_rollback_down_fails'


class ConsolesOnceGreenTest(unittest.TestCase):
    """Broken consoles the verdict before 1067cc5 judged PASS: a report in a
    case (UBSAN, a hung task, a hard lockup), the user-space suite without
    its result line, a guest that booted twice."""

    def test_the_recording_itself_is_green(self) -> None:
        v = judge(lines())
        self.assertTrue(v.ok, v.problems)
        self.assertIn('cpuhp_sysfs.states_lists_the_table', v.statuses)

    def insert(self, report: List[str]) -> verdict.Verdict:
        console = lines()
        i = at(console, CASE)
        return judge(console[:i] + report + console[i:])

    def test_ubsan_inside_a_case(self) -> None:
        v = self.insert(UBSAN)
        self.assertEqual(problems(v), [('kernel-log', 'cpuhp_rollback.cpuhp_rollback_down_fails',
                                        'ubsan')])
        self.assertEqual(v.to_json({})['problems'][0]['kind'], 'ubsan')

    def test_ubsan_in_junit(self) -> None:
        console = lines()
        i = at(console, CASE)
        console = console[:i] + UBSAN + console[i:]
        exp = run_default_expectations('', dict(CONTEXT), userspace=True)
        _, root, v = judging.judge_console(ktap.Console(lines=console), exp)
        tc = next(c for c in junit.junit(root, v).getroot().iter('testcase')
                  if c.get('name') == 'cpuhp_rollback_down_fails')
        failure = tc.find('failure')
        assert failure is not None
        self.assertEqual(failure.get('type'), 'kernel-log:ubsan')

    def test_hung_task(self) -> None:
        self.assertEqual([p[2] for p in problems(self.insert(HUNG))], ['hung-task'])

    def test_hard_lockup(self) -> None:
        self.assertEqual([p[2] for p in problems(self.insert(LOCKUP))], ['hard-lockup'])

    def test_userspace_suite_without_its_result_line(self) -> None:
        console = lines()
        cut = console[:at(console, 'not ok 99 cpuhp_sysfs')]
        for userspace in (True, False):
            with self.subTest(userspace=userspace):
                v = judge(cut, userspace=userspace)
                self.assertIn(('crashed', 'cpuhp_sysfs', ''), problems(v))
                # Its seven results are judged, not dropped.
                self.assertIn('cpuhp_sysfs.boot_cpu_stays', v.statuses)

    def test_guest_rebooted_mid_suite(self) -> None:
        console = lines()
        first = console[:at(console, CASE)]
        v = judge(first + console)
        cats = {p.category for p in v.problems}
        self.assertIn('reboot', cats)
        crashed = [p.name for p in v.problems if p.category == 'crashed']
        self.assertIn('cpuhp_rollback', crashed)
        # The second boot's passing run does not count.
        self.assertLess(v.passed, judge(console).passed)

    def test_second_ktap_document_without_banner(self) -> None:
        console = lines()
        start = at(console, 'KTAP version 1')
        first = console[:at(console, CASE)]
        v = judge(first + console[start:])
        self.assertIn('reboot', {p.category for p in v.problems})

    def test_make_judge_expects_the_userspace_suite(self) -> None:
        # A console without it (a kernel-only run): red unless USERSPACE=0.
        console = lines()
        start = console.index('    # Subtest: cpuhp_sysfs')
        end = at(console, 'not ok 99 cpuhp_sysfs')
        without = console[:start - 1] + console[end + 1:]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / 'console.log'
            path.write_text('\n'.join(without) + '\n')
            out = Path(tmp) / 'out'
            args = ['--judge', str(path), '--out', str(out), '--kver', '6.12']
            with contextlib.redirect_stdout(io.StringIO()) as said, \
                    mock.patch.object(outputs, 'expectations', run_default_expectations):
                self.assertEqual(run.main(args), 1)
            self.assertIn('user-space suite expected', said.getvalue())
            data = json.loads((out / 'verdict.json').read_text())
            self.assertEqual(data['context']['userspace'], '1')
            self.assertIn(['missing', 'cpuhp_sysfs'],
                          [[p['category'], p['name']] for p in data['problems']])
            with contextlib.redirect_stdout(io.StringIO()), \
                    mock.patch.object(outputs, 'expectations', run_default_expectations):
                self.assertEqual(run.main(args + ['--userspace', '0']), 0)


class RealMachineConsoleTest(unittest.TestCase):
    """The same console as a real machine's log would show it: same verdict."""

    # Each as a format of the line number n.
    PREFIXES = (
        '[{t:12.6f}] ',                                 # printk time
        '[{t:12.6f}][{caller:>6}] ',                    # + caller id
        '[Fri Dec  4 16:28:11 2026] ',                  # dmesg -T
        'Dec 04 16:28:11 host kernel: ',                # journalctl -k
        'Dec  4 16:28:11 host kernel: [{t:12.6f}] ',    # syslog
        '<6>[{t:12.6f}] ',                              # /dev/kmsg level
    )

    @staticmethod
    def prefix(fmt: str, n: int) -> str:
        return fmt.format(t=n / 1000, caller=f'T{n % 97 + 1}')

    def test_prefixed_consoles_judge_the_same(self) -> None:
        plain = judge(lines())
        for fmt in self.PREFIXES:
            with self.subTest(prefix=self.prefix(fmt, 1234)):
                console = [self.prefix(fmt, n) + ln for n, ln in enumerate(lines())]
                v = judge(console)
                self.assertTrue(v.ok, v.problems)
                self.assertEqual(v.statuses, plain.statuses)
                self.assertEqual(len(v.known), len(plain.known))

    def test_prefixed_report_is_found(self) -> None:
        console = lines()
        i = at(console, CASE)
        console = console[:i] + UBSAN + console[i:]
        console = [f'[{n / 1000:12.6f}] ' + ln for n, ln in enumerate(console)]
        self.assertEqual([p[2] for p in problems(judge(console))], ['ubsan'])


class KnownFailureScopeTest(unittest.TestCase):
    """A known failure covers what it names, nothing else in its case (1067cc5)."""

    FROZEN = 'cpuhp_rollback.cpuhp_rollback_frozen_clear_after_thaw'

    def test_the_named_failure_alone_is_green(self) -> None:
        v = judge(lines())
        self.assertIn(self.FROZEN, [p.name for p in v.known])
        self.assertEqual(v.not_seen, [])

    def test_a_second_failure_in_a_known_case_is_red(self) -> None:
        console = lines()
        i = at(console, 'not ok 11 cpuhp_rollback_frozen_clear_after_thaw')
        extra = ['    # cpuhp_rollback_frozen_clear_after_thaw: EXPECTATION FAILED at '
                 'kernel/tests/cpuhp_rollback_kunit.c:210',
                 '    Expected cpuhp_kunit_enabled(), but', 'hotplug left disabled']
        v = judge(console[:i] + extra + console[i:])
        self.assertEqual([(p.category, p.name) for p in v.problems], [('failed', self.FROZEN)])
        self.assertIn('cpuhp_rollback_kunit.c:210', v.problems[0].message)
        self.assertIn('named by no known failure', v.problems[0].message)
        # The known one is still listed.
        self.assertIn(self.FROZEN, [p.name for p in v.known])

    def test_a_changed_message_is_red(self) -> None:
        console = [ln.replace('frozen == 0', 'frozen == 2') for ln in lines()]
        v = judge(console)
        self.assertIn(('failed', self.FROZEN, ''), problems(v))

    def test_a_report_in_a_known_case_is_red(self) -> None:
        console = lines()
        i = at(console, 'not ok 11 cpuhp_rollback_frozen_clear_after_thaw')
        warn = ['------------[ cut here ]------------', 'Unbalanced cpu hotplug enable',
                'WARNING: CPU: 0 PID: 80 at kernel/cpu.c:386 __cpu_hotplug_enable+0x61/0x80',
                'Call Trace:', '---[ end trace 0000000000000000 ]---']
        v = judge(console[:i] + warn + console[i:])
        self.assertEqual(problems(v), [('kernel-log', self.FROZEN, 'warning')])

    def test_a_crash_in_a_known_case_is_red(self) -> None:
        console = lines()
        v = judge(console[:at(console, 'not ok 11 cpuhp_rollback_frozen_clear_after_thaw')])
        self.assertIn(('crashed', self.FROZEN, ''), problems(v))
        self.assertNotIn(self.FROZEN, [p.name for p in v.known])

    def test_a_known_failure_that_did_not_occur_is_listed(self) -> None:
        console = lines()
        i = at(console, "# cpu3/online after target offline is '1', wanted '0'")
        console = console[:i] + console[i + 1:]
        console[i] = console[i].replace('not ok', 'ok')
        v = judge(console)
        self.assertTrue(v.ok, v.problems)
        self.assertEqual([p.name for p in v.not_seen], ['cpuhp_sysfs.online_file_follows_target'])
        self.assertIn('did not occur', ' '.join(outputs.summary(v)))

    def test_a_skipped_case_does_not_say_its_known_failure_is_gone(self) -> None:
        """An expected skip (arm64: no suspend to RAM) ran nothing: no 'did not occur'."""
        console = lines()
        i = at(console, "# cpu3/online after target offline is '1', wanted '0'")
        console = console[:i] + console[i + 1:]
        console[i] = console[i].replace('not ok', 'ok').rstrip() + ' # SKIP not here'
        v = judge(console)
        self.assertNotIn('cpuhp_sysfs.online_file_follows_target', [p.name for p in v.not_seen])

    def test_races_are_not_listed_when_they_do_not_happen(self) -> None:
        v = judge(lines())
        self.assertNotIn('cpuhp_*', [p.name for p in v.not_seen])


if __name__ == '__main__':
    unittest.main()


class KunitPyAgreementTest(unittest.TestCase):
    """kunit.py's own parser reads our consoles as we do (make run checks it
    on every run: the kunit.py category). The *_kunit_py.json files are
    `kunit.py parse --json` of the console next to them, by the kunit.py of
    that console's own tree."""

    def verdict_of(self, name: str, kver: str) -> verdict.Verdict:
        context = dict(CONTEXT, kver=kver)
        exp = run_default_expectations('', context, userspace=True)
        return judging.judge_console(ktap.read_console(DATA / name), exp)[2]

    def test_recorded_runs_agree(self) -> None:
        for kver in ('6.12', '6.1'):
            with self.subTest(kver=kver):
                v = self.verdict_of(f'run_default_{kver}_console.log', kver)
                self.assertTrue(v.ok, v.problems)
                self.assertEqual(kunitjson.kunit_py_disagreements(
                    DATA / f'run_default_{kver}_kunit_py.json', v), [])

    def test_6_1_before_the_fix_disagrees(self) -> None:
        # 6.1's KUnit printed an empty line after each parameter block's
        # header (src/6.1/0008 before this fix): kunit.py read every
        # parameterised case as crashed, while we read them passed.
        v = judging.judge_console(ktap.read_console(DATA / 'first_default_6.1_console.log'),
                                  kunitspec.Expectations())[2]
        differ = kunitjson.kunit_py_disagreements(DATA / 'first_default_6.1_kunit_py.json', v)
        self.assertGreaterEqual(len(differ), 43)
        self.assertTrue(any('kunit.py (absent), ours PASS' in d for d in differ))

    def test_a_run_that_disagrees_is_red(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            data = json.loads((DATA / 'run_default_6.12_kunit_py.json').read_text())
            data['sub_groups'][0]['test_cases'].append({'name': 'ghost', 'status': 'PASS'})
            (out / 'results.json').write_text(json.dumps(data))
            shutil.copy(CONSOLE, out / 'console.log')
            exp = run_default_expectations('', dict(CONTEXT), userspace=True)
            _, v = outputs.judge(out, out / 'console.log', exp, 0, None, 600, 'Starting KUnit Kernel',
                             out / 'results.json')
            self.assertEqual([p.category for p in v.problems], ['kunit.py'])
            self.assertIn('cpuhp_install.ghost: kunit.py PASS, ours (absent)', v.problems[0].detail)


class KunitPyDerailedTest(unittest.TestCase):
    """A kernel line inside the KTAP derails kunit.py's parser, not the run.

    derailed_smp2_6.12_console.log: CI's make run SMP=2 at 6783090, where
    the i8042 probe printed 'input: AT Raw Set 2 keyboard ...' between
    cpuhp_install's 'KTAP version 1' and '# Subtest:' line; kunit.py read
    622 results one level off (derailed_..._kunit_py.json, its live --json)
    and, given the KTAP lines alone, as we do (..._ktap_only.json, recorded
    with `kunit.py parse --json` of 6.12.118)."""

    CONTEXT = dict(CONTEXT, smp='2')

    def judge(self, fake_kunit_py: str) -> Tuple[Path, verdict.Verdict, List[str]]:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        out = Path(tmp.name)
        shutil.copy(DATA / 'derailed_smp2_6.12_console.log', out / 'console.log')
        shutil.copy(DATA / 'derailed_smp2_6.12_kunit_py.json', out / 'results.json')
        kunit_py = out / 'kunit.py'
        kunit_py.write_text(fake_kunit_py)
        exp = derailed_expectations('', dict(self.CONTEXT), userspace=True)
        logged: List[str] = []
        with mock.patch.object(say, 'log', logged.append):
            _, v = outputs.judge(out, out / 'console.log', exp, 1, None, 600,
                             'Starting KUnit Kernel', out / 'results.json', kunit_py)
        return out, v, logged

    @staticmethod
    def replays(recorded: Path) -> str:
        """A kunit.py whose parse writes @recorded as its --json."""
        return ('import shutil, sys\n'
                'json = [a for a in sys.argv if a.startswith("--json=")][0][7:]\n'
                'assert sys.argv[1] == "parse" and sys.argv[-1].endswith(".ktap")\n'
                f'shutil.copy({str(recorded)!r}, json)\n')

    def test_the_kernel_line_is_found(self) -> None:
        console = ktap.read_console(DATA / 'derailed_smp2_6.12_console.log').lines
        lines, foreign = kunitjson.kernel_lines_in_ktap(console)
        kept = len(lines) - len(foreign)
        derailing = [(n, ln) for n, ln, after_header in foreign if after_header]
        self.assertEqual(derailing, [(154, 'input: AT Raw Set 2 keyboard as '
                                           '/devices/platform/i8042/serio0/input/input0')])
        self.assertGreater(len(foreign), 100)      # the rest kunit.py reads past
        self.assertGreater(kept, 600)
        # Every KUnit line is kept: the KTAP alone has every result of ours.
        kept_lines = [ln for ln in ktap.extract(console) if kunitjson.KTAP_LIKE.match(ln)]
        self.assertEqual(sum(1 for ln in kept_lines if ktap.RESULT.match(ln.strip())),
                         sum(1 for ln in ktap.extract(console) if ktap.RESULT.match(ln.strip())))

    def test_derailed_parser_is_not_the_run(self) -> None:
        ktap_only = DATA / 'derailed_smp2_6.12_kunit_py_ktap_only.json'
        out, v, logged = self.judge(self.replays(ktap_only))
        self.assertEqual([p.category for p in v.problems], [], v.problems)
        note = [m for m in logged if 'was derailed by' in m]
        self.assertEqual(len(note), 1, logged)
        self.assertIn("console line 154: 'input: AT Raw Set 2 keyboard", note[0])
        self.assertIn('read 622 result(s) differently', note[0])
        # results.json is the agreeing parse (with our verdict merged in).
        self.assertEqual(kunitjson.kunit_py_results(out / 'results-derailed.json'),
                         kunitjson.kunit_py_results(DATA / 'derailed_smp2_6.12_kunit_py.json'))
        merged = kunitjson.kunit_py_results(out / 'results.json')
        self.assertEqual(merged['cpuhp_install.cpuhp_install_startup_fails.'
                                'ap_online_dyn_first_cpu'], 'PASS')

    def test_still_disagreeing_stays_red(self) -> None:
        # kunit.py's parse of the KTAP alone is its derailed one again.
        _, v, _ = self.judge(self.replays(DATA / 'derailed_smp2_6.12_kunit_py.json'))
        self.assertEqual([p.category for p in v.problems], ['kunit.py'])
        self.assertIn('622 result(s)', v.problems[0].message)

    def test_the_derailed_exit_status_is_not_the_runs(self) -> None:
        # tree-test in CI at ee86eb8: the i8042 mouse this time, in a run
        # where every case passed and nothing was known to fail, so only
        # the derail explains kunit.py's exit status 1.
        out = Path(self.enterContext(tempfile.TemporaryDirectory()))
        (out / 'console.log').write_text(
            'KTAP version 1\n1..1\n    KTAP version 1\n'
            'input: ImExPS/2 Generic Explorer Mouse as '
            '/devices/platform/i8042/serio1/input/input3\n'
            '    # Subtest: cpuhp_rollback\n    1..1\n    ok 1 cpuhp_rollback_down_fails\n'
            'ok 1 cpuhp_rollback\n')
        case = {'name': 'cpuhp_rollback_down_fails', 'status': 'PASS'}
        (out / 'results.json').write_text(json.dumps({   # one level off
            'name': 'KUnit Test Group', 'test_cases': [], 'sub_groups': [{
                'name': '', 'test_cases': [], 'sub_groups': [{
                    'name': 'cpuhp_rollback', 'sub_groups': [], 'test_cases': [case]}]}]}))
        (out / 'ktap_only.json').write_text(json.dumps({
            'name': 'KUnit Test Group', 'test_cases': [], 'sub_groups': [{
                'name': 'cpuhp_rollback', 'sub_groups': [], 'test_cases': [case]}]}))
        kunit_py = out / 'kunit.py'
        kunit_py.write_text(self.replays(out / 'ktap_only.json'))
        exp = outputs.expectations('cpuhp_rollback.cpuhp_rollback_down_fails', dict(CONTEXT))
        logged: List[str] = []
        with mock.patch.object(say, 'log', logged.append):
            _, v = outputs.judge(out, out / 'console.log', exp, 1, None, 600,
                             'Starting KUnit Kernel', out / 'results.json', kunit_py)
        self.assertEqual(v.problems, [])
        self.assertTrue(any('exits 1 for the results its derailed parse made up' in m
                            for m in logged), logged)

    def test_kunit_py_that_fails_leaves_it_red(self) -> None:
        _, v, _ = self.judge('import sys\nsys.exit(2)\n')
        self.assertEqual([p.category for p in v.problems], ['kunit.py'])


class CleanBootTest(unittest.TestCase):
    """The boot of every recorded kernel (default, debug, rt, 6.1; the
    KASAN+lockdep reports kernel in data/reports/) up to its first KTAP
    line holds no finding: no harmless boot line is taken for a report."""

    def test_recorded_boots_are_clean(self) -> None:
        logs = [p for p in sorted(DATA.glob('*.log')) + sorted((DATA / 'reports').glob('*.log'))
                if 'Linux version' in p.read_text(errors='replace')]
        self.assertGreaterEqual(len(logs), 6)
        for path in logs:
            with self.subTest(console=path.name):
                console = ktap.read_console(path).lines
                start = next((n for n, ln in enumerate(console, 1) if ln.strip().startswith(
                    ('KTAP version', 'TAP version', 'cpuhp-kunit: provoke '))), len(console))
                found = [f for f in hygiene.check(console) if f.lineno < start]
                self.assertEqual(found, [])


class RecordedMaskingTest(unittest.TestCase):
    """The break an entry masked, recorded from a real 6.1.192 run (unedited): make
    mutate KVER=6.1 with mutants/freeze-error-keeps-hotplug-enabled.patch.
    cpuhp_rollback_freeze_fails is a known failure on 6.1 for the boot CPU's
    target; the break adds 'WARNING: ... __cpu_hotplug_enable' to that case,
    which the case-wide entry swallowed (make judge said PASS)."""

    def test_the_second_failure_is_red_and_the_known_one_listed(self) -> None:
        context = dict(CONTEXT, kver='6.1')
        exp = run_default_expectations('', context, userspace=True)
        v = judging.judge_console(ktap.read_console(DATA / 'freeze_break_6.1_console.log'),
                                  exp)[2]
        case = 'cpuhp_rollback.cpuhp_rollback_freeze_fails'
        self.assertEqual(problems(v), [('kernel-log', case, 'warning')])
        self.assertIn('__cpu_hotplug_enable', v.problems[0].message)
        self.assertIn(case, [p.name for p in v.known if p.category == 'failed'])
