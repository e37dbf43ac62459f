"""RunSpec: run.py's options and back, the values derived from it; proc.py's groups."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path
from typing import Any, Callable, List
from unittest import mock

from cpuhpk import execute, outputs, proc, runspec, usertree
from cpuhpk.paths import REPO
from cpuhpk.runspec import RunSpec

EVERY_KNOB = RunSpec(
    kver='6.1', arch='arm64', smp=2, topology='flat', filter='cpuhp_install.*',
    config='debug+rt', timeout=120, jobs=3, out=Path('/tmp/o'), coverage_report=False,
    console=Path('/tmp/c.log'), vmlinux=Path('/tmp/vmlinux'), userspace=False, fixes=True,
    seed=7, stress_ops=300, strict=True, kconfig_add='CONFIG_X=y CONFIG_Y=n',
    kernel_args='a=1 b', qemu_args='-m 2G', make_options='LLVM=1 W=1', isolate='suite',
    filter_attr='speed>slow', filter_action='skip',
    tree=usertree.Spec(Path('/src/linux'), 'v6.1', False, Path('/src/patches')))


class RoundTripTest(unittest.TestCase):
    def test_spec_to_options_and_back(self) -> None:
        for spec in (RunSpec(), EVERY_KNOB,
                     dataclasses.replace(EVERY_KNOB, tree=usertree.Spec(Path('/l'))),
                     RunSpec(topology='smt', smp=6, userspace=True, coverage_report=True)):
            with self.subTest(spec=spec):
                self.assertEqual(RunSpec.from_argv(spec.argv()), spec)

    def test_every_field_differs_from_the_default_in_the_spec_that_has_them_all(self) -> None:
        # Not vacuous: EVERY_KNOB's round trip carries each field through argv().
        default = RunSpec()
        same = [f.name for f in dataclasses.fields(RunSpec)
                if getattr(EVERY_KNOB, f.name) == getattr(default, f.name)]
        self.assertEqual(same, ['topology'])
        self.assertEqual(RunSpec.from_argv(RunSpec(topology='smt').argv()).topology, 'smt')

    def test_options_to_spec_and_back(self) -> None:
        argv = ['--kver', '6.1', '--smp', '2', '--filter', 'cpuhp_sweep.*', '--strict', '1',
                '--isolate', 'test', '--kernel-args', 'x=1', '--tree', '/l', '--local', '0',
                '--no-coverage-report']
        spec = RunSpec.from_argv(argv)
        self.assertEqual((spec.smp, spec.strict, spec.coverage_report, spec.isolate),
                         (2, True, False, 'test'))
        self.assertEqual(spec.tree, usertree.Spec(Path('/l'), 'HEAD', False, None))
        self.assertEqual(RunSpec.from_argv(spec.argv()), spec)

    def test_the_defaults_are_run_py_s(self) -> None:
        self.assertEqual(RunSpec.from_argv([]), RunSpec())

    def test_every_option_of_run_py_is_a_field(self) -> None:
        dests = {a.dest for a in runspec.parser()._actions if a.dest != 'help'}
        fields = {f.name for f in dataclasses.fields(RunSpec)}
        renamed = {'judge': 'console', 'rev': 'tree', 'local': 'tree', 'series': 'tree'}
        self.assertEqual({renamed.get(d, d) for d in dests}, fields)


class DerivedTest(unittest.TestCase):
    def test_output_dir(self) -> None:
        self.assertEqual(RunSpec().output_dir(), REPO / 'out' / '6.12')
        self.assertEqual(RunSpec(console=Path('c')).output_dir(),
                         REPO / 'out' / 'judge')
        self.assertEqual(RunSpec(out=Path('/x'), console=Path('c')).output_dir(), Path('/x'))
        self.assertEqual(RunSpec(config='debug', smp=2, topology='smt', fixes=True,
                                 arch='arm64').output_dir().name,
                         '6.12-debug-arm64-smp2-smt-fixes')

    def test_the_two_contexts_share_the_knobs(self) -> None:
        spec = dataclasses.replace(EVERY_KNOB, tree=None)
        with mock.patch.object(runspec, 'commit', return_value='abc'):
            run_ctx, judge_ctx = spec.run_context(), spec.judge_context(True)
        self.assertEqual(list(run_ctx), ['kver', 'arch', 'config', 'smp', 'topology', 'filter',
                                         'fixes', 'strict', 'commit', 'kconfig_add',
                                         'kernel_args', 'qemu_args', 'make_options', 'isolate',
                                         'filter_attr', 'filter_action'])
        self.assertEqual(list(judge_ctx), ['kver', 'arch', 'config', 'smp', 'topology',
                                           'filter', 'fixes', 'console', 'userspace', 'commit',
                                           'isolate', 'filter_attr', 'filter_action'])
        shared = ('kver', 'arch', 'config', 'smp', 'topology', 'filter', 'fixes', 'commit')
        self.assertEqual([run_ctx[k] for k in shared], [judge_ctx[k] for k in shared])
        self.assertEqual((run_ctx['smp'], run_ctx['fixes'], run_ctx['strict']), ('2', '1', '1'))

    def test_a_run_writes_where_its_spec_says_with_its_context(self) -> None:
        seen: List[Any] = []

        def run(spec: RunSpec, out: Path, context: Any, user: Any) -> int:
            seen.extend([spec, out, context, user])
            return 0
        spec = RunSpec(smp=2, filter='cpuhp_install.*')
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.dict(os.environ, {'CPUHP_KUNIT_CACHE': tmp}), \
                mock.patch.object(runspec, 'commit', return_value='abc'), \
                mock.patch.object(execute, '_run', side_effect=run), \
                mock.patch.object(signal, 'signal'):
            self.assertEqual(execute.execute(spec), 0)
            self.assertEqual(seen, [spec, spec.output_dir(), spec.run_context(), None])

    def test_a_judged_console_s_context(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            spec = RunSpec(console=Path(tmp) / 'none.log', out=Path(tmp) / 'out',
                           filter='cpuhp_install.*')
            with mock.patch.object(runspec, 'commit', return_value='abc'), \
                    contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(outputs.judge_file(spec), 1)
            from_file = (Path(tmp) / 'out' / 'verdict.json').read_text()
        self.assertIn('"console": "' + str(Path(tmp) / 'none.log'), from_file)

    def test_a_spec_that_cannot_boot_is_refused_as_run_py_refuses_it(self) -> None:
        self.assertIsNone(RunSpec().errors())
        self.assertIn('SMP=3 is odd', RunSpec(topology='smt', smp=3).errors() or '')
        self.assertIn('not possible on ARCH=arm64',
                      RunSpec(topology='hotplug', arch='arm64').errors() or '')
        calls: List[Callable[[], int]] = [
            lambda: execute.execute(RunSpec(smp=0)),
            lambda: outputs.judge_file(RunSpec(smp=0, console=Path('c')))]
        for call in calls:
            with mock.patch('sys.stderr'), self.assertRaises(SystemExit) as e:
                call()
            self.assertEqual(e.exception.code, 2)

    def test_a_tree_sets_the_series(self) -> None:
        user = mock.Mock(spec=usertree.Resolved, kver='6.1')
        self.assertEqual(RunSpec(tree=usertree.Spec(Path('/l'))).for_user(user).kver, '6.1')
        self.assertEqual(RunSpec().for_user(None), RunSpec())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f'/proc/{pid}/stat')
    return not (stat.is_file() and stat.read_text().split(') ', 1)[1].startswith('Z'))


# A leader and a child that ignores SIGTERM: the child's pid first.
STUBBORN = ('trap "" TERM; sh -c \'trap "" TERM; sleep 300\' & echo $!; '
            'echo started; wait')


class GroupTest(unittest.TestCase):
    def start(self) -> 'tuple[subprocess.Popen[str], int]':
        child = subprocess.Popen(['sh', '-c', STUBBORN], stdout=subprocess.PIPE, text=True,
                                 start_new_session=True)
        assert child.stdout is not None
        pid = int(child.stdout.readline())
        self.assertEqual(child.stdout.readline().strip(), 'started')
        child.stdout.close()
        return child, pid

    def test_end_group_kills_what_outlives_the_grace(self) -> None:
        child, pid = self.start()
        started = time.monotonic()
        proc.end_group(child, grace=0.5)
        self.assertGreaterEqual(time.monotonic() - started, 0.5)
        self.assertIsNotNone(child.poll())
        self.assertFalse(alive(pid))

    def test_end_group_of_a_group_that_ended(self) -> None:
        child = subprocess.Popen(['true'], start_new_session=True)
        child.wait()
        proc.end_group(child, grace=0.5)

    def test_wait_group_ends_the_group_on_an_exception(self) -> None:
        child, pid = self.start()

        def interrupt(*a: Any) -> None:
            raise proc.Interrupted(signal.SIGTERM)
        old = signal.signal(signal.SIGALRM, interrupt)
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.2)
            with self.assertRaises(proc.Interrupted):
                proc.wait_group(child, grace=0.5)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        self.assertFalse(alive(pid))

    def test_wait_group_returns_the_exit_status(self) -> None:
        child = subprocess.Popen([sys.executable, '-c', 'raise SystemExit(3)'],
                                 start_new_session=True)
        self.assertEqual(proc.wait_group(child), 3)

    def test_signals_become_interrupted(self) -> None:
        old = signal.getsignal(signal.SIGHUP)
        try:
            proc.raise_on_signals((signal.SIGHUP,))
            with self.assertRaises(proc.Interrupted) as e:
                os.kill(os.getpid(), signal.SIGHUP)
                time.sleep(5)
            self.assertEqual((e.exception.signum, str(e.exception)), (signal.SIGHUP, 'SIGHUP'))
            with proc.signals_deferred():
                os.kill(os.getpid(), signal.SIGHUP)     # ignored
        finally:
            signal.signal(signal.SIGHUP, old)


if __name__ == '__main__':
    unittest.main()
