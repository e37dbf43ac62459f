"""The architectures a run can build and boot (make ARCH=): x86_64, arm64.

One record per architecture says what differs: kunit.py's --arch name and
cross compiler, the Debian packages of the compiler and of QEMU, the QEMU
machine and CPU, the kernel image, the console, the topologies the guest
can take, and the Debian architecture whose static binaries go into the
initramfs. The build machine is amd64 (Debian 12): x86_64 builds with the
host's compiler and puts the host's own busybox into the initramfs; arm64
cross-compiles (gcc-aarch64-linux-gnu), boots qemu-system-aarch64's virt
machine (CPUs come and go through PSCI, QEMU's own firmware calls) and
takes busybox from Debian's arm64 package (multiarch: dpkg
--add-architecture, apt-get download, dpkg-deb -x into the cache; nothing
of it is installed on the machine).
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

from cpuhpk import cache, packages, say


@dataclasses.dataclass(frozen=True)
class Arch:
    name: str               # make ARCH=, kunit.py's linux_arch
    deb: str                # Debian's name of it
    cross_compile: str      # CROSS_COMPILE= ('' for the host's compiler)
    packages: Tuple[str, ...]   # compiler and QEMU
    qemu_arch: str          # qemu-system-<qemu_arch>
    kernel_path: str        # the image kunit.py boots, in the build directory
    console: str
    serial_kconfig: str     # the console's driver (kunit.py's qemu_configs/)
    qemu_params: Tuple[str, ...]
    kernel_args: Tuple[str, ...]    # every boot's own on this architecture
    topologies: Tuple[str, ...]     # make TOPOLOGY= values the guest can take

    @property
    def out_suffix(self) -> str:
        """What out/ and build directory names get: '' for x86_64, '-arm64'."""
        return '' if self.name == 'x86_64' else f'-{self.name}'


ARCHES: Dict[str, Arch] = {
    'x86_64': Arch(
        name='x86_64', deb='amd64', cross_compile='', packages=('gcc', 'qemu-system-x86'),
        qemu_arch='x86_64', kernel_path='arch/x86/boot/bzImage', console='ttyS0',
        serial_kconfig='CONFIG_SERIAL_8250=y\nCONFIG_SERIAL_8250_CONSOLE=y',
        qemu_params=('-bios', 'qboot.rom'),
        # tsc=nowatchdog: no clocksource watchdog on the TSC, and nothing
        # else (tsc=reliable would also drop the TSC sync check of every
        # CPU's bring-up). Under TCG the TSC and the HPET are both the
        # host's clock read at emulation's pace, and a busy host made the
        # watchdog see skew and switch the clock to hpet in the middle of a
        # run (6.12.118's smt guest, 2026-12-07): the crosststamp clock
        # cases, which need a clock with a clocksource ID, then skipped.
        kernel_args=('tsc=nowatchdog',),
        topologies=('flat', 'smt', 'hotplug', 'nosmt', 'nosmt-force', 'maxcpus')),
    # cortex-a57 as 6.1's kunit.py (6.12's -cpu max emulates pointer
    # authentication and more, slower under TCG); virt with GICv3 (GICv2
    # stops at 8 CPUs). Flat only: QEMU 7.2's virt machine cannot plug a
    # CPU in, and arm64 selects HOTPLUG_SMT only after 6.12 (no SMT control
    # to switch threads with).
    'arm64': Arch(
        name='arm64', deb='arm64', cross_compile='aarch64-linux-gnu-',
        packages=('gcc-aarch64-linux-gnu', 'qemu-system-arm'),
        qemu_arch='aarch64', kernel_path='arch/arm64/boot/Image.gz', console='ttyAMA0',
        serial_kconfig='CONFIG_SERIAL_AMBA_PL011=y\nCONFIG_SERIAL_AMBA_PL011_CONSOLE=y',
        qemu_params=('-machine', 'virt,gic-version=3', '-cpu', 'cortex-a57'),
        kernel_args=(),
        topologies=('flat',)),
}
HOST = 'x86_64'


def get(name: str) -> Arch:
    """The architecture called @name; PrepareError naming the known ones."""
    try:
        return ARCHES[name]
    except KeyError:
        raise say.PrepareError(f'ARCH={name}: not known (known: {" ".join(ARCHES)})') from None


def make_arguments(a: Arch) -> List[str]:
    """ARCH= and CROSS_COMPILE= for a make of the kernel for @a."""
    return [f'ARCH={a.name}'] + ([f'CROSS_COMPILE={a.cross_compile}'] if a.cross_compile else [])


def _apt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, check=False,
                          env={'DEBIAN_FRONTEND': 'noninteractive', 'PATH': '/usr/sbin:/usr/bin:/sbin:/bin'})


def ensure_foreign(a: Arch) -> None:
    """Make apt know @a's packages (dpkg --add-architecture, apt-get update)."""
    res = _apt('dpkg', '--print-foreign-architectures')
    if a.deb in res.stdout.split():
        return
    say.log(f'adding the Debian architecture {a.deb} (dpkg --add-architecture) for the '
            'initramfs\'s binaries')
    for args in (('dpkg', '--add-architecture', a.deb), ('apt-get', 'update', '-qq')):
        res = _apt(*args)
        if res.returncode != 0:
            tail = ' '.join((res.stderr or res.stdout).strip().splitlines()[-1:])
            raise say.PrepareError(f"'{' '.join(args)}' failed: {tail}"
                                   + (' (not root?)' if 'ermission' in tail else ''))


def static_binary(a: Arch, package: str, member: str) -> Path:
    """@member (e.g. 'bin/busybox') of Debian's @package built for @a.

    The host's own file for the host's architecture (the package
    installed); for another one, the package of that architecture is
    downloaded and unpacked into the cache, per version.
    """
    if a.name == HOST:
        packages.ensure_packages([package])
        return Path('/') / member
    ensure_foreign(a)
    version = packages.candidate(f'{package}:{a.deb}')
    if version is None:
        raise say.PrepareError(f'apt has no {package}:{a.deb} (apt-get update?)')
    dest = cache.cache_root() / f'userland-{a.deb}' / f'{package}_{version.replace(":", "%")}'
    if (dest / member).is_file():
        return dest / member
    # Not tempfile: run as a script, tools/cpuhpk/ comes first on sys.path and
    # its bisect.py would shadow the one tempfile's random imports.
    tmp = dest.with_name(dest.name + '.part')
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        res = subprocess.run(['apt-get', 'download', f'{package}:{a.deb}={version}'],
                             cwd=tmp, capture_output=True, text=True, check=False)
        debs = list(tmp.glob('*.deb'))
        if res.returncode != 0 or len(debs) != 1:
            tail = ' '.join((res.stderr or res.stdout).strip().splitlines()[-1:])
            raise say.PrepareError(f'apt-get download {package}:{a.deb} failed: {tail}')
        stage = tmp / 'x'
        subprocess.run(['dpkg-deb', '-x', str(debs[0]), str(stage)], check=True)
        if not (stage / member).is_file():
            raise say.PrepareError(f'{debs[0].name} has no {member}')
        shutil.rmtree(dest, ignore_errors=True)
        stage.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    say.log(f'{member} of {package}:{a.deb} {version} in {dest}')
    return dest / member
