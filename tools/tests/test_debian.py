"""CONFIG=debian: Debian's configuration, its modules left out (tools/cpuhpk/debian.py)."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path
from unittest import mock

from cpuhpk import arch, debian, kunitcmd, packages, say, tree
from cpuhpk.paths import REPO


class BuiltinOnlyTest(unittest.TestCase):
    def test_modules_are_turned_off_and_nothing_else(self) -> None:
        text = ('CONFIG_A=y\nCONFIG_B=m\n# CONFIG_C is not set\nCONFIG_D="m"\n'
                'CONFIG_E=0x10\nCONFIG_FM=m\n')
        self.assertEqual(debian.builtin_only(text),
                         'CONFIG_A=y\n# CONFIG_B is not set\n# CONFIG_C is not set\n'
                         'CONFIG_D="m"\nCONFIG_E=0x10\n# CONFIG_FM is not set\n')
        self.assertEqual(debian.counts(text), (1, 2))
        self.assertEqual(debian.counts(debian.builtin_only(text)), (1, 0))

    def test_the_debian_kernel_builds_on_debian_config(self) -> None:
        """debian.config replaces default.config; other fragments still add."""
        self.assertEqual(kunitcmd.fragments('debian', '6.12'),
                         [REPO / 'kconfigs/debian.config'])
        self.assertEqual(kunitcmd.fragments('debian+debug', '6.1'),
                         [REPO / 'kconfigs' / f'{n}.config' for n in ('debian', 'debug')])

    def test_a_missing_flavour_names_the_ones_there(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            t = tree.Tree(kver='6.12', package='x', version='6.12.118', path=Path(d))
            (Path(d) / 'config.amd64_rt_amd64.xz').write_bytes(b'')
            with mock.patch.object(packages, 'ensure_packages'), \
                    mock.patch.object(debian, 'source_config',
                                      return_value=Path(d) / 'config.amd64_none_amd64.xz'):
                with self.assertRaisesRegex(say.PrepareError,
                                            'not in linux-config-6.12.*config.amd64_rt_amd64.xz'):
                    debian.base(t, [], [], arch.get('x86_64'))

    def test_each_architecture_has_its_flavour(self) -> None:
        self.assertEqual(debian.source_config('6.12', arch.get('arm64')).name,
                         'config.arm64_none_arm64.xz')
        self.assertEqual(debian.source_config('6.1', arch.get('x86_64')),
                         Path('/usr/src/linux-config-6.1/config.amd64_none_amd64.xz'))


if __name__ == '__main__':
    unittest.main()
