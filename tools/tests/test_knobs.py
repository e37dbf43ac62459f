"""kunit.py's own knobs: KCONFIG_ADD, KERNEL_ARGS, QEMU_ARGS, MAKE_OPTIONS,
FILTER_ATTR (with FILTER_ACTION) and ISOLATE (cpuhpk.knobs, cpuhpk.kunitcmd,
cpuhpk.buildstamp, cpuhpk.attrs, cpuhpk.isolation, cpuhpk.run, cpuhpk.gcov).

The command line kunit.py gets for each, in its build (kunit.py run) and
its reuse (kunit.py exec); the build's fingerprint for each; the errors
before anything is built; what FILTER_ATTR leaves out of what the run asks
for; and ISOLATE's boots judged as one run: an isolated console is made
from the recorded whole run (data/run_default_6.12_console.log) the way
kunit.py --run_isolated boots it, one boot per suite or per case, and its
verdict is the single boot's.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple
from unittest import mock

from cpuhpk import (arch, attrs, buildstamp, execute, gcov, guest, isolation, judging, knobs, ktap,
                    kunitcmd, kunitspec, outputs, packages, proc, run, say, tree, verdict)
from cpuhpk.paths import REPO
from cpuhpk.runspec import RunSpec
from tests.recorded import run_default_expectations
from tests.test_run import fake_tree as build_inputs_tree

DATA = Path(__file__).parent / 'data'
CONSOLE = DATA / 'run_default_6.12_console.log'
CONTEXT = {'kver': '6.12', 'arch': 'x86_64', 'config': 'default', 'smp': '4',
           'topology': 'flat', 'fixes': '0'}
T612 = tree.Tree(kver='6.12', package='x', version='6.12.118', path=Path('/linux'))


def kernel_tree(series: str) -> Optional[Path]:
    """A tree of Debian's linux-source-@series, when this machine has one
    (the cache's or a pristine copy): its kunit.py and lib/kunit/."""
    home = Path(os.environ.get('HOME', '/root'))
    for root in (home / '.cache' / 'cpuhp-kunit', Path('/work/ref')):
        for cand in sorted(root.glob(f'linux-{series}.*')) + sorted(
                root.glob(f'linux-source-{series}')):
            if (cand / 'tools' / 'testing' / 'kunit' / 'kunit.py').is_file():
                return cand
    return None


def command(*argv: str, build: bool = True) -> List[str]:
    args = RunSpec.from_argv(argv)
    return kunitcmd.kunit_command(T612, args, Path('/build'), Path('/out'), Path('/q.py'),
                                  build=build)


def flags(cmd: Sequence[str], flag: str) -> List[str]:
    return [a.split('=', 1)[1] for a in cmd if a.startswith(flag + '=')]


class CommandLineTest(unittest.TestCase):
    """Each knob reaches kunit.py, as kunit.py's flag, in run and in exec."""

    def test_no_knob_no_flag(self) -> None:
        cmd = command()
        for flag in ('--kconfig_add', '--run_isolated', '--raw_output', '--filter',
                     '--filter_action'):
            self.assertEqual(flags(cmd, flag), [], flag)
        self.assertEqual(flags(cmd, '--make_options'), list(knobs.MAKE_OPTIONS))
        self.assertEqual(flags(cmd, '--kernel_args'), [*kunitcmd.KERNEL_ARGS, 'tsc=nowatchdog'])
        self.assertEqual(flags(cmd, '--qemu_args'), ['-smp 4'])
        self.assertEqual(flags(cmd, '--json'), ['/out/results.json'])

    def test_tsc_reliable_on_x86_alone(self) -> None:
        self.assertNotIn('tsc=nowatchdog', flags(command('--arch', 'arm64'), '--kernel_args'))

    def test_kconfig_add_one_flag_per_word(self) -> None:
        cmd = command('--kconfig-add', 'CONFIG_X=y  CONFIG_Y=n CONFIG_S="a"')
        self.assertEqual(flags(cmd, '--kconfig_add'), ['CONFIG_X=y', 'CONFIG_Y=n', 'CONFIG_S="a"'])

    def test_kernel_args_after_the_runs_own(self) -> None:
        cmd = command('--kernel-args', 'foo=1  bar', '--seed', '7', '--strict', '1')
        self.assertEqual(flags(cmd, '--kernel_args'),
                         [*kunitcmd.KERNEL_ARGS, 'tsc=nowatchdog', *kunitcmd.STRICT_KERNEL_ARGS,
                          'cpuhp_kunit.stress_seed=7', 'foo=1', 'bar'])

    def test_qemu_args_appended_whole(self) -> None:
        cmd = command("--qemu-args=-device 'virtio-rng-pci' -name x", '--smp', '2')
        self.assertEqual(flags(cmd, '--qemu_args'), ['-smp 2', "-device 'virtio-rng-pci' -name x"])

    def test_make_options_one_flag_per_word_after_gcov(self) -> None:
        cmd = command('--make-options', 'LLVM=1 W=1')
        self.assertEqual(flags(cmd, '--make_options'), [*knobs.MAKE_OPTIONS, 'LLVM=1', 'W=1'])

    def test_isolate_boots_apart_and_prints_the_consoles(self) -> None:
        for mode in ('suite', 'test'):
            cmd = command('--isolate', mode)
            self.assertEqual(flags(cmd, '--run_isolated'), [mode])
            self.assertEqual(flags(cmd, '--raw_output'), ['all'])
            # kunit.py writes --json anew after each boot: the run makes it.
            self.assertEqual(flags(cmd, '--json'), [])

    def test_filter_attr_and_action(self) -> None:
        cmd = command('--filter-attr', 'speed>slow', '--filter', 'cpuhp_*')
        self.assertEqual(flags(cmd, '--filter'), ['speed>slow'])
        self.assertEqual(flags(cmd, '--filter_action'), [])
        self.assertEqual(cmd[-1], 'cpuhp_*')        # the filter_glob stays last
        cmd = command('--filter-attr', 'speed>slow', '--filter-action', 'skip')
        self.assertEqual(flags(cmd, '--filter_action'), ['skip'])

    def test_exec_gets_every_knob_too(self) -> None:
        """The reuse path (kunit.py exec) boots with the same knobs; only --jobs
        is kunit.py run's alone (exec ignores --kconfig_add, --make_options)."""
        argv = ('--kconfig-add', 'CONFIG_X=y', '--kernel-args', 'a=1', '--qemu-args=-no-hpet',
                '--make-options', 'LLVM=1', '--isolate', 'suite', '--filter-attr', 'speed>slow',
                '--filter-action', 'skip', '--filter', 'cpuhp_*')
        fresh, built = command(*argv), command(*argv, build=False)
        self.assertEqual((fresh[2], built[2]), ('run', 'exec'))
        self.assertEqual([a for a in built if a != 'exec'],
                         [a for a in fresh if a != 'run' and not a.startswith('--jobs=')])

    def test_judge_ignores_the_build_knobs(self) -> None:
        """make judge gets RUN_ARGS with every knob: the build's are not judged."""
        with tempfile.TemporaryDirectory() as tmp:
            outs: List[Tuple[int, str, Dict[str, int]]] = []
            extras: List[List[str]] = [[], ['--kconfig-add', 'not a config', '--make-options',
                                            'nonsense', '--kernel-args', 'x=1',
                                            '--qemu-args=-bogus']]
            for extra in extras:
                out = Path(tmp) / f'out{len(outs)}'
                with contextlib.redirect_stdout(io.StringIO()), \
                        contextlib.redirect_stderr(io.StringIO()), \
                        mock.patch.object(outputs, 'expectations', run_default_expectations):
                    rc = run.main(['--judge', str(CONSOLE), '--out', str(out), *extra])
                data = json.loads((out / 'verdict.json').read_text())
                outs.append((rc, data['verdict'], data['counts']))
                self.assertFalse({'kconfig_add', 'make_options', 'kernel_args',
                                  'qemu_args'} & set(data['context']))
            self.assertEqual(outs[0], outs[1])

    @unittest.skipUnless(kernel_tree('6.12') and kernel_tree('6.1'), 'no 6.12 and 6.1 trees here')
    def test_both_kunit_py_have_every_flag(self) -> None:
        """6.12's and 6.1's kunit.py take each flag the knobs become (Debian's
        6.1.192 kunit.py has --filter and --filter_action too: only its
        kernel lacks the attributes)."""
        for series in ('6.12', '6.1'):
            path = kernel_tree(series)
            assert path is not None
            source = (path / 'tools' / 'testing' / 'kunit' / 'kunit.py').read_text()
            for flag in knobs.KUNIT_PY_FLAGS.values():
                self.assertIn(f"parser.add_argument('{flag}'", source, (series, flag))
            self.assertIn("choices=['suite', 'test']", source)
            self.assertIn("choices=['skip']", source)


class KnobErrorTest(unittest.TestCase):
    """What cannot run as given is one line before anything is prepared."""

    def error(self, *argv: str) -> str:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), \
                mock.patch.object(tree, 'prepare') as prepare, self.assertRaises(SystemExit):
            run.main(list(argv))
        prepare.assert_not_called()
        return err.getvalue().strip().splitlines()[-1]

    def test_each_bad_knob(self) -> None:
        cases = [
            (['--kconfig-add', 'CONFIG_X=y KASAN=y'], 'KCONFIG_ADD=CONFIG_X=y KASAN=y: KASAN=y'),
            (['--make-options', 'LLVM=1 clang'], 'MAKE_OPTIONS=LLVM=1 clang: clang is not X=Y'),
            (['--filter-action', 'skip'], 'FILTER_ACTION=skip says'),
            (['--filter-attr', 'speed>fast'], 'FILTER_ATTR=speed>fast: '),
            (['--filter-attr', 'module=cpuhp_kunit'], 'choose suites with FILTER='),
            (['--filter-attr', 'colour=red'], "KUnit has no attribute 'colour'"),
            (['--filter-attr', 'speed slow'], 'no attribute and operation'),
            (['--isolate', 'suite', '--topology', 'hotplug'], 'TOPOLOGY=hotplug'),
            (['--make-options', 'LLVM=1', '--config', 'debian'], 'CONFIG=debian'),
            (['--topology', 'maxcpus', '--smp', '2', '--filter', 'cpuhp_sysfs.maxcpus_*'],
             'SMP=2 with TOPOLOGY=maxcpus'),
            (['--topology', 'maxcpus'], 'TOPOLOGY=maxcpus runs FILTER=cpuhp_sysfs.maxcpus_* alone'),
            (['--topology', 'maxcpus', '--filter', 'cpuhp_sysfs.*'], 'TOPOLOGY=maxcpus runs'),
        ]
        for argv, want in cases:
            with self.subTest(argv=argv):
                self.assertIn(want, self.error(*argv))

    def test_each_good_filter(self) -> None:
        for text, want in (('speed>slow', [('speed', '>', 'slow')]),
                           ('speed>=very_slow, is_init=false',
                            [('speed', '>=', 'very_slow'), ('is_init', '=', 'false')]),
                           ('speed!=normal', [('speed', '!=', 'normal')])):
            self.assertEqual(attrs.parse_attr_filter(text), want)


def fake_tree(root: Path, kunit_py_flags: Sequence[str], attributes: bool,
              lists: bool = True) -> tree.Tree:
    """A tree with a kunit.py that has @kunit_py_flags, and lib/kunit/ with
    (@attributes) attributes.c and an executor that can (@lists) list."""
    kunit = root / 'tools' / 'testing' / 'kunit'
    kunit.mkdir(parents=True)
    (kunit / 'kunit.py').write_text(''.join(f"\tparser.add_argument('{f}',\n"
                                            for f in kunit_py_flags))
    lib = root / 'lib' / 'kunit'
    lib.mkdir(parents=True)
    if attributes:
        (lib / 'attributes.c').write_text('')
    (lib / 'executor.c').write_text('strcmp(action_param, "list")' if lists else '')
    return tree.Tree(kver='x', package='x', version='9.9.9', path=root)


class TreeErrorTest(unittest.TestCase):
    """The kernel and its kunit.py must have what a knob needs."""

    def args(self, *argv: str) -> RunSpec:
        return RunSpec.from_argv(argv)

    def test_kernel_without_attributes(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            t = fake_tree(Path(tmp), list(knobs.KUNIT_PY_FLAGS.values()), attributes=False)
            self.assertIsNone(kunitcmd.tree_errors(t, self.args('--isolate', 'suite')))
            self.assertEqual(kunitcmd.tree_errors(t, self.args('--filter-attr', 'speed>slow')),
                             'FILTER_ATTR=speed>slow: linux 9.9.9 has no KUnit test attributes '
                             '(lib/kunit/attributes.c, since 6.6): nothing to filter on')

    def test_kunit_py_without_a_flag(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            have = [f for f in knobs.KUNIT_PY_FLAGS.values() if f != '--run_isolated']
            t = fake_tree(Path(tmp), have, attributes=True)
            self.assertIsNone(kunitcmd.tree_errors(t, self.args('--kconfig-add', 'CONFIG_X=y')))
            self.assertEqual(kunitcmd.tree_errors(t, self.args('--isolate', 'test')),
                             'ISOLATE=test: the kunit.py of linux 9.9.9 has no --run_isolated')

    def test_kernel_that_cannot_list(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            t = fake_tree(Path(tmp), list(knobs.KUNIT_PY_FLAGS.values()), True, lists=False)
            self.assertIn('cannot list its cases',
                          kunitcmd.tree_errors(t, self.args('--isolate', 'suite')) or '')

    @unittest.skipUnless(kernel_tree('6.12') and kernel_tree('6.1'), 'no 6.12 and 6.1 trees here')
    def test_the_two_series(self) -> None:
        everything = self.args('--kconfig-add', 'CONFIG_X=y', '--kernel-args', 'a',
                               '--qemu-args=-b', '--make-options', 'LLVM=1', '--isolate', 'test',
                               '--filter-attr', 'speed>slow', '--filter-action', 'skip')
        t612 = kernel_tree('6.12')
        t61 = kernel_tree('6.1')
        assert t612 is not None and t61 is not None
        self.assertIsNone(kunitcmd.tree_errors(tree.Tree('6.12', 'x', '6.12.118', t612),
                                               everything))
        self.assertIn('linux 6.1.192 has no KUnit test attributes',
                      kunitcmd.tree_errors(tree.Tree('6.1', 'x', '6.1.192', t61), everything)
                      or '')
        self.assertIsNone(kunitcmd.tree_errors(tree.Tree('6.1', 'x', '6.1.192', t61), self.args(
            '--kconfig-add', 'CONFIG_X=y', '--kernel-args', 'a', '--qemu-args=-b',
            '--make-options', 'LLVM=1', '--isolate', 'test')))

    def test_make_run_on_a_kernel_without_attributes_is_red_before_building(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            t = fake_tree(Path(tmp) / 'linux', list(knobs.KUNIT_PY_FLAGS.values()), False)
            env = {'CPUHP_KUNIT_CACHE': str(Path(tmp) / 'cache')}
            err = io.StringIO()
            with mock.patch.dict(os.environ, env), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(err), \
                    mock.patch.object(packages, 'ensure_packages'), \
                    mock.patch.object(execute, 'prepare_tree', return_value=t), \
                    mock.patch.object(proc, 'run_logged') as kunit:
                rc = run.main(['--kver', '6.1', '--filter-attr', 'speed>slow',
                               '--out', str(Path(tmp) / 'out')])
            self.assertEqual(rc, 1)
            kunit.assert_not_called()
            v, context = verdict.read_json(Path(tmp) / 'out' / 'verdict.json')
            self.assertEqual([(p.category, p.message) for p in v.problems],
                             [('prepare', 'FILTER_ATTR=speed>slow: linux 9.9.9 has no KUnit '
                               'test attributes (lib/kunit/attributes.c, since 6.6): nothing '
                               'to filter on')])
            self.assertEqual(context['filter_attr'], 'speed>slow')
            self.assertIn('cpuhp-kunit: error: FILTER_ATTR=speed>slow: linux 9.9.9 has no',
                          err.getvalue())


class NothingToBootTest(unittest.TestCase):
    """A run whose knobs leave nothing to boot is red before the tree is prepared."""

    def problems(self, *argv: str) -> List[Tuple[str, str]]:
        with tempfile.TemporaryDirectory() as tmp:
            env = {'CPUHP_KUNIT_CACHE': str(Path(tmp) / 'cache')}
            with mock.patch.dict(os.environ, env), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()), \
                    mock.patch.object(tree, 'prepare') as prepare:
                rc = run.main([*argv, '--out', str(Path(tmp) / 'out')])
            prepare.assert_not_called()
            self.assertEqual(rc, 1)
            v, _ = verdict.read_json(Path(tmp) / 'out' / 'verdict.json')
            return [(p.category, p.message) for p in v.problems]

    def test_filter_attr_leaving_out_every_case(self) -> None:
        self.assertEqual(self.problems('--filter', 'cpuhp_stress.*', '--filter-attr',
                                       'speed>slow'),
                         [('missing', 'FILTER_ATTR=speed>slow leaves out every case '
                           'FILTER=cpuhp_stress.* selects')])

    def test_isolate_with_the_user_space_suite_alone(self) -> None:
        self.assertEqual(self.problems('--filter', 'cpuhp_sysfs.*', '--isolate', 'suite'),
                         [('prepare', 'ISOLATE=suite boots once per KUnit suite: '
                           'FILTER=cpuhp_sysfs.* selects none (only the user-space suite, '
                           'which runs after the suites of a boot)')])


class FingerprintTest(unittest.TestCase):
    """KCONFIG_ADD and MAKE_OPTIONS change the kernel: a change rebuilds, the
    same reuses. KERNEL_ARGS, QEMU_ARGS, ISOLATE, FILTER_ATTR and FILTER_ACTION
    change only its boot: the kernel built before boots again with them."""

    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        root = Path(self.tmp.name)
        self.t, self.frag, self.qemu = build_inputs_tree(root)

    def inputs(self, *argv: str) -> Optional[str]:
        args = RunSpec.from_argv(argv)
        return buildstamp.run_build_inputs(self.t, [self.frag], self.qemu, arch.get('x86_64'),
                                           args)

    def test_the_same_knobs_reuse_and_none_is_as_before(self) -> None:
        plain = self.inputs()
        self.assertEqual(plain, buildstamp.build_inputs(self.t, [self.frag], self.qemu,
                                                        arch.get('x86_64')))
        knobs = ('--kconfig-add', 'CONFIG_KASAN=y', '--make-options', 'W=1')
        self.assertEqual(self.inputs(*knobs), self.inputs(*knobs))

    def test_each_knob(self) -> None:
        plain = self.inputs()
        seen = {plain}
        for argv in (['--kconfig-add', 'CONFIG_KASAN=y'], ['--kconfig-add', 'CONFIG_KASAN=n'],
                     ['--kconfig-add', 'CONFIG_KASAN=y CONFIG_KCOV=y'],
                     ['--make-options', 'W=1'], ['--make-options', 'LLVM=1'],
                     ['--make-options', 'LLVM=1 W=1']):
            with self.subTest(argv=argv):
                now = self.inputs(*argv)
                self.assertNotIn(now, seen)
                seen.add(now)
        for argv in (['--kernel-args', 'foo=1'], ['--qemu-args=-no-hpet'],
                     ['--isolate', 'suite'], ['--isolate', 'test'],
                     ['--filter-attr', 'speed>slow'],
                     ['--filter-attr', 'speed>slow', '--filter-action', 'skip']):
            with self.subTest(argv=argv):
                self.assertEqual(self.inputs(*argv), plain)

    def test_the_compiler_llvm_chooses_counts(self) -> None:
        versions = {'gcc': 'gcc (Debian 12.2.0-14+deb12u1) 12.2.0\n',
                    'clang': 'Debian clang version 14.0.6\n'}
        real = subprocess.run

        def fake(argv: List[str], **kw: object) -> 'subprocess.CompletedProcess[str]':
            if argv[1:] == ['--version']:
                return subprocess.CompletedProcess(argv, 0, versions[argv[0]], '')
            return real(argv, **kw)  # type: ignore[call-overload,no-any-return]

        with mock.patch.object(subprocess, 'run', side_effect=fake) as ran:
            clang14 = self.inputs('--make-options', 'LLVM=1')
            self.assertIn(['clang', '--version'], [c.args[0] for c in ran.call_args_list])
            self.assertEqual(self.inputs('--make-options', 'LLVM=1'), clang14)
            versions['clang'] = 'Debian clang version 15.0.7\n'
            self.assertNotEqual(self.inputs('--make-options', 'LLVM=1'), clang14)
            gcc12 = self.inputs()
            versions['gcc'] = 'gcc (Debian 13.2.0-25) 13.2.0\n'
            self.assertNotEqual(self.inputs(), gcc12)


class ToolchainTest(unittest.TestCase):
    def test_compiler_of_the_make_options(self) -> None:
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop('LLVM', None)
            self.assertEqual(knobs.compiler(knobs.MAKE_OPTIONS), 'gcc')
            self.assertEqual(knobs.compiler(['LLVM=1']), 'clang')
            self.assertEqual(knobs.compiler(['LLVM=-14']), 'clang-14')
            self.assertEqual(knobs.compiler(['LLVM=/opt/llvm/bin/']), '/opt/llvm/bin/clang')
            self.assertEqual(knobs.compiler(['CC=gcc-12', 'LLVM=1']), 'gcc-12')
            self.assertEqual(knobs.compiler([], 'aarch64-linux-gnu-'), 'aarch64-linux-gnu-gcc')
            self.assertEqual(knobs.compiler(['LLVM=1'], 'aarch64-linux-gnu-'), 'clang')
            with mock.patch.dict(os.environ, {'LLVM': '1'}):
                self.assertEqual(knobs.compiler([]), 'clang')
                self.assertEqual(knobs.compiler(['LLVM=']), 'gcc')

    def test_toolchain_of_the_build(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            build = Path(tmp)
            with mock.patch.object(knobs, 'compiler_version',
                                     side_effect=lambda cc: f'{cc} version 1') as version:
                self.assertEqual(knobs.toolchain(build, ['LLVM=1']), 'clang version 1')
                (build / '.config').write_text('CONFIG_CC_VERSION_TEXT="Debian clang version '
                                               '14.0.6"\nCONFIG_CC_IS_CLANG=y\n')
                self.assertEqual(knobs.toolchain(build, ['LLVM=1']), 'Debian clang version 14.0.6')
                (build / 'include' / 'generated').mkdir(parents=True)
                (build / 'include' / 'generated' / 'compile.h').write_text(
                    '#define LINUX_COMPILER\t\t"Debian clang version 14.0.6, Debian LLD 14.0.6"\n')
                self.assertEqual(knobs.toolchain(build, ['LLVM=1']),
                                 'Debian clang version 14.0.6, Debian LLD 14.0.6')
                # A build that failed: the compiler it ran, not an older build's.
                self.assertEqual(knobs.toolchain(build, [], built=False), 'gcc version 1')
                self.assertEqual(version.call_args_list[-1].args, ('gcc',))

    def test_the_coverage_of_a_clang_kernel_is_read_with_llvm_cov(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            build = Path(tmp)
            self.assertEqual(gcov.gcov_tool(build), [])
            (build / '.config').write_text('CONFIG_CC_IS_GCC=y\n')
            self.assertEqual(gcov.gcov_tool(build), [])
            (build / '.config').write_text('CONFIG_CC_IS_CLANG=y\nCONFIG_CLANG_VERSION=140006\n')
            with mock.patch.object(shutil, 'which', side_effect=lambda n: f'/usr/bin/{n}'):
                tool = gcov.gcov_tool(build)
            self.assertEqual(tool[0], '--gcov-tool')
            self.assertEqual(Path(tool[1]).read_text(), '#!/bin/sh\nexec llvm-cov-14 gcov "$@"\n')
            self.assertTrue(os.access(tool[1], os.X_OK))


# --- FILTER_ATTR ------------------------------------------------------------

def slow_cases() -> Dict[str, List[str]]:
    """suite -> its KUNIT_CASE_SLOW() cases, read from kunit/ plainly."""
    out: Dict[str, List[str]] = {}
    for src in sorted((REPO / 'kunit').glob('*_kunit.c')):
        text = src.read_text()
        for array in kunitspec.CASE_ARRAY.finditer(text):
            slow = re.findall(r'KUNIT_CASE_SLOW\(\s*(\w+)', array.group(2))
            suite = next((kunitspec.SUITE_NAME.search(m.group(1)).group(1)  # type: ignore[union-attr]
                          for m in kunitspec.SUITE.finditer(text)
                          if f'.test_cases = {array.group(1)}' in m.group(1)), None)
            if slow and suite:
                out[suite] = slow
    return out


def renumbered(lines: List[str], indent: str, start: int) -> List[str]:
    """@lines with each result line at @indent from @start on numbered one less."""
    out = []
    for i, ln in enumerate(lines):
        m = re.match(rf'^{indent}(not ok|ok) (\d+) (.*)$', ln)
        if i >= start and m:
            ln = f'{indent}{m.group(1)} {int(m.group(2)) - 1} {m.group(3)}'
        out.append(ln)
    return out


def counts_less(line: str, result: str, skipped: bool) -> str:
    """KUnit's count line @line with the case of result line @result taken
    out (@skipped: counted as skipped instead)."""
    m = ktap.STATS.match(line)
    assert m is not None
    n = {'pass': int(m.group(2)), 'fail': int(m.group(3)), 'skip': int(m.group(4)),
         'total': int(m.group(5))}
    n['fail' if result.lstrip().startswith('not ok') else
      'skip' if '# SKIP' in result else 'pass'] -= 1
    if skipped:
        n['skip'] += 1
    else:
        n['total'] -= 1
    return f'# {m.group(1)}: ' + ' '.join(f'{k}:{v}' for k, v in n.items())


def without_case(lines: List[str], suite: str, case: str, skipped: bool = False) -> List[str]:
    """The console as the kernel prints it when FILTER_ATTR leaves @suite.@case
    out (@skipped: FILTER_ACTION=skip, printed as skipped without a reason):
    the case's lines gone, the plan, KUnit's count and the numbers after it
    one less (skipped: the case's lines one result line, counted as skipped)."""
    head = lines.index(f'    # Subtest: {suite}')
    end = next(i for i in range(head, len(lines)) if re.match(rf'^(not )?ok \d+ {suite}$',
                                                              lines[i]))
    res = next(i for i in range(head, end) if re.match(rf'^    (not )?ok \d+ {case}$', lines[i]))
    first = max(i for i in range(head, res) if re.match(r'^    (not )?ok \d+ |^    1\.\.',
                                                         lines[i])) + 1
    number = int(lines[res].split()[-2])
    if skipped:
        out = lines[:first] + [f'    ok {number} {case} # SKIP'] + lines[res + 1:]
    else:
        out = lines[:first] + renumbered(lines[res + 1:end + 1], '    ', 0) + lines[end + 1:]
        plan = next(i for i in range(head, len(out)) if re.match(r'^    1\.\.\d+$', out[i]))
        out[plan] = f'    1..{int(out[plan][7:]) - 1}'
    # KUnit counts a suite of more than one case.
    stats = next((i for i in range(head, len(out)) if out[i].startswith(f'# {suite}: pass:')),
                 None)
    if stats is not None:
        out[stats] = counts_less(out[stats], lines[res], skipped)
    return out


def without_suite(lines: List[str], suite: str) -> List[str]:
    """The console without @suite (every case of it left out): the KUnit
    suites after it numbered one less, the plan one less."""
    head = lines.index(f'    # Subtest: {suite}') - 1
    end = next(i for i in range(head, len(lines)) if re.match(rf'^(not )?ok \d+ {suite}$',
                                                              lines[i]))
    user = lines.index(f'    # Subtest: {guest.SYSFS_SUITE}')
    out = lines[:head] + renumbered(lines[end + 1:user], '', 0) + lines[user:]
    top = out.index('KTAP version 1') + 1
    out[top] = f'1..{int(out[top][3:]) - 1}'
    return out


def judge_lines(lines: List[str], exp: kunitspec.Expectations,
                attr_skipped: Sequence[str] = (), isolate: str = '') -> verdict.Verdict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        (out / 'console.log').write_text(''.join(f'{ln}\n' for ln in lines))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return outputs.judge(out, out / 'console.log', exp, rc=None, kunit_log=None,
                             isolate=isolate, attr_skipped=attr_skipped)[1]


def attr_args(*argv: str) -> RunSpec:
    return RunSpec.from_argv(argv)


class FilterAttrTest(unittest.TestCase):
    """What FILTER_ATTR leaves out is not asked for: never 'missing'."""

    def test_speed_above_slow_leaves_out_the_slow_cases(self) -> None:
        declared = kunitspec.declared_cases(REPO / 'kunit', userspace=True)
        self.assertTrue(slow_cases())
        self.assertEqual(attrs.attribute_left_out(declared, 'speed>slow'), slow_cases())
        self.assertEqual(attrs.attribute_left_out(declared, 'speed>=slow'), {})
        self.assertEqual(attrs.attribute_left_out(declared, 'is_init=false'), {})
        every = attrs.attribute_left_out(declared, 'is_init=true')
        self.assertEqual(every, {s: c for s, c in declared.items() if s != guest.SYSFS_SUITE})
        normal = attrs.attribute_left_out(declared, 'speed=slow')
        self.assertEqual({(s, c) for s, cs in normal.items() for c in cs},
                         {(s, c) for s, cs in declared.items() if s != guest.SYSFS_SUITE
                          for c in cs} - {(s, c) for s, cs in slow_cases().items() for c in cs})

    def test_the_case_then_the_suite_then_normal(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / 'x_kunit.c').write_text('''
static struct kunit_case a_cases[] = {
	KUNIT_CASE(plain),
	KUNIT_CASE_SLOW(slow),
	KUNIT_CASE_ATTR(very, {.speed = KUNIT_SPEED_VERY_SLOW}),
	KUNIT_CASE_PARAM_ATTR(quick, gen, {.speed = KUNIT_SPEED_NORMAL}),
	{}
};
static struct kunit_suite a = {
	.name = "a",
	.test_cases = a_cases,
	.attr = { .speed = KUNIT_SPEED_SLOW },
};
static struct kunit_case b_cases[] = { KUNIT_CASE(plain), {} };
static struct kunit_suite b = { .name = "b", .test_cases = b_cases, };
kunit_test_suites(&b);
kunit_test_init_section_suites(&a);
''')
            cases = {'a': ['plain', 'slow', 'very', 'quick'], 'b': ['plain']}
            self.assertEqual(attrs.attribute_left_out(cases, 'speed>slow', Path(tmp)),
                             {'a': ['plain', 'slow', 'very']})
            self.assertEqual(attrs.attribute_left_out(cases, 'speed<slow', Path(tmp)),
                             {'a': ['plain', 'slow', 'quick'], 'b': ['plain']})
            self.assertEqual(attrs.attribute_left_out(cases, 'is_init=false', Path(tmp)),
                             {'a': ['plain', 'slow', 'very', 'quick']})
            self.assertEqual(attrs.attribute_left_out(cases, 'speed>very_slow,is_init=true',
                                                      Path(tmp)),
                             {'a': ['very'], 'b': ['plain']})

    def test_expectations_without_and_with_skip(self) -> None:
        exp = outputs.expectations('', dict(CONTEXT), userspace=True)
        whole = {s: list(c) for s, c in (exp.cases or {}).items()}
        left = attrs.apply_attribute_filter(exp, attr_args('--filter-attr', 'speed>slow'))
        self.assertEqual(sorted(left), sorted(f'{s}.{c}' for s, cs in slow_cases().items()
                                              for c in cs))
        assert exp.cases is not None
        self.assertNotIn('cpuhp_stress', exp.cases)    # its one case is slow
        self.assertEqual(exp.cases[guest.SYSFS_SUITE], whole[guest.SYSFS_SUITE])
        for name in left:
            suite, case = name.split('.')
            self.assertNotIn(case, exp.cases.get(suite, []))
        exp = outputs.expectations('', dict(CONTEXT), userspace=True)
        self.assertEqual(attrs.apply_attribute_filter(exp, attr_args(
            '--filter-attr', 'speed>slow', '--filter-action', 'skip')), left)
        self.assertEqual(exp.cases, whole)

    def recorded(self, argv: Sequence[str]) -> Tuple[kunitspec.Expectations, List[str]]:
        exp = run_default_expectations('', dict(CONTEXT), userspace=True)
        args = attr_args(*argv)
        exp.context.update(args.set_knobs())
        return exp, attrs.apply_attribute_filter(exp, args)

    def test_the_recorded_run_filtered_is_judged_as_the_whole(self) -> None:
        lines = CONSOLE.read_text().splitlines()
        whole = judge_lines(lines, run_default_expectations('', dict(CONTEXT), userspace=True))
        exp, gone = self.recorded(['--filter-attr', 'speed>slow'])
        self.assertEqual(len(gone), 3)
        self.assertTrue(set(gone) <= set(whole.statuses))
        filtered = lines
        for name in gone:
            suite, case = name.split('.')
            if [n for n in whole.statuses if n.startswith(suite + '.')] == [name]:
                filtered = without_suite(filtered, suite)
            else:
                filtered = without_case(filtered, suite, case)
        v = judge_lines(filtered, exp)
        self.assertEqual(set(v.statuses), set(whole.statuses) - set(gone))
        self.assertEqual([(p.category, p.name) for p in v.problems],
                         [(p.category, p.name) for p in whole.problems if p.name not in gone])
        self.assertFalse([p for p in v.problems if p.category == 'missing'])
        # Asked for anyway (no FILTER_ATTR), they are missing.
        unfiltered = judge_lines(filtered, run_default_expectations('', dict(CONTEXT),
                                                                    userspace=True))
        self.assertEqual({p.name for p in unfiltered.problems if p.category == 'missing'},
                         {n if n.split('.')[0] != 'cpuhp_stress' else 'cpuhp_stress'
                          for n in gone})

    def test_skipped_by_the_filter_is_expected(self) -> None:
        lines = CONSOLE.read_text().splitlines()
        exp, gone = self.recorded(['--filter-attr', 'speed>slow', '--filter-action', 'skip'])
        self.assertEqual(len(gone), 3)
        filtered = lines
        for name in gone:
            suite, case = name.split('.')
            filtered = without_case(filtered, suite, case, skipped=True)
        v = judge_lines(filtered, exp, attr_skipped=gone)
        skips = {s.name: s for s in v.skips}
        for name in gone:
            self.assertEqual(v.statuses[name], 'skip')
            self.assertTrue(skips[name].expected)
            self.assertEqual(skips[name].why, 'left out by FILTER_ATTR=speed>slow '
                             '(FILTER_ACTION=skip)')
        self.assertFalse([p for p in v.problems if p.name in gone])
        # A skip without a reason the filter did not make stays red.
        v = judge_lines(filtered, exp)
        self.assertEqual({p.name for p in v.problems if p.category == 'unexpected-skip'},
                         set(gone))


# --- ISOLATE ------------------------------------------------------------------

TOP_RESULT = re.compile(r'^(not ok|ok) (\d+) (\S+)(.*)$')
CASE_RESULT = re.compile(r'^    (not ok|ok) (\d+) (\S+)(.*)$')


class Recorded:
    """The recorded whole run cut the way kunit.py --run_isolated runs it."""

    def __init__(self) -> None:
        self.lines = CONSOLE.read_text().splitlines()
        lines = self.lines
        self.ktap = lines.index('KTAP version 1')
        # Each boot's command line names its suite or case.
        self.boot_log = [ln.replace('kunit.enable=1', 'kunit.filter_glob=<glob> kunit.enable=1')
                         for ln in lines[:self.ktap]]
        results = [i for i in range(self.ktap, len(lines)) if TOP_RESULT.match(lines[i])]
        user = lines.index(f'    # Subtest: {guest.SYSFS_SUITE}') - 1
        kunit = [i for i in results if i < user]
        # Each suite: from after the result before it (its init's lines too)
        # to its own result line.
        self.suites: List[Tuple[str, List[str]]] = []
        start = self.ktap + 2
        for end in kunit:
            m = TOP_RESULT.match(lines[end])
            assert m is not None
            self.suites.append((m.group(3), lines[start:end + 1]))
            start = end + 1
        user_end = next(i for i in results if i > user)
        self.between = lines[start:user]            # /init starting
        self.userspace = lines[user:user_end + 1]
        self.after = lines[user_end + 1:]           # the gcov dump, the reboot

    def boot(self, glob: str, body: List[str], anchor: str) -> List[str]:
        """One boot's console: booting, its KTAP document, /init (the
        user-space suite in the anchor's boot alone), the gcov dump."""
        user = self.userspace if glob == anchor else []
        return ([ln.replace('<glob>', glob) for ln in self.boot_log] + ['KTAP version 1', '1..1']
                + body + self.between + user + self.after)

    @staticmethod
    def top(line: str) -> str:
        m = TOP_RESULT.match(line)
        assert m is not None
        return f'{m.group(1)} 1 {m.group(3)}{m.group(4)}'

    def suite_boots(self) -> List[List[str]]:
        anchor = sorted(name for name, _ in self.suites)[0]
        return [self.boot(name, body[:-1] + [self.top(body[-1])], anchor)
                for name, body in self.suites]

    def case_boots(self) -> List[List[str]]:
        """A boot per case: the suite's init and header, the case's lines
        numbered 1, the suite's result."""
        first = sorted(name for name, _ in self.suites)[0]
        body = dict(self.suites)[first]
        m = next(CASE_RESULT.match(ln) for ln in body if CASE_RESULT.match(ln))
        assert m is not None
        anchor = f'{first}.{m.group(3)}'
        out: List[List[str]] = []
        for name, body in self.suites:
            plan = next(i for i, ln in enumerate(body) if re.match(r'^    1\.\.\d+$', ln))
            head = body[:plan] + ['    1..1']
            start = plan + 1
            for end in [i for i, ln in enumerate(body) if CASE_RESULT.match(ln)]:
                m = CASE_RESULT.match(body[end])
                assert m is not None
                status, case, directive = m.group(1), m.group(3), m.group(4)
                # KUnit counts a suite of more than one case only: no count line.
                top = f'{status} 1 {name}' + (' # SKIP' if 'SKIP' in directive else '')
                out.append(self.boot(f'{name}.{case}', head + body[start:end]
                                     + [f'    {status} 1 {case}{directive}', top], anchor))
                start = end + 1
        return out


def kunit_log_of(boots: List[List[str]]) -> str:
    """What kunit.py run --run_isolated --raw_output=all prints for @boots."""
    out = ['[06:00:00] Configuring KUnit Kernel ...', '[06:00:01] Building KUnit Kernel ...',
           'Running tests with:', '$ qemu-system-x86_64 -append kunit.action=list',
           ]
    for n, lines in enumerate(boots, 1):
        out += [f'[06:00:{n + 1:02d}] Starting KUnit Kernel ({n}/{len(boots)})...',
                'Running tests with:', f'$ qemu-system-x86_64 -nodefaults -m 1024 {n}', *lines]
    out.append('[06:09:00] Elapsed time: 99.000s total, 1.000s configuring, 1.000s building, '
               '97.000s running')
    return '\n'.join(out) + '\n'


class IsolateTest(unittest.TestCase):
    """ISOLATE=suite|test: several boots judged, reported and covered as one run."""

    recorded: Recorded
    whole: verdict.Verdict

    @classmethod
    def setUpClass(cls) -> None:
        cls.recorded = Recorded()
        cls.whole = judge_lines(cls.recorded.lines, cls.expectations())

    @staticmethod
    def expectations() -> kunitspec.Expectations:
        return run_default_expectations('', dict(CONTEXT), userspace=True)

    def judge_boots(self, boots: List[List[str]], mode: str) -> verdict.Verdict:
        console = isolation.isolated_console(kunit_log_of(boots), mode)
        return judge_lines(console, self.expectations(), isolate=mode)

    def assert_as_one_boot(self, v: verdict.Verdict) -> None:
        whole = self.whole
        self.assertEqual(set(v.statuses), set(whole.statuses))      # the same case set
        self.assertEqual(v.statuses, whole.statuses)
        self.assertEqual(v.counts(), whole.counts())
        self.assertEqual(sorted((p.category, p.name) for p in v.problems),
                         sorted((p.category, p.name) for p in whole.problems))
        self.assertEqual(sorted(p.name for p in v.known), sorted(p.name for p in whole.known))
        self.assertEqual([(s.name, s.expected) for s in v.skips],
                         [(s.name, s.expected) for s in whole.skips])

    def test_a_boot_per_suite_is_the_single_boot(self) -> None:
        boots = self.recorded.suite_boots()
        self.assertEqual(len(boots), 5)
        self.assert_as_one_boot(self.judge_boots(boots, 'suite'))

    def test_a_boot_per_case_is_the_single_boot(self) -> None:
        boots = self.recorded.case_boots()
        cases = {'.'.join(n.split('.')[:2]) for n in self.whole.statuses
                 if not n.startswith(guest.SYSFS_SUITE + '.')}
        self.assertEqual(len(boots), len(cases))
        self.assert_as_one_boot(self.judge_boots(boots, 'test'))

    def test_the_console_of_the_boots(self) -> None:
        boots = self.recorded.suite_boots()
        console = isolation.isolated_console(kunit_log_of(boots), 'suite')
        marks = [ln for ln in console if isolation.BOOT_MARK.match(ln)]
        self.assertEqual(marks, [f'cpuhp-kunit: boot {n}/5 of kunit.py --run_isolated=suite'
                                 for n in range(1, 6)])
        self.assertEqual([b for b in isolation.boot_lines(console)], boots)
        self.assertFalse([ln for ln in console if ln.startswith(('$ qemu', 'Running tests',
                                                                 '[06:'))])
        self.assertEqual(isolation.isolated_console(
            '[06:00:00] Building KUnit Kernel ...\nerror\n', 'suite'), [])

    def test_boots_of_a_console_joined_elsewhere(self) -> None:
        """Without the marks (test.log of each boot joined by hand), at each banner."""
        boots = self.recorded.suite_boots()
        joined = [ln for b in boots for ln in b]
        self.assertEqual(isolation.boot_lines(joined), boots)
        v = judge_lines(joined, self.expectations(), isolate='suite')
        self.assert_as_one_boot(v)

    def test_a_boots_own_problems_name_the_whole_consoles_line(self) -> None:
        boots = self.recorded.suite_boots()
        at = next(i for i, ln in enumerate(boots[2]) if ln.startswith('    KTAP version 1'))
        boots[2] = boots[2][:at] + ['Linux version 6.12.118 (again) #1 SMP'] + boots[2][at:]
        console = isolation.isolated_console(kunit_log_of(boots), 'suite')
        v = judge_lines(console, self.expectations(), isolate='suite')
        reboot = [p for p in v.problems if p.category == 'reboot']
        self.assertEqual(len(reboot), 1)
        line = console.index('Linux version 6.12.118 (again) #1 SMP') + 1
        self.assertTrue(reboot[0].message.startswith(f'console line {line}: '), reboot[0].message)

    def test_a_crashed_boot_crashes_its_suite_only(self) -> None:
        boots = self.recorded.suite_boots()
        name = self.recorded.suites[1][0]     # not the one with the user-space suite
        cut = next(i for i, ln in enumerate(boots[1]) if CASE_RESULT.match(ln))
        boots[1] = boots[1][:cut]
        v = self.judge_boots(boots, 'suite')
        crashed = {p.name.split('.')[0] for p in v.problems if p.category in ('crashed',
                                                                              'missing')}
        self.assertEqual(crashed, {name})
        for n, st in v.statuses.items():
            if not n.startswith(name + '.'):
                self.assertEqual(st, self.whole.statuses[n])

    def test_merge_adds_up_the_counts(self) -> None:
        """A suite of two boots (a console joined elsewhere, or FILTER= cut in
        two): one suite, its cases in order, KUnit's counts added up."""
        def boot(cases: Sequence[Tuple[str, str]], fail: int) -> ktap.Test:
            return ktap.parse(['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s',
                               f'    1..{len(cases)}',
                               *[f'    {st} {n} {c}' for n, (st, c) in enumerate(cases, 1)],
                               f'# s: pass:{len(cases) - fail} fail:{fail} skip:0 '
                               f'total:{len(cases)}', f'{"not ok" if fail else "ok"} 1 s'])
        root = isolation.merge_suites([boot([('ok', 'a'), ('ok', 'b')], 0),
                                       boot([('not ok', 'c'), ('ok', 'd')], 1)])
        suite, = root.subtests
        self.assertEqual([c.name for c in suite.subtests], ['a', 'b', 'c', 'd'])
        self.assertEqual((suite.status, suite.plan), (ktap.Status.FAIL, 4))
        self.assertEqual(suite.counted[0], '# s: pass:3 fail:1 skip:0 total:4')
        v = judging.judge_ktap(root, kunitspec.Expectations(cases={'s': ['a', 'b', 'c', 'd']}))
        self.assertEqual([(p.category, p.name) for p in v.problems], [('failed', 's.c')])

    def test_the_written_run_is_one_run(self) -> None:
        """junit.xml and the tree every later step re-reads (run_root()) are the
        joined one, results.ktap holds each boot's document."""
        boots = self.recorded.case_boots()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            console = isolation.isolated_console(kunit_log_of(boots), 'test')
            (out / 'console.log').write_text(''.join(f'{ln}\n' for ln in console))
            exp = self.expectations()
            exp.context['isolate'] = 'test'
            with contextlib.redirect_stdout(io.StringIO()):
                root, v = outputs.judge(out, out / 'console.log', exp, rc=None, kunit_log=None,
                                    isolate='test')
            again = isolation.run_root(out, verdict.read_json(out / 'verdict.json')[1])
            self.assertEqual([(n, t.status) for n, t in ktap.cases(again)],
                             [(n, t.status) for n, t in ktap.cases(root)])
            self.assertEqual(len({s.name for s in again.subtests}), len(again.subtests))
            ktap_text = (out / 'results.ktap').read_text()
            self.assertEqual(ktap_text.count('\nKTAP version 1\n') + 1, len(boots))
            xml = (out / 'junit.xml').read_text()
            for suite in again.subtests:
                self.assertEqual(xml.count(f'<testsuite name="{suite.name}"'), 1, suite.name)

    def test_the_user_space_suite_runs_in_one_boot(self) -> None:
        exp = outputs.expectations('', dict(CONTEXT), userspace=True)
        self.assertEqual(isolation.isolation_anchor(exp, 'suite'), 'cpuhp_install')
        assert exp.cases is not None
        self.assertEqual(isolation.isolation_anchor(exp, 'test'),
                         f'cpuhp_install.{exp.cases["cpuhp_install"][0]}')
        self.assertEqual(isolation.isolation_anchor(exp, ''), '')
        self.assertEqual(isolation.isolated_boots(exp, 'suite'), len(exp.cases) - 1)
        self.assertEqual(isolation.isolated_boots(exp, 'test'),
                         sum(len(c) for s, c in exp.cases.items() if s != guest.SYSFS_SUITE))
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(guest, 'busybox', return_value=Path('/bin/busybox')), \
                mock.patch.object(guest, 'make_initramfs',
                                   side_effect=lambda dest, text, extra=(), bb=None: dest) as mk:
            guest.write(Path(tmp), '', anchor='cpuhp_install')
            init: str = mk.call_args.args[1]
        line = next(ln for ln in init.splitlines() if 'cpuhp_sysfs_test.sh' in ln)
        self.assertTrue(line.startswith(guest.only_in_boot('cpuhp_install', 'sh '
                                                           '/cpuhp_sysfs_test.sh')[:-8]), line)
        self.assertTrue(line.endswith(';; esac'))

    def test_the_boots_the_initramfs_tells_apart(self) -> None:
        """The shell of only_in_boot() and of the listing boot's line, run."""
        def runs(anchor: str, cmdline: str) -> bool:
            script = guest.only_in_boot(anchor, 'echo yes').replace('$(cat /proc/cmdline)',
                                                                   cmdline)
            return subprocess.run(['sh', '-c', script], capture_output=True, text=True,
                                  check=True).stdout == 'yes\n'
        line = 'panic=-1 kunit.filter_glob={} kunit.enable=1 console=ttyS0 -- x'
        self.assertTrue(runs('cpuhp_install', line.format('cpuhp_install')))
        self.assertTrue(runs('cpuhp_install', line.format('cpuhp_install.*offline*')))
        self.assertFalse(runs('cpuhp_install', line.format('cpuhp_install_more')))
        self.assertFalse(runs('cpuhp_install', line.format('cpuhp_rollback')))
        self.assertTrue(runs('s.case', line.format('s.case')))
        self.assertFalse(runs('s.case', line.format('s.case_two')))
        self.assertFalse(runs('s.case', 'panic=-1 console=ttyS0'))
        listing = next(ln for ln in guest.INIT.splitlines() if 'kunit.action=' in ln)
        for cmdline, lists in (('kunit.action=list kunit.enable=1', True),
                               ('kunit.action=list_attr', True),
                               ('kunit.filter_glob=x kunit.enable=1', False)):
            script = listing.replace('$(cat /proc/cmdline)', cmdline).replace(
                '/bin/busybox reboot -f', 'echo off')
            out = subprocess.run(['sh', '-c', script], capture_output=True, text=True,
                                 check=True).stdout
            self.assertEqual(out == 'off\n', lists, cmdline)

    def test_only_kunit_pys_own_lines_reach_the_terminal(self) -> None:
        echo = isolation.IsolatedEcho()
        shown = [ln for ln in kunit_log_of(self.recorded.suite_boots()[:2]).splitlines()
                 if echo(ln)]
        self.assertEqual(shown[:2], ['[06:00:00] Configuring KUnit Kernel ...',
                                     '[06:00:01] Building KUnit Kernel ...'])
        self.assertIn('[06:00:02] Starting KUnit Kernel (1/2)...', shown)
        self.assertIn('ok 1 cpuhp_install', shown)
        self.assertFalse([ln for ln in shown if ln.startswith('Linux version')])

    def test_coverage_adds_up_every_boots_gcov_data(self) -> None:
        boots = self.recorded.suite_boots()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            calls: List[Tuple[str, ...]] = []

            def capture(build: Path, src: Path, where: Path, name: str) -> None:
                (where / f'{name}.info').write_text('TN:\n')

            def lcov(*args: str) -> str:
                calls.append(args)
                Path(args[-1]).write_text('TN:\nSF:/x/kernel/cpu.c\nDA:1,1\nend_of_record\n')
                return ''
            boots[3] = [ln for ln in boots[3] if not ln.startswith(gcov.BEGIN)]
            with mock.patch.object(gcov, 'capture', side_effect=capture), \
                    mock.patch.object(gcov, 'write_gcda') as write, \
                    mock.patch.object(gcov, 'clear'), \
                    mock.patch.object(gcov, 'lcov', side_effect=lcov), \
                    contextlib.redirect_stdout(io.StringIO()) as err:
                files = gcov.merge_boots(out, out, out, boots)
            self.assertEqual(write.call_count, 4)
            self.assertEqual(calls, [tuple(a for n in (1, 2, 3, 5) for a in (
                '--add-tracefile', str(out / f'coverage-boot{n}.info')))
                + ('--output-file', str(out / 'coverage.info'))])
            self.assertIn('/x/kernel/cpu.c', files)
            self.assertIn('gcov data of 4 of 5 boots added up', err.getvalue())
            self.assertIn('none from boot 4: no gcov data', err.getvalue())
            with self.assertRaisesRegex(say.PrepareError, 'no gcov data in any of the 1 boots'):
                gcov.merge_boots(out, out, out, [['no dump']])

    def test_what_kunit_py_says_beside_the_consoles(self) -> None:
        """kunit.log holds the consoles: only kunit.py's own timeout line is a
        timeout; a listing boot and no more is said as such."""
        boots = self.recorded.suite_boots()
        boots[1] = boots[1][:40] + ['i8042: controller timed out after 5 seconds'] + boots[1][40:]
        log = kunit_log_of(boots)
        console = isolation.isolated_console(log, 'suite')
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            (out / 'console.log').write_text(''.join(f'{ln}\n' for ln in console))
            with contextlib.redirect_stdout(io.StringIO()):
                v = outputs.judge(out, out / 'console.log', self.expectations(), 0, None, 600, log,
                              isolate='suite')[1]
                self.assertNotIn('timeout', [p.category for p in v.problems])
                timed_out = log.replace('[06:09:00] Elapsed', "Command '['qemu-system-x86_64', "
                                        "'-nodefaults']' timed out after 600 seconds\n"
                                        "[06:09:00] Elapsed")
                v = outputs.judge(out, out / 'console.log', self.expectations(), 0, None, 600,
                              timed_out, isolate='suite')[1]
                self.assertIn('timeout', [p.category for p in v.problems])
        listing = log[:log.index('[06:00:02] Starting')]
        self.assertEqual(outputs.build_problem(listing, 1)[2],
                         'the kernel booted to list its cases (kunit.py --run_isolated), and '
                         'no boot followed (kunit.py exited 1): see kunit.log')

    def test_make_judge_of_an_isolated_console(self) -> None:
        boots = self.recorded.suite_boots()
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / 'console.log'
            src.write_text(''.join(f'{ln}\n' for ln in isolation.isolated_console(
                kunit_log_of(boots), 'suite')))
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()), \
                    mock.patch.object(outputs, 'expectations', run_default_expectations):
                rc = run.main(['--judge', str(src), '--out', str(Path(tmp) / 'out'),
                               '--isolate', 'suite'])
            v, context = verdict.read_json(Path(tmp) / 'out' / 'verdict.json')
            self.assertEqual(context['isolate'], 'suite')
            self.assertEqual(rc, 0 if self.whole.ok else 1)
            self.assertEqual(v.statuses, self.whole.statuses)

    @unittest.skipUnless(kernel_tree('6.12'), 'no 6.12 tree here')
    def test_make_run_isolate_suite_up_to_the_kernel(self) -> None:
        """make run ISOLATE=suite with kunit.py's run stood in for by its
        printed output: the command, console.log, kunit.py's own parse of each
        boot joined in results.json, the verdict of the single boot."""
        path = kernel_tree('6.12')
        assert path is not None
        t = tree.Tree(kver='6.12', package='x', version='6.12.118', path=path)
        boots = self.recorded.suite_boots()
        cmds: List[List[str]] = []

        def kunit(cmd: List[str], cwd: Path, log: Path, seconds: float,
                  echo: object = None) -> Tuple[Optional[int], Optional[float]]:
            cmds.append(cmd)
            log.write_text(kunit_log_of(boots))
            return 0, None

        with tempfile.TemporaryDirectory() as tmp:
            env = {'CPUHP_KUNIT_CACHE': str(Path(tmp) / 'cache'), 'PYTHONDONTWRITEBYTECODE': '1'}
            out = Path(tmp) / 'out'
            with mock.patch.dict(os.environ, env), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()), \
                    mock.patch.object(packages, 'ensure_packages'), \
                    mock.patch.object(execute, 'prepare_tree', return_value=t), \
                    mock.patch.object(outputs, 'expectations', run_default_expectations), \
                    mock.patch.object(guest, 'write', return_value=Path(tmp) / 'q.py') as write, \
                    mock.patch.object(buildstamp, 'build_inputs', return_value=None), \
                    mock.patch.object(knobs, 'toolchain', return_value='gcc (Debian) 12.2.0'), \
                    mock.patch.object(proc, 'run_logged', side_effect=kunit):
                rc = run.main(['--isolate', 'suite', '--no-coverage-report', '--out', str(out)])
            self.assertEqual(write.call_args.args[3], 'cpuhp_install')
            self.assertIn('--run_isolated=suite', cmds[0])
            v, context = verdict.read_json(out / 'verdict.json')
            self.assertEqual((context['isolate'], context['toolchain']),
                             ('suite', 'gcc (Debian) 12.2.0'))
            self.assertEqual(v.statuses, self.whole.statuses)
            self.assertEqual(sorted((p.category, p.name) for p in v.problems),
                             sorted((p.category, p.name) for p in self.whole.problems))
            self.assertEqual(rc, 0 if self.whole.ok else 1)
            data = json.loads((out / 'results.json').read_text())
            # kunit.py's own parse of each boot (it reads past a boot's plan
            # into the user-space suite of the boot that runs it).
            suites = [g['name'] for g in data['sub_groups']]
            self.assertEqual([n for n in suites if n != guest.SYSFS_SUITE],
                             [name for name, _ in self.recorded.suites])
            self.assertFalse(list(out.glob('kunit-py-boots')))


# A QEMU that boots no kernel: it prints the console a kernel of two suites
# would, after its banner and command line, and the QEMU arguments it got.
FAKE_QEMU = r'''#!/usr/bin/env python3
import fnmatch, re, sys
args = sys.argv[1:]
append = args[args.index('-append') + 1]
print('Linux version 6.12.118 (fake) (gcc (Debian 12.2.0-14+deb12u1) 12.2.0) #1 SMP')
print('Command line: ' + append)
print('qemu: ' + ' '.join(args[args.index('-serial') + 2:]))
suites = {'sa': ['a1', 'a2'], 'sb': ['b1']}
if 'kunit.action=list' in append:
    print('KTAP version 1')
    for s, cs in suites.items():
        print(s)
        print('\n'.join(f'{s}.{c}' for c in cs))
    print('reboot: Restarting system')
    sys.exit(0)
m = re.search(r'kunit.filter_glob=(\S+)', append)
sg, _, cg = (m.group(1) if m else '*').partition('.')
run = {s: [c for c in cs if fnmatch.fnmatch(c, cg or '*')] for s, cs in suites.items()
       if fnmatch.fnmatch(s, sg)}
run = {s: cs for s, cs in run.items() if cs}
print('KTAP version 1')
print(f'1..{len(run)}')
for i, (s, cs) in enumerate(run.items(), 1):
    print(f'    KTAP version 1\n    # Subtest: {s}\n    1..{len(cs)}')
    for j, c in enumerate(cs, 1):
        print(f'    ok {j} {c}')
    print(f'ok {i} {s}')
print('reboot: Restarting system')
'''
FAKE_QEMU_CONFIG = """from ..qemu_config import QemuArchParams
QEMU_ARCH = QemuArchParams(linux_arch='x86_64', kconfig='', qemu_arch='x86_64',
                           kernel_path='bzImage',
                           kernel_command_line='console=ttyS0 kunit_shutdown=none rdinit=/init --',
                           extra_qemu_params=[])
"""


class KunitPyTest(unittest.TestCase):
    """The command line of every knob, run by 6.12's and 6.1's own kunit.py
    (kunit.py exec: the reuse path; kunit.py run differs by --jobs alone,
    CommandLineTest) against a QEMU that boots no kernel (FAKE_QEMU): each
    flag is taken, each knob reaches the kernel or QEMU, and ISOLATE's boots,
    as kunit.py prints them, are judged as one run."""

    def run_kunit_py(self, series: str, *argv: str) -> Tuple[List[str], str, verdict.Verdict]:
        path = kernel_tree(series)
        assert path is not None
        t = tree.Tree(kver=series, package='x', version=series, path=path)
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / 'bin').mkdir()
            (root / 'bin' / 'qemu-system-x86_64').write_text(FAKE_QEMU)
            (root / 'bin' / 'qemu-system-x86_64').chmod(0o755)
            (root / 'qemu.py').write_text(FAKE_QEMU_CONFIG)
            (root / 'k.config').write_text('CONFIG_KUNIT=y\n')
            (root / 'build').mkdir()
            out = root / 'out'
            out.mkdir()
            args = RunSpec.from_argv(argv)
            cmd = kunitcmd.kunit_command(t, args, root / 'build', out, root / 'qemu.py',
                                         frags=[root / 'k.config'], build=False)
            # The tree is only read: no __pycache__ of kunit.py's modules in it.
            env = {'PATH': f'{root / "bin"}:{os.environ.get("PATH", "")}',
                   'PYTHONDONTWRITEBYTECODE': '1'}
            with mock.patch.dict(os.environ, env), contextlib.redirect_stdout(io.StringIO()):
                rc, killed = proc.run_logged(cmd, path, out / 'kunit.log', 120,
                                           isolation.IsolatedEcho() if args.isolate else None)
                self.assertEqual((rc, killed), (0, None), (out / 'kunit.log').read_text())
                log = (out / 'kunit.log').read_text()
                console = isolation.isolated_console(log, args.isolate) if args.isolate else \
                    (root / 'build' / 'test.log').read_text().splitlines()
                (out / 'console.log').write_text(''.join(f'{ln}\n' for ln in console))
                exp = kunitspec.Expectations(cases={'sa': ['a1', 'a2'], 'sb': ['b1']},
                                             context={'kver': series})
                _, v = outputs.judge(out, out / 'console.log', exp, rc, None, 120, log,
                                 out / 'results.json', t.kunit_py, args.isolate)
            # kunit.py's own parse: its --json, or (ISOLATE) of each boot, joined.
            data = json.loads((out / 'results.json').read_text())
            self.assertEqual({(g['name'], c['name'], c['status']) for g in data['sub_groups']
                              for c in g['test_cases']},
                             {('sa', 'a1', 'PASS'), ('sa', 'a2', 'PASS'), ('sb', 'b1', 'PASS')})
            return console, log, v

    @unittest.skipUnless(kernel_tree('6.12') and kernel_tree('6.1'), 'no 6.12 and 6.1 trees here')
    def test_every_knob_reaches_the_kernel_and_qemu(self) -> None:
        for series in ('6.12', '6.1'):
            with self.subTest(series=series):
                console, _, v = self.run_kunit_py(
                    series, '--kconfig-add', 'CONFIG_X=y CONFIG_Y=n', '--kernel-args',
                    'foo=1 bar', '--qemu-args=-name x -no-hpet', '--make-options', 'LLVM=1',
                    '--filter-attr', 'speed>slow', '--filter-action', 'skip')
                cmdline = next(ln for ln in console if ln.startswith('Command line: '))
                self.assertIn('printk.time=0 tsc=nowatchdog foo=1 bar kunit.filter="speed>slow" '
                              'kunit.filter_action=skip kunit.enable=1', cmdline)
                self.assertIn('qemu: -smp 4 -name x -no-hpet', console)
                self.assertTrue(v.ok, v.problems)

    @unittest.skipUnless(kernel_tree('6.12') and kernel_tree('6.1'), 'no 6.12 and 6.1 trees here')
    def test_isolated_boots_as_kunit_py_prints_them(self) -> None:
        for series in ('6.12', '6.1'):
            for mode, n in (('suite', 2), ('test', 3)):
                with self.subTest(series=series, isolate=mode):
                    console, log, v = self.run_kunit_py(series, '--isolate', mode,
                                                        '--kernel-args', 'foo=1')
                    self.assertEqual(len(isolation.boots(console)), n)
                    self.assertFalse([ln for ln in console if ln.startswith(('stty', '$ '))])
                    self.assertEqual(v.statuses, {'sa.a1': 'pass', 'sa.a2': 'pass',
                                                  'sb.b1': 'pass'})
                    self.assertTrue(v.ok, v.problems)
                    self.assertIn("-append 'kunit.action=list panic=-1 ", log)   # listing
                    self.assertEqual(sum('Command line: ' in ln for ln in console), n)


if __name__ == '__main__':
    unittest.main()
