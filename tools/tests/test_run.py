"""Tests for cpuhpk.run (the verdict of a run, make judge, stopping), its kunit.py
command line and build stamp (cpuhpk.kunitcmd, cpuhpk.buildstamp) and cpuhpk.mutate."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple
from unittest import mock

from cpuhpk import (arch, buildstamp, execute, kunitcmd, kunitjson, mutate, mutreport, outputs,
                    proc, run, runspec, say, tree, verdict)
from cpuhpk.paths import REPO
from cpuhpk.runspec import RunSpec
from tests.recorded import expectations as recorded_expectations

DATA = Path(__file__).parent / 'data'
junitparser: Any = importlib.import_module('junitparser')
def out_name(kver: str, config: str, **knobs: Any) -> str:
    """The name of the output directory of a run of @kver, @config and @knobs."""
    return RunSpec(kver=kver, config=config, **knobs).output_dir().name


def junit_bad(path: Path) -> int:
    """Failures plus errors in a junit.xml, read by junitparser."""
    xml = junitparser.JUnitXml.fromfile(str(path))
    return sum(1 for suite in xml for case in suite for r in case.result
               if type(r).__name__ in ('Failure', 'Error'))


def alive(pid: int) -> bool:
    """Whether @pid still runs, allowing a SIGKILL sent to it 5 s to take effect."""
    deadline = time.monotonic() + 5
    while True:
        try:
            # A zombie (not yet reaped by its parent) is dead too.
            running = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0] != 'Z'
        except OSError:
            return False
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.05)


class JudgeTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        self.out = Path(self._tmp.name)
        self.exp = recorded_expectations('', {'kver': '6.12', 'config': 'default', 'smp': '4'})

    def judge(self, console: Optional[str], rc: Optional[int], kunit_log: str = '',
              killed_after: Optional[float] = None) -> verdict.Verdict:
        if console:
            shutil.copy(DATA / console, self.out / 'console.log')
        return outputs.judge(self.out, self.out / 'console.log', self.exp, rc, killed_after, 600,
                         kunit_log)[1]

    def test_pass_writes_outputs(self) -> None:
        v = self.judge('pass_default_console.log', 0)
        self.assertEqual(v.problems, [])
        ktap_lines = (self.out / 'results.ktap').read_text().splitlines()
        self.assertEqual(ktap_lines[0], 'KTAP version 1')
        data = json.loads((self.out / 'verdict.json').read_text())
        self.assertEqual((data['verdict'], data['counts']['passed']), ('pass', 44))
        self.assertEqual(junit_bad(self.out / 'junit.xml'), 0)

    def test_failure(self) -> None:
        v = self.judge('fail_mutant_console.log', 1)
        self.assertEqual([p.category for p in v.problems], ['failed'])
        self.assertEqual(junit_bad(self.out / 'junit.xml'), 1)
        self.assertEqual(json.loads((self.out / 'verdict.json').read_text())['verdict'], 'fail')

    def test_kernel_warning_is_red_in_every_file(self) -> None:
        v = self.judge('crafted_warning_in_case.log', 1)
        self.assertEqual([(p.category, p.name) for p in v.problems],
                         [('kernel-log', 'cpuhp_rollback.cpuhp_rollback_freeze_fails')])
        self.assertEqual(junit_bad(self.out / 'junit.xml'), 1)
        data = json.loads((self.out / 'verdict.json').read_text())
        self.assertEqual(data['problems_by_category'], {'kernel-log': 1})

    def test_results_json_carries_the_verdict(self) -> None:
        # kunit.py's own view: every case PASS (it knows nothing of kernel reports).
        (self.out / 'results.json').write_text(json.dumps({
            'name': 'KUnit Test Group', 'test_cases': [], 'sub_groups': [{
                'name': 'cpuhp_rollback', 'sub_groups': [], 'test_cases': [
                    {'name': 'cpuhp_rollback_freeze_fails', 'status': 'PASS'},
                    {'name': 'cpuhp_rollback_cycles', 'status': 'PASS'}]}]}))
        self.judge('crafted_warning_in_case.log', 1)
        data = json.loads((self.out / 'results.json').read_text())
        cases = {c['name']: c['status'] for c in data['sub_groups'][0]['test_cases']}
        self.assertEqual(cases, {'cpuhp_rollback_freeze_fails': 'FAIL',
                                 'cpuhp_rollback_cycles': 'PASS'})
        # A run-level problem is an ERROR case of its own; a known failure is SKIP.
        kunitjson.amend_kunit_json(self.out / 'results.json', verdict.Verdict(
            problems=[verdict.Problem('timeout', '', 'hung')],
            known=[verdict.Problem('failed', 'cpuhp_rollback.cpuhp_rollback_cycles', 'x')]))
        data = json.loads((self.out / 'results.json').read_text())
        self.assertIn({'name': 'cpuhp-kunit.timeout', 'status': 'ERROR'}, data['test_cases'])
        cases = {c['name']: c['status'] for c in data['sub_groups'][0]['test_cases']}
        self.assertEqual(cases['cpuhp_rollback_cycles'], 'PASS')

    def test_killed_by_the_outer_timer(self) -> None:
        v = self.judge('crafted_cut_after_param.log', None, killed_after=2760.4)
        messages = [p.message for p in v.problems if p.category == 'timeout']
        self.assertEqual(len(messages), 1)
        self.assertIn('killed after 2760 s', messages[0])
        self.assertNotIn('None', ' '.join(str(p) for p in v.problems))

    def test_kernel_timeout(self) -> None:
        v = self.judge('hang_mutant_console.log', 1, "Command '['qemu-system-x86_64']' "
                       'timed out after 600 seconds')
        self.assertIn('timeout', [p.category for p in v.problems])
        self.assertGreaterEqual(junit_bad(self.out / 'junit.xml'), 1)

    def test_build_failure(self) -> None:
        log = ('[10:00:00] Configuring KUnit Kernel ...\n[10:00:01] Building KUnit Kernel ...\n'
               'ERROR:root:../kernel/cpu.c: In function \u2018cpuhp_invoke_callback\u2019:\n'
               "../kernel/cpu.c:190:9: error: 'x' undeclared (first use in this function)\n"
               'make[3]: *** [../scripts/Makefile.build:229: kernel/cpu.o] Error 1\n')
        v = self.judge(None, 1, log)
        self.assertEqual([p.category for p in v.problems], ['build'])
        self.assertIn("error: 'x' undeclared", v.problems[0].message)
        self.assertIn('kernel/cpu.o] Error 1', v.problems[0].detail)
        self.assertEqual(junit_bad(self.out / 'junit.xml'), 1)

    def test_kernel_never_ran(self) -> None:
        v = self.judge(None, 1, 'something else went wrong')
        self.assertEqual(len(v.problems), 1)
        self.assertIn('the kernel never ran (kunit.py exited 1)', v.problems[0].message)

    def test_kunit_py_disagreeing(self) -> None:
        v = self.judge('pass_default_console.log', 1)
        self.assertEqual([p.category for p in v.problems], ['kunit.py'])
        self.assertEqual(junit_bad(self.out / 'junit.xml'), 1)

    def test_all_skipped_is_decided_by_the_table(self) -> None:
        (self.out / 'console.log').write_text(
            'KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: cpuhp_rollback\n'
            '    1..1\n    ok 1 cpuhp_rollback_up_ap_fails # SKIP needs two online CPUs\n'
            'ok 1 cpuhp_rollback\n')
        self.exp = outputs.expectations('cpuhp_rollback.cpuhp_rollback_up_ap_fails',
                                    {'kver': '6.12', 'config': 'default', 'smp': '1'})
        self.assertEqual(self.judge(None, 1).problems, [])
        self.exp.context['smp'] = '4'
        self.assertEqual([p.category for p in self.judge(None, 1).problems],
                         ['unexpected-skip'])

    def test_userspace_alone_is_decided_by_its_suite(self) -> None:
        (self.out / 'console.log').write_text(
            'KTAP version 1\n1..0\n    KTAP version 1\n    # Subtest: cpuhp_sysfs\n'
            '    1..1\n    ok 1 states_lists_the_table\nok 99 cpuhp_sysfs\n')
        self.exp = outputs.expectations('cpuhp_sysfs.states_lists_the_table',
                                    {'kver': '6.12', 'config': 'default', 'smp': '4'},
                                    userspace=True)
        self.assertEqual(self.judge(None, 1, '[ERROR] Test: main: 0 tests run!\n'
                                    'Testing complete. Ran 0 tests: errors: 1\n').problems, [])
        self.assertEqual([p.category for p in self.judge(None, 1, 'other\n').problems],
                         ['kunit.py'])
        self.exp = outputs.expectations('cpuhp_*', {'kver': '6.12', 'config': 'default',
                                                'smp': '4'}, userspace=True)
        self.assertFalse(outputs.only_userspace(self.exp))

    def test_added_problem_reaches_junit(self) -> None:
        self.judge('pass_default_console.log', 0)
        outputs.add_problems(self.out, [verdict.Problem('coverage', '', 'coverage gate: low')])
        self.assertEqual(junit_bad(self.out / 'junit.xml'), 1)
        v, _ = verdict.read_json(self.out / 'verdict.json')
        self.assertEqual((v.passed, [p.category for p in v.problems]), (44, ['coverage']))

    def test_green_run_without_gcov_data_is_red(self) -> None:
        # The recorded default console predates the initramfs: no gcov data.
        v = self.judge('pass_default_console.log', 0)
        self.assertTrue(v.ok)
        with mock.patch.object(say, 'log'):
            v = execute.coverage_report(self.out, self.out, self.out, '6.12', v)
        self.assertEqual([p.category for p in v.problems], ['coverage'])
        self.assertIn('no gcov data on the console', str(v.problems[0]))
        self.assertEqual(junit_bad(self.out / 'junit.xml'), 1)

    def test_red_run_without_gcov_data_gets_no_second_problem(self) -> None:
        v = self.judge('fail_mutant_console.log', 1)
        before = len(v.problems)
        with mock.patch.object(say, 'log'):
            v = execute.coverage_report(self.out, self.out, self.out, '6.12', v)
        self.assertEqual(len(v.problems), before)

    def test_build_failure_gets_no_coverage_traceback(self) -> None:
        # A build that failed leaves no console: the verdict says so, and
        # the coverage report adds nothing (it used to raise FileNotFoundError).
        v = self.judge('fail_mutant_console.log', 1)
        (self.out / 'console.log').unlink(missing_ok=True)
        before = len(v.problems)
        with mock.patch.object(say, 'log') as log:
            v = execute.coverage_report(self.out, self.out, self.out, '6.12', v)
        self.assertEqual(len(v.problems), before)
        self.assertIn('no console', str(log.call_args))

    def test_summary_lists_skips_and_problems(self) -> None:
        v = verdict.Verdict(passed=1, skipped=2, skips=[
            verdict.Skip('a.b', 'needs two online CPUs', True, 'SMP=1'),
            verdict.Skip('a.c', 'no TSC', False)],
            statuses={'a.a': 'pass', 'a.b': 'skip', 'a.c': 'skip'})
        v.add('unexpected-skip', 'a.c', 'skipped, not expected here: no TSC')
        text = '\n'.join(outputs.summary(v))
        self.assertIn('skipped (expected) a.b: needs two online CPUs [SMP=1]', text)
        self.assertIn('skipped (NOT EXPECTED) a.c: no TSC', text)
        # The unexpected skip counts as failed in the closing line.
        self.assertTrue(text.endswith('cpuhp-kunit: FAIL\nkunit: 1 passed, 1 failed, 1 skipped'))

    def test_closing_line_of_a_red_run_never_says_0_failed(self) -> None:
        for console in ('crafted_warning_in_case.log', 'hang_mutant_console.log'):
            with self.subTest(console=console):
                v = self.judge(console, 1)
                self.assertFalse(v.ok)
                self.assertNotIn(' 0 failed', outputs.counts_line(v))
        v = self.judge('crafted_warning_in_case.log', 1)
        self.assertEqual(outputs.counts_line(v), 'kunit: 43 passed, 1 failed, 0 skipped')


class JudgeFileTest(unittest.TestCase):
    """make judge on consoles from anywhere, hostile ones included."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        self.tmp = Path(self._tmp.name)

    def judge_file(self, data: Optional[bytes] = None, src: Optional[Path] = None,
                   *extra: str) -> int:
        if src is None:
            src = self.tmp / 'in.log'
            src.write_bytes(data or b'')
        with mock.patch('sys.stdout'), mock.patch('sys.stderr'), \
                mock.patch.object(outputs, 'expectations', recorded_expectations):
            return run.main(['--judge', str(src), '--out', str(self.tmp / 'out'), *extra])

    def problems(self) -> List[str]:
        data = json.loads((self.tmp / 'out' / 'verdict.json').read_text())
        return [p['category'] for p in data['problems']]

    def test_recorded_pass(self) -> None:
        self.assertEqual(self.judge_file(src=DATA / 'pass_debug_console.log'), 0)
        self.assertEqual(junit_bad(self.tmp / 'out' / 'junit.xml'), 0)

    def test_recorded_coverage_console(self) -> None:
        # Its gcov dump is not read by the hygiene check.
        self.assertEqual(self.judge_file(src=DATA / 'coverage_console.log'), 0)

    def test_filter(self) -> None:
        self.assertEqual(self.judge_file(None, DATA / 'pass_default_console.log', '--filter',
                                         'cpuhp_rollback.*'), 0)
        self.assertEqual(self.judge_file(None, DATA / 'crafted_cut_after_param.log',
                                         '--filter', 'cpuhp_install.*'), 1)
        self.assertIn('crashed', self.problems())

    def test_garbage(self) -> None:
        for data in (b'\x00\xff\xfe' * 1000, b'\xc3\x28 invalid utf-8\n' * 100,
                     b'x' * (10 << 20), b''):
            with self.subTest(data=data[:8]):
                self.assertEqual(self.judge_file(data), 1)
                self.assertTrue(self.problems())
                self.assertGreaterEqual(junit_bad(self.tmp / 'out' / 'junit.xml'), 1)

    def test_one_gigabyte_console(self) -> None:
        big = self.tmp / 'big.log'
        with open(big, 'wb') as f:
            f.write((DATA / 'pass_default_console.log').read_bytes())
            f.truncate(1 << 30)
        self.assertEqual(self.judge_file(src=big), 1)
        self.assertIn('console', self.problems())
        self.assertLessEqual((self.tmp / 'out' / 'console.log').stat().st_size,
                             (32 << 20) + 1)

    def test_missing_file(self) -> None:
        self.assertEqual(self.judge_file(src=self.tmp / 'nonexistent.log'), 1)
        self.assertEqual(self.problems(), ['console'])


class StopTest(unittest.TestCase):
    """kunit.py and all it started end with the run: timer, Ctrl-C, SIGTERM."""

    SCRIPT = 'sleep 300 & echo $!; echo started; wait'

    def test_outer_timer_kills_the_whole_group(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / 'kunit.log'
            with mock.patch('sys.stdout'):
                rc, killed_after = proc.run_logged(['sh', '-c', self.SCRIPT], Path(tmp), log, 1.0)
            self.assertIsNone(rc)
            assert killed_after is not None
            self.assertGreaterEqual(killed_after, 1.0)
            grandchild = int(log.read_text().split()[0])
            self.assertFalse(alive(grandchild))

    def test_signal_stops_the_group_first(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / 'kunit.log'
            seen: List[str] = []

            class Out:
                def write(self, line: str) -> None:
                    seen.append(line)
                    if line.strip() == 'started':
                        os.kill(os.getpid(), signal.SIGTERM)

            old = signal.getsignal(signal.SIGTERM)
            proc.raise_on_signals((signal.SIGTERM,))
            try:
                with mock.patch('sys.stdout', Out()):
                    with self.assertRaises(proc.Interrupted):
                        proc.run_logged(['sh', '-c', self.SCRIPT], Path(tmp), log, 60)
            finally:
                signal.signal(signal.SIGTERM, old)
            self.assertFalse(alive(int(seen[0])))

    def test_make_run_interrupted_by_sigterm(self) -> None:
        """The whole tool: SIGTERM while kunit.py runs, a red verdict says so."""
        with tempfile.TemporaryDirectory() as tmp:
            fake = Path(tmp) / 'fake_kunit.py'
            fake.write_text('import subprocess, sys\n'
                            'p = subprocess.Popen(["sleep", "300"])\n'
                            'print(p.pid, flush=True)\nprint("started", flush=True)\n'
                            'p.wait()\n')
            t = tree.Tree(kver='6.12', package='x', version='9.9', path=Path(tmp))
            out = Path(tmp) / 'out'
            env = dict(os.environ, CPUHP_KUNIT_CACHE=str(Path(tmp) / 'cache'))
            code = ('import sys; sys.path.insert(0, %r)\n'
                    'from unittest import mock\nfrom pathlib import Path\n'
                    'from cpuhpk import kunitcmd, run, tree\n'
                    't = tree.Tree(kver="6.12", package="x", version="9.9", path=Path(%r))\n'
                    'with mock.patch.object(tree, "prepare", return_value=t), '
                    'mock.patch.object(kunitcmd, "kunit_command",\n'
                    '                  return_value=[sys.executable, %r]):\n'
                    '    sys.exit(run.main(["--out", %r]))\n'
                    % (str(Path(run.__file__).parents[1]), str(t.path), str(fake), str(out)))
            proc = subprocess.Popen([sys.executable, '-c', code], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            assert proc.stdout is not None
            grandchild = 0
            for line in proc.stdout:
                if line.strip().isdigit():
                    grandchild = int(line)
                if line.strip() == 'started':
                    proc.send_signal(signal.SIGTERM)
                    break
            proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 128 + signal.SIGTERM)
            self.assertFalse(alive(grandchild))
            self.assertEqual(junit_bad(out / 'junit.xml'), 1)
            v, _ = verdict.read_json(out / 'verdict.json')
            self.assertIn('interrupted', [p.category for p in v.problems])


class CommandTest(unittest.TestCase):
    def command(self, *argv: str) -> List[str]:
        args = RunSpec.from_argv(argv)
        t = tree.Tree(kver='6.12', package='x', version='6.12.118', path=Path('/linux'))
        return kunitcmd.kunit_command(t, args, Path('/build'), Path('/out'), Path('/q.py'))

    def test_every_kernel_profiles_the_two_objects(self) -> None:
        cmd = self.command('--config', 'debug')
        self.assertIn('--make_options=CPUHP_KUNIT_GCOV=y', cmd)
        self.assertIn('--qemu_config=/q.py', cmd)
        self.assertNotIn('--arch=x86_64', cmd)
        self.assertEqual([a for a in cmd if a.startswith('--kunitconfig=')],
                         [f'--kunitconfig={REPO}/kconfigs/default.config',
                          f'--kunitconfig={REPO}/kconfigs/x86_64/default.config',
                          f'--kunitconfig={REPO}/kconfigs/debug.config'])

    def test_fragments_combine_in_order(self) -> None:
        """CONFIG=a+b: default, a, b; a series' own addition follows its fragment."""
        cmd = self.command('--config', 'rt+debug')
        self.assertEqual([a for a in cmd if a.startswith('--kunitconfig=')],
                         [f'--kunitconfig={REPO}/kconfigs/{n}.config'
                          for n in ('default', 'x86_64/default', 'rt', 'debug')])
        cmd = self.command('--config', 'sanitizers')
        self.assertEqual([a for a in cmd if a.startswith('--kunitconfig=')],
                         [f'--kunitconfig={REPO}/kconfigs/{n}.config'
                          for n in ('default', 'x86_64/default', 'sanitizers',
                                    '6.12/sanitizers')])
        self.assertEqual(kunitcmd.fragments('sanitizers', '6.1'),
                         [REPO / 'kconfigs' / f'{n}.config'
                          for n in ('default', 'x86_64/default', 'sanitizers')])
        for bad in ('rt+', 'nosuch', 'rt+nosuch'):
            with self.assertRaisesRegex(say.PrepareError, 'no kconfigs/.*known: .*sanitizers'):
                kunitcmd.fragments(bad, '6.12')

    def test_strict_runs_what_wedges(self) -> None:
        self.assertNotIn('--kernel_args=cpuhp_kunit.sweep_wedging=1', self.command())
        self.assertIn('--kernel_args=cpuhp_kunit.sweep_wedging=1',
                      self.command('--strict', '1'))

    def test_nosmt_topologies_boot_with_their_arguments(self) -> None:
        self.assertFalse([a for a in self.command('--topology', 'smt') if 'nosmt' in a])
        cmd = self.command('--topology', 'nosmt')
        self.assertIn('--kernel_args=nosmt', cmd)
        self.assertNotIn('--kernel_args=cpuhp.parallel=0', cmd)
        self.assertIn('--qemu_args=-smp 4,sockets=1,cores=2,threads=2 -cpu Nehalem', cmd)
        cmd = self.command('--topology', 'nosmt-force')
        self.assertIn('--kernel_args=nosmt=force', cmd)
        self.assertIn('--kernel_args=cpuhp.parallel=0', cmd)
        self.assertIn('--kernel_args=mitigations=auto,nosmt', cmd)

    def test_maxcpus_leaves_one_cpu_and_two_slots(self) -> None:
        self.assertFalse([a for a in self.command('--topology', 'smt') if 'maxcpus' in a])
        cmd = self.command('--topology', 'maxcpus')
        self.assertIn('--kernel_args=maxcpus=3', cmd)
        self.assertIn('--qemu_args=-smp 4,maxcpus=6,sockets=1,cores=3,threads=2 -cpu '
                      'Nehalem,-hypervisor -smbios type=1,serial=VMware-cpuhp-kunit', cmd)

    def test_stress_seed_and_length_reach_the_kernel(self) -> None:
        cmd = self.command()
        self.assertFalse([a for a in cmd if 'stress' in a])
        cmd = self.command('--seed', '1443673203', '--stress-ops', '1200')
        self.assertIn('--kernel_args=cpuhp_kunit.stress_seed=1443673203', cmd)
        self.assertIn('--kernel_args=cpuhp_kunit.stress_ops=1200', cmd)

    def test_mutants_of_a_kernel_series(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            m = Path(tmp)
            for name in ('a', 'b', 'c'):
                (m / f'{name}.patch').write_text('# x\n')
            (m / '6.1').mkdir()
            (m / '6.1' / 'b.patch').write_text('# x on 6.1\n')
            (m / '6.1' / 'not-here').write_text('# comment\nc | no such promise on 6.1\n')
            self.assertEqual(mutate.mutant_set(m, '6.12'), [m / 'a.patch', m / 'b.patch',
                                                            m / 'c.patch'])
            self.assertEqual(mutate.mutant_set(m, '6.1'), [m / 'a.patch', m / '6.1' / 'b.patch'])
            (m / '6.1' / 'not-here').write_text('d | gone\n')
            with self.assertRaisesRegex(ValueError, 'no mutant d'):
                mutate.mutant_set(m, '6.1')

    def test_mutants_of_an_architecture(self) -> None:
        """mutants/arm64/ overrides by name after mutants/<KVER>/, on arm64 only."""
        with tempfile.TemporaryDirectory() as tmp:
            m = Path(tmp)
            for name in ('a', 'b'):
                (m / f'{name}.patch').write_text('# x\n')
            (m / 'arm64').mkdir()
            (m / 'arm64' / 'b.patch').write_text('# x on arm64\n')
            self.assertEqual(mutate.mutant_set(m, '6.12'), [m / 'a.patch', m / 'b.patch'])
            self.assertEqual(mutate.mutant_set(m, '6.12', 'arm64'),
                             [m / 'a.patch', m / 'arm64' / 'b.patch'])
        real = mutate.mutant_set(REPO / 'mutants', '6.12', 'arm64')
        self.assertIn(REPO / 'mutants' / 'arm64' / 'target-up-past-ap-target.patch', real)
        self.assertEqual(len(real), len(mutate.mutant_set(REPO / 'mutants', '6.12')))

    def test_an_overridden_mutant_keeps_its_shard(self) -> None:
        """Shards 1-2 of arm64's first set ran before mutants/arm64/ existed and
        3 after: sorted by path, the override moved every mutant after it."""
        m = REPO / 'mutants'
        for i in range(1, 5):
            x86 = [p.name for p in mutate.shard(mutate.mutant_set(m, '6.12'), f'{i}/4')]
            arm = [p.name for p in mutate.shard(mutate.mutant_set(m, '6.12', 'arm64'), f'{i}/4')]
            self.assertEqual(x86, arm)

    def test_repository_mutants_apply_per_series(self) -> None:
        names = {p.stem for p in mutate.mutant_set(REPO / 'mutants', '6.1')}
        self.assertNotIn('crosststamp-base-offset-dropped', names)
        self.assertEqual(len(names) + 1, len(mutate.mutant_set(REPO / 'mutants', '6.12')))

    def test_mutant_timeout_from_the_unmutated_run(self) -> None:
        """A fixed 60 s was below the sanitizer kernel's own time in QEMU:
        every mutant 'killed' by a timeout. The limit follows the unmutated run."""
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / 'kunit.log'
            self.assertIsNone(mutate.running_seconds(log))
            log.write_text('[12:52:23] Elapsed time: 75.981s total, 0.003s configuring, '
                           '32.299s building, 43.678s running\n')
            self.assertEqual(mutate.running_seconds(log), 43.678)
            log.write_text('[12:52:23] Elapsed time: 41.5s\n')     # kunit.py exec
            self.assertEqual(mutate.running_seconds(log), 41.5)
            log.write_text('no such line\n')
            self.assertIsNone(mutate.running_seconds(log))
        self.assertEqual(mutate.derived_timeout(54.3), 139)
        self.assertEqual(mutate.derived_timeout(10.0), 60)

    def test_red_unmutated_kernel_stops_the_set(self) -> None:
        """On a red kernel every mutant would count as killed."""
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(mutate, 'run_child', return_value=1):
            secs, why = mutate.baseline(RunSpec(), Path(tmp))
        self.assertIsNone(secs)
        self.assertIn('unmutated kernel is red (exit 1', why)

    def test_mutant_shards_write_apart(self) -> None:
        self.assertEqual(mutate.out_base('6.12', 'default', '').name, '6.12-mutate')
        self.assertEqual(mutate.out_base('6.12', 'debug', '2/4').name, '6.12-debug-mutate-2of4')
        self.assertEqual(mutate.out_base('6.12', 'default', '1/2', set_='roads').name,
                         '6.12-mutate-roads-1of2')
        self.assertEqual(mutate.set_name(REPO / 'mutants'), '')
        self.assertEqual(mutate.set_name(REPO / 'mutants' / 'roads'), 'roads')

    def test_out_dir_of_fixes(self) -> None:
        self.assertEqual(out_name('6.12', 'debug', fixes=True), '6.12-debug-fixes')
        self.assertEqual(out_name('6.12', 'default'), '6.12')
        self.assertEqual(out_name('6.12', 'default', smp=2), '6.12-smp2')
        self.assertEqual(out_name('6.1', 'debug', fixes=True, smp=8), '6.1-debug-smp8-fixes')
        self.assertEqual(out_name('6.12', 'default', smp=runspec.DEFAULT_SMP), '6.12')

    def test_smt_topology(self) -> None:
        self.assertEqual(out_name('6.12', 'default', topology='smt'), '6.12-smt')
        self.assertEqual(out_name('6.1', 'debug', fixes=True, smp=2, topology='smt'),
                         '6.1-debug-smp2-smt-fixes')
        self.assertEqual(kunitcmd.smp_arg(4, 'smt'),
                         '4,sockets=1,cores=2,threads=2 -cpu Nehalem')
        self.assertEqual(kunitcmd.smp_arg(3, 'flat'), '3')
        with mock.patch('sys.stderr'), self.assertRaises(SystemExit):
            run.main(['--topology', 'smt', '--smp', '3'])
        self.assertEqual(out_name('6.12', 'default', topology='nosmt-force'),
                         '6.12-nosmt-force')
        with mock.patch('sys.stderr'), self.assertRaises(SystemExit):
            run.main(['--topology', 'nosmt', '--smp', '3'])


def fake_tree(root: Path) -> Tuple[tree.Tree, Path, Path]:
    """A committed stand-in kernel tree under @root, a kconfig fragment and a
    QEMU config: what a build's fingerprint reads."""
    src = root / 'linux'
    src.mkdir()
    (src / 'Makefile').write_text('all:\n')
    (src / 'kernel').mkdir()
    (src / 'kernel' / 'cpu.c').write_text('int x;\n')
    # Debian's tree ignores every top-level directory: the kunit/
    # sources copied in are ignored files.
    (src / '.gitignore').write_text('/*\n!/debian/\n')
    for argv in (['init', '-q'], ['add', '-A', '-f'], ['commit', '-q', '-m', 'baseline']):
        tree.git(src, *argv)
    frag = root / 'default.config'
    frag.write_text('CONFIG_KUNIT=y\n')
    qemu = root / 'x86_64_gcov.py'
    qemu.write_text('kconfig = "CONFIG_SERIAL_8250=y"\n')
    return tree.Tree(kver='6.12', package='x', version='6.12.118', path=src), frag, qemu


class BuildReuseTest(unittest.TestCase):
    """A run boots the kernel built before (kunit.py exec) only when nothing
    its build reads changed and nothing rebuilt it since."""

    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        root = Path(self.tmp.name)
        self.t, self.frag, self.qemu = fake_tree(root)
        src = self.t.path
        self.build = root / 'build'
        self.build.mkdir()
        (self.build / 'vmlinux').write_bytes(b'ELF')
        (self.build / '.config').write_text('CONFIG_KUNIT=y\n')

    def inputs(self) -> Optional[str]:
        return buildstamp.build_inputs(self.t, [self.frag], self.qemu, arch.get('x86_64'))

    def test_every_input_counts(self) -> None:
        first = self.inputs()
        self.assertIsNotNone(first)
        self.assertEqual(self.inputs(), first)
        changes: List[Callable[[], object]] = [
            lambda: (self.t.path / 'Makefile').write_text('all: x\n'),    # a change to the tree
            lambda: (self.t.path / 'new.c').write_text('int x;\n'),      # a file git does not track
            lambda: (self.t.path / 'new.c').write_text('int y;\n'),      # ... and its content
            # an ignored one (a kunit/ source, tree.install_kunit()), and its content
            lambda: (self.t.path / 'kernel' / 'cpuhp_install_kunit.c').write_text('int x;\n'),
            lambda: (self.t.path / 'kernel' / 'cpuhp_install_kunit.c').write_text('int y;\n'),
            lambda: self.frag.write_text('CONFIG_KUNIT=y\nCONFIG_KASAN=y\n'),
            lambda: self.qemu.write_text('kconfig = "CONFIG_SERIAL_8250=n"\n'),
            lambda: tree.git(self.t.path, 'commit', '-q', '-a', '-m', 'a commit'),
        ]
        seen = {first}
        for change in changes:
            change()
            now = self.inputs()
            self.assertNotIn(now, seen)
            seen.add(now)
        with mock.patch.dict(os.environ, {'KCFLAGS': '-O1'}):
            self.assertNotIn(self.inputs(), seen)

    def test_not_a_git_tree_always_builds(self) -> None:
        shutil.rmtree(self.t.path / '.git')
        self.assertIsNone(self.inputs())
        self.assertFalse(buildstamp.reusable_build(self.build, self.inputs()))

    def test_a_tree_built_in_place_always_builds(self) -> None:
        with mock.patch.object(buildstamp, 'UNTRACKED_MAX', 2):
            for name in ('a.o', 'b.o'):
                (self.t.path / 'kernel' / name).write_text(name)
            self.assertIsNotNone(self.inputs())
            (self.t.path / 'kernel' / 'c.o').write_text('c')
            self.assertIsNone(self.inputs())

    def test_only_the_kernel_it_built(self) -> None:
        inputs = self.inputs()
        self.assertFalse(buildstamp.reusable_build(self.build, inputs))      # never built here
        buildstamp.remember_build(self.build, inputs)
        self.assertTrue(buildstamp.reusable_build(self.build, inputs))
        self.assertFalse(buildstamp.reusable_build(self.build, 'other inputs'))
        # Something else relinked vmlinux (a mutant, make reports, by hand).
        st = (self.build / 'vmlinux').stat()
        os.utime(self.build / 'vmlinux', ns=(st.st_atime_ns, st.st_mtime_ns + 1))
        self.assertFalse(buildstamp.reusable_build(self.build, inputs))
        buildstamp.remember_build(self.build, inputs)
        (self.build / '.config').write_text('CONFIG_KUNIT=y\nCONFIG_KASAN=y\n')
        self.assertFalse(buildstamp.reusable_build(self.build, inputs))
        buildstamp.remember_build(self.build, inputs)
        buildstamp.forget_build(self.build)                                   # a build began
        self.assertFalse(buildstamp.reusable_build(self.build, inputs))

    def test_a_tracefiles_sources_stamp(self) -> None:
        """The digest written next to a run's coverage.info follows the tree's
        sources, the kunit/ ones copied in among them, and nothing else."""
        first = buildstamp.source_digest(self.t)
        self.assertIsNotNone(first)
        self.frag.write_text('CONFIG_KUNIT=y\nCONFIG_KASAN=y\n')      # the kernel's config
        self.assertEqual(buildstamp.source_digest(self.t), first)
        seen = {first}
        changes: List[Callable[[], object]] = [
            lambda: (self.t.path / 'Makefile').write_text('all: x\n'),
            lambda: (self.t.path / 'kernel' / 'cpuhp_install_kunit.c').write_text('x'),
            lambda: tree.git(self.t.path, 'commit', '-q', '-a', '-m', 'a commit'),
        ]
        for change in changes:
            change()
            now = buildstamp.source_digest(self.t)
            self.assertNotIn(now, seen)
            seen.add(now)
        out = Path(self.tmp.name) / 'out'
        out.mkdir()
        self.assertIsNone(buildstamp.coverage_sources(out))
        buildstamp.remember_coverage(out, first)
        self.assertEqual(buildstamp.coverage_sources(out), first)
        shutil.rmtree(self.t.path / '.git')
        self.assertIsNone(buildstamp.source_digest(self.t))

    def test_exec_boots_without_building(self) -> None:
        args = RunSpec.from_argv([])
        built = kunitcmd.kunit_command(self.t, args, self.build, Path('/out'), self.qemu,
                                       build=False)
        fresh = kunitcmd.kunit_command(self.t, args, self.build, Path('/out'), self.qemu)
        self.assertEqual((built[2], fresh[2]), ('exec', 'run'))
        self.assertFalse([a for a in built if a.startswith('--jobs')])
        self.assertTrue([a for a in fresh if a.startswith('--jobs')])
        self.assertEqual([a for a in built if a != built[2]],
                         [a for a in fresh if a != fresh[2] and not a.startswith('--jobs')])


class EarlyFailureTest(unittest.TestCase):
    def test_filter_matching_nothing_fails_before_building(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            env = {'CPUHP_KUNIT_CACHE': str(Path(tmp) / 'cache')}
            with mock.patch.dict(os.environ, env), mock.patch('sys.stdout'), \
                    mock.patch('sys.stderr'), mock.patch.object(tree, 'prepare') as prepare:
                rc = run.main(['--filter', 'nosuch*', '--out', str(Path(tmp) / 'out')])
            self.assertEqual(rc, 1)
            prepare.assert_not_called()
            self.assertEqual(junit_bad(Path(tmp) / 'out' / 'junit.xml'), 1)

    def test_prepare_error_is_red_in_junit(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            env = {'CPUHP_KUNIT_CACHE': str(Path(tmp) / 'cache')}
            with mock.patch.dict(os.environ, env), mock.patch('sys.stdout'), \
                    mock.patch('sys.stderr'), mock.patch.object(
                        tree, 'prepare', side_effect=say.PrepareError('patch 0002 fails')):
                rc = run.main(['--out', str(Path(tmp) / 'out')])
            self.assertEqual(rc, 1)
            v, _ = verdict.read_json(Path(tmp) / 'out' / 'verdict.json')
            self.assertEqual([(p.category, p.message) for p in v.problems],
                             [('prepare', 'patch 0002 fails')])


class MutantTest(unittest.TestCase):
    def outcome(self, problems: List[verdict.Problem], rc: int = 1) -> mutreport.Outcome:
        with tempfile.TemporaryDirectory() as tmp:
            v = verdict.Verdict(problems=problems)
            verdict.write_json(Path(tmp) / 'verdict.json', v, {})
            return mutreport.classify('m', Path(tmp), rc, 1.0, 'a promise')

    def test_build_failure_is_invalid_not_killed(self) -> None:
        o = self.outcome([verdict.Problem('build', '', "the kernel did not build: error: 'x'",
                                          "cpu.c:1: error: 'x' undeclared")])
        self.assertEqual((o.verdict, o.detail), ('invalid', "cpu.c:1: error: 'x' undeclared"))

    def test_killers_by_signal(self) -> None:
        o = self.outcome([verdict.Problem('failed', 's.a', 'failed'),
                          verdict.Problem('kernel-log', 's.b', 'WARNING'),
                          verdict.Problem('kernel-log', '', 'WARNING at boot'),
                          verdict.Problem('timeout', '', 'hung')])
        # The cause first: a timeout, then crashes, failures, kernel reports.
        self.assertEqual((o.verdict, o.by), ('killed', 'timeout, s.a, s.b (kernel log), '
                                                        'kernel log'))

    def unmet_outcome(self, unmet: List[str], baseline_unmet: List[str]) -> mutreport.Outcome:
        with tempfile.TemporaryDirectory() as tmp:
            v = verdict.Verdict(not_seen=[verdict.Problem('known-not-seen', n, 'did not occur')
                                          for n in unmet])
            verdict.write_json(Path(tmp) / 'verdict.json', v, {})
            base = Path(tmp) / 'baseline'
            base.mkdir()
            verdict.write_json(base / 'verdict.json', verdict.Verdict(not_seen=[
                verdict.Problem('known-not-seen', n, 'did not occur') for n in baseline_unmet]),
                {})
            return mutreport.classify('m', Path(tmp), 0, 1.0, 'a promise',
                                      mutreport.unmet_known(base))

    def unmet_outcome_entries(self, unmet: List[str], baseline: List[str]) -> mutreport.Outcome:
        """As unmet_outcome(), each entry 'case|message'."""
        def problems(entries: List[str]) -> List[verdict.Problem]:
            return [verdict.Problem('known-not-seen', *e.split('|')) for e in entries]
        with tempfile.TemporaryDirectory() as tmp:
            verdict.write_json(Path(tmp) / 'verdict.json',
                               verdict.Verdict(not_seen=problems(unmet)), {})
            base = Path(tmp) / 'baseline'
            base.mkdir()
            verdict.write_json(base / 'verdict.json', verdict.Verdict(not_seen=problems(baseline)),
                               {})
            return mutreport.classify('m', Path(tmp), 0, 1.0, 'a promise',
                                      mutreport.unmet_known(base))

    def test_a_known_failure_gone_kills(self) -> None:
        # The mutant's run is green, but a known failure the unmutated
        # kernel shows did not occur: the mutant changed what the case saw.
        o = self.unmet_outcome(['s.a', 's.b'], ['s.b'])
        self.assertEqual((o.verdict, o.by), ('killed', 's.a (known failure did not occur)'))
        # One the unmutated run did not meet either kills nothing.
        self.assertEqual(self.unmet_outcome(['s.b'], ['s.b']).verdict, 'survived')
        self.assertEqual(self.unmet_outcome([], []).verdict, 'survived')
        # No unmutated run on record: an error, not every unmet entry a kill.
        with self.assertRaises(FileNotFoundError):
            mutreport.unmet_known(Path('/nonexistent'))
        # Two entries of one case count apart: the other one gone still kills.
        o = self.unmet_outcome_entries(['s.a|x: one', 's.a|x: two'], ['s.a|x: one'])
        self.assertEqual((o.verdict, o.by), ('killed', 's.a (known failure did not occur)'))

    def test_survived_and_run_errors(self) -> None:
        self.assertEqual(self.outcome([], rc=0).verdict, 'survived')
        self.assertEqual(self.outcome([verdict.Problem('prepare', '', 'x')]).verdict, 'error')

    def test_killers_agree_with_the_mutant_runs_junit(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            shutil.copy(DATA / 'param_fail_mutant_console.log', out / 'console.log')
            exp = recorded_expectations('', {'smp': '4'})
            outputs.judge(out, out / 'console.log', exp, 1, None, 60, '')
            o = mutreport.classify('m', out, 1, 1.0, '')
            xml = junitparser.JUnitXml.fromfile(str(out / 'junit.xml'))
            red = sorted(f'{c.classname}.{c.name}' for s in xml for c in s if c.result
                         and type(c.result[0]).__name__ != 'Skipped')
            v, _ = verdict.read_json(out / 'verdict.json')
            names = mutreport.killers(v)
            self.assertEqual(red, sorted(names))
            self.assertEqual(len(red), 19)
            self.assertEqual(o.by, ', '.join(names[:4]) + ' (+15)')

    def test_report_exit_status(self) -> None:
        def oc(v: str) -> mutreport.Outcome:
            return mutreport.Outcome('m-' + v, v, '', 1.0, 'p')
        with tempfile.TemporaryDirectory() as tmp, mock.patch('sys.stdout'):
            self.assertEqual(mutreport.report([oc('killed')], Path(tmp), {}), 0)
            for bad in ('survived', 'invalid', 'not-applicable', 'error'):
                self.assertEqual(mutreport.report([oc('killed'), oc(bad)], Path(tmp), {}), 1, bad)
                self.assertEqual(junit_bad(Path(tmp) / 'junit.xml'), 1)

    def test_mutant_that_does_not_apply(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            linux = self.tiny_tree(Path(tmp))
            patch = Path(tmp) / 'm.patch'
            patch.write_text('# breaks b\n--- a/b.c\n+++ b/b.c\n@@ -1 +1 @@\n-int b;\n+int c;\n')
            t = tree.Tree(kver='9.9', package='9.9.1-1', version='9.9.1', path=linux)
            outcome = mutate.run_one(patch, t, {'flat': RunSpec()}, Path(tmp) / 'out')
            self.assertEqual(outcome.verdict, 'not-applicable')
            self.assertEqual(outcome.promise, 'breaks b')

    def test_mutant_reversed_only_after_its_run_ended(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            linux = self.tiny_tree(Path(tmp))
            patch = Path(tmp) / 'm.patch'
            patch.write_text('# breaks a\n--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-int a;\n+int b;\n')
            marker = Path(tmp) / 'child-ended'
            fake = Path(tmp) / 'run.py'
            fake.write_text('import signal, sys, time, pathlib\n'
                            'def end(*a):\n'
                            '    time.sleep(0.5)\n'
                            f'    pathlib.Path({str(marker)!r}).write_text("x")\n'
                            '    sys.exit(143)\n'
                            'signal.signal(signal.SIGTERM, end)\n'
                            f'pathlib.Path({str(tmp)!r}, "started").write_text("x")\n'
                            'time.sleep(300)\n')
            order: List[str] = []
            real_git = tree.git

            def git(path: Path, *args: str, check: bool = True) -> Any:
                if args[:2] == ('apply', '-R'):
                    order.append('reverse, child ended' if marker.exists() else
                                 'reverse, child running')
                return real_git(path, *args, check=check)

            def interrupt(*a: Any) -> None:
                raise KeyboardInterrupt

            t = tree.Tree(kver='9.9', package='9.9.1-1', version='9.9.1', path=linux)
            old = signal.signal(signal.SIGALRM, interrupt)
            try:
                with mock.patch.object(mutate, 'RUN_PY', fake), \
                        mock.patch.object(tree, 'git', git):
                    signal.setitimer(signal.ITIMER_REAL, 1.0)
                    with self.assertRaises(KeyboardInterrupt):
                        try:
                            mutate.run_one(patch, t, {'flat': RunSpec()}, Path(tmp) / 'out')
                        finally:
                            signal.setitimer(signal.ITIMER_REAL, 0)
            finally:
                signal.signal(signal.SIGALRM, old)
            self.assertEqual(order, ['reverse, child ended'])
            self.assertEqual((linux / 'a.c').read_text(), 'int a;\n')

    @staticmethod
    def tiny_tree(root: Path) -> Path:
        linux = root / 'linux'
        linux.mkdir()
        (linux / 'a.c').write_text('int a;\n')
        tree.git(linux, 'init', '-q')
        tree.git(linux, 'add', '-A')
        tree.git(linux, 'commit', '-q', '-m', 'baseline')
        return linux

    def test_promise_is_the_comment_line(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            p = Path(tmp) / 'm.patch'
            p.write_text('# a promise\ndiff --git a/x b/x\n')
            self.assertEqual(mutate.promise(p), 'a promise')
            p.write_text('diff --git a/x b/x\n')
            self.assertEqual(mutate.promise(p), '')


if __name__ == '__main__':
    unittest.main()


class KnownFailuresPerKverTest(unittest.TestCase):
    def test_each_series_reads_its_own_table(self) -> None:
        ctx = {'config': 'default', 'smp': '4', 'fixes': '0'}
        known_612 = outputs.expectations('', {**ctx, 'kver': '6.12'}).known
        self.assertTrue(known_612)
        self.assertEqual(outputs.known_failures_path('6.12').name, 'known-failures-6.12')
        known_61 = outputs.expectations('', {**ctx, 'kver': '6.1'}).known
        self.assertTrue(known_61)
        self.assertNotEqual([k.why for k in known_61], [k.why for k in known_612])
        # A series without a table has no known failures: every failure is red.
        self.assertFalse(outputs.known_failures_path('5.10').exists())
        self.assertEqual(list(outputs.expectations('', {**ctx, 'kver': '5.10'}).known), [])


class ShardTest(unittest.TestCase):
    PATCHES = [Path(f'm{k:02}.patch') for k in range(11)]

    def test_shards_cover_the_set_once(self) -> None:
        for n in range(1, 6):
            parts = [mutate.shard(self.PATCHES, f'{i}/{n}') for i in range(1, n + 1)]
            together = [p for part in parts for p in part]
            self.assertEqual(sorted(together), self.PATCHES)
            self.assertEqual(len(together), len(set(together)))

    def test_deterministic_whatever_the_order(self) -> None:
        self.assertEqual(mutate.shard(list(reversed(self.PATCHES)), '2/3'),
                         mutate.shard(self.PATCHES, '2/3'))

    def test_no_shard_is_everything(self) -> None:
        self.assertEqual(mutate.shard(self.PATCHES, ''), self.PATCHES)

    def test_bad_specs(self) -> None:
        for spec in ('0/3', '4/3', '3', 'a/b', '1/0', '-1/2'):
            with self.assertRaises(ValueError, msg=spec):
                mutate.shard(self.PATCHES, spec)
