"""make ARCH=: what differs per architecture (tools/cpuhpk/arch.py and its users)."""

from __future__ import annotations

import ast
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from cpuhpk import (arch, coverage, execute, gcov, guest, kunitcmd, mutate, packages, run, say,
                    series, tree)
from cpuhpk.paths import REPO
from cpuhpk.runspec import RunSpec
from tests.test_run import out_name


class ArchTest(unittest.TestCase):
    def test_unknown_architecture_names_the_known_ones(self) -> None:
        with self.assertRaisesRegex(say.PrepareError, 'ARCH=riscv.*x86_64 arm64'):
            arch.get('riscv')

    def test_x86_64_keeps_its_names_arm64_gets_a_suffix(self) -> None:
        """out/ and build directories of x86_64 are those before ARCH= existed."""
        self.assertEqual(out_name('6.12', 'default'), '6.12')
        self.assertEqual(out_name('6.12', 'default', arch='arm64'), '6.12-arm64')
        self.assertEqual(out_name('6.1', 'debug', fixes=True, smp=2, arch='arm64'),
                         '6.1-debug-arm64-smp2-fixes')
        t = tree.Tree(kver='6.12', package='x', version='6.12.118', path=Path('/linux'))
        self.assertEqual(execute.build_dir_of(t, 'default').name, 'build-6.12.118-default')
        self.assertEqual(execute.build_dir_of(t, 'default', 'arm64').name,
                         'build-6.12.118-default-arm64')
        # MAKE_OPTIONS= builds apart: a clang kernel never replaces the gcc one.
        self.assertEqual(execute.build_dir_of(t, 'default', 'x86_64', 'LLVM=1').name,
                         'build-6.12.118-default-LLVM-1')
        self.assertEqual(execute.build_dir_of(t, 'default', 'x86_64',
                                              'CONFIG_DEBUG_INFO_DWARF5=y').name,
                         'build-6.12.118-default-DEBUG-INFO-DWARF5-y')
        long = execute.build_dir_of(t, 'default', 'x86_64', 'KCFLAGS=-O1 ' * 4).name
        self.assertRegex(long, r'^build-6\.12\.118-default-KCFLAGS-O1-KCFLAGS-O1-K-[0-9a-f]{8}$')
        fixed = tree.Tree(kver='6.12', package='x', version='6.12.118', path=Path('/l'),
                          key='6.12.118-fixes')
        self.assertEqual(execute.build_dir_of(fixed, 'default').name,
                         'build-6.12.118-fixes-default')
        self.assertEqual(mutate.out_base('6.12', 'default', '1/4', None, 'arm64').name,
                         '6.12-arm64-mutate-1of4')

    def test_fragments_add_the_architecture_s_own(self) -> None:
        """x86_64's hypervisor guest and PCI lines come from kconfigs/x86_64/."""
        k = REPO / 'kconfigs'
        self.assertEqual(kunitcmd.fragments('default', '6.12'),
                         [k / 'default.config', k / 'x86_64' / 'default.config'])
        self.assertEqual(kunitcmd.fragments('default', '6.12', 'arm64'), [k / 'default.config'])
        self.assertNotIn('CONFIG_HYPERVISOR_GUEST', (k / 'default.config').read_text())

    def test_arm64_cross_compiles(self) -> None:
        args = RunSpec.from_argv(['--arch', 'arm64'])
        t = tree.Tree(kver='6.12', package='x', version='6.12.118', path=Path('/linux'))
        cmd = kunitcmd.kunit_command(t, args, Path('/build'), Path('/out'), Path('/q.py'),
                                     frags=[Path('/f.config')])
        self.assertIn('--cross_compile=aarch64-linux-gnu-', cmd)
        args = RunSpec.from_argv([])
        cmd = kunitcmd.kunit_command(t, args, Path('/build'), Path('/out'), Path('/q.py'),
                                     frags=[Path('/f.config')])
        self.assertFalse([c for c in cmd if c.startswith('--cross_compile')])

    def test_a_topology_the_architecture_cannot_take_is_refused(self) -> None:
        with mock.patch('sys.stderr'), self.assertRaises(SystemExit) as e:
            run.main(['--arch', 'arm64', '--topology', 'smt'])
        self.assertEqual(e.exception.code, 2)

    def test_qemu_config_is_kunit_py_s_shape(self) -> None:
        """The generated --qemu_config parses and boots the initramfs on each arch."""
        for a in arch.ARCHES.values():
            text = guest.qemu_config(a, Path('/i.cpio'))
            ast.parse(text)
            self.assertIn(f"qemu_arch={a.qemu_arch!r}", text)
            self.assertIn(f"'-initrd', '/i.cpio'", text)
            self.assertIn(f'console={a.console} kunit_shutdown=none rdinit=/init --', text)
        self.assertIn("'-bios', 'qboot.rom'", guest.qemu_config(arch.get('x86_64'), Path('/i')))

    def test_the_host_s_binary_for_the_host(self) -> None:
        with mock.patch.object(packages, 'ensure_packages') as ensure:
            self.assertEqual(arch.static_binary(arch.get('x86_64'), 'busybox-static',
                                                'bin/busybox'), Path('/bin/busybox'))
        ensure.assert_called_once_with(['busybox-static'])

    def test_another_architecture_s_binary_is_unpacked_into_the_cache(self) -> None:
        """apt-get download and dpkg-deb -x, once per version; nothing installed."""
        calls = []

        def fake_run(cmd, **kw):  # type: ignore[no-untyped-def]
            calls.append(cmd)
            if cmd[:2] == ['apt-get', 'download']:
                (Path(kw['cwd']) / 'busybox-static_1_arm64.deb').write_bytes(b'')
            if cmd[0] == 'dpkg-deb':
                (Path(cmd[3]) / 'bin').mkdir(parents=True)
                (Path(cmd[3]) / 'bin' / 'busybox').write_bytes(b'\x7fELF')
            out = {'dpkg': 'arm64\n', 'apt-cache': 'Candidate: 1:1.35-4\n'}.get(cmd[0], '')
            return subprocess.CompletedProcess(cmd, 0, out, '')

        with tempfile.TemporaryDirectory() as d, \
                mock.patch.dict('os.environ', {'CPUHP_KUNIT_CACHE': d}), \
                mock.patch.object(subprocess, 'run', side_effect=fake_run):
            got = arch.static_binary(arch.get('arm64'), 'busybox-static', 'bin/busybox')
            self.assertEqual(got, Path(d) / 'userland-arm64' / 'busybox-static_1%1.35-4' /
                             'bin' / 'busybox')
            self.assertTrue(got.is_file())
            self.assertEqual(sorted(p.name for p in got.parents[2].iterdir()),
                             ['busybox-static_1%1.35-4'])
            downloads = len([c for c in calls if c[:2] == ['apt-get', 'download']])
            arch.static_binary(arch.get('arm64'), 'busybox-static', 'bin/busybox')
            self.assertEqual(len([c for c in calls if c[:2] == ['apt-get', 'download']]),
                             downloads)
        self.assertFalse([c for c in calls if c[:2] == ['apt-get', 'install']])

    def test_series_check_builds_each_patch_for_arm64_too(self) -> None:
        self.assertEqual(series.CHECK_ARCHES, ('arm64',))
        cmd = series.make_command(Path('/w'), Path('/b'), arch.get('arm64'))
        self.assertIn('ARCH=arm64', cmd)
        self.assertIn('CROSS_COMPILE=aarch64-linux-gnu-', cmd)
        cmd = series.make_command(Path('/w'), Path('/b'))
        self.assertIn('ARCH=x86_64', cmd)
        self.assertFalse([c for c in cmd if c.startswith('CROSS_COMPILE')])

    def test_coverage_gate_per_architecture(self) -> None:
        self.assertEqual(gcov.thresholds_path('6.12').name, 'coverage-thresholds-6.12')
        self.assertEqual(gcov.thresholds_path('6.12', arch.get('arm64')).name,
                         'coverage-thresholds-6.12-arm64')
        self.assertTrue(hasattr(coverage, 'selftest_anchor'))


if __name__ == '__main__':
    unittest.main()
