"""The guest of a run: its initramfs, kunit.py's --qemu_config, the user-space suite.

After the suites the kernel does not shut down (kunit_shutdown=none;
kunit.py's own kunit_shutdown=reboot lands behind '--', among init's
arguments) but runs /init from a small initramfs: the user-space test
kunit/cpuhp_sysfs_test.sh (when FILTER selects it), then Debian's
busybox-static mounts debugfs and prints the .gcda files of
/sys/kernel/debug/gcov as a base64 tar on the console (gcov.py reads
them back), then reboots (kunit_shutdown=reboot; -no-reboot ends QEMU). With ISOLATE= every boot prints its own.

The selftest anchor of make coverage (tools/cpuhpk/coverage.py) boots the
same kernel with an initramfs that runs upstream's cpu-on-off-test.sh -a
instead, and prints its gcov data the same way.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from cpuhpk import arch, hygiene, ktap, kunitspec
from cpuhpk.paths import REPO

# What the initramfs needs (bash-static: the selftest anchor).
PACKAGES = ('bash-static', 'busybox-static', 'cpio')

SYSFS_TEST = REPO / 'kunit' / 'cpuhp_sysfs_test.sh'
SYSFS_SUITE = 'cpuhp_sysfs'

# debugfs reports a size of 0 for the .gcda files, so they are copied out
# with cat before tar sees them. Kernel messages are kept off the console
# while the data is printed, and its sha256 is printed first, so a damaged
# transfer is an error, not a wrong report. busybox's reboot ends QEMU
# (-no-reboot); its poweroff would only halt without ACPI.
DUMP_GCOV = f'''echo 1 > /proc/sys/kernel/printk
/bin/busybox mount -t debugfs debugfs /dbg
cd /dbg/gcov || /bin/busybox reboot -f
for f in $(/bin/busybox find . -name '*.gcda'); do
	/bin/busybox mkdir -p "/gcda/${{f%/*}}"
	/bin/busybox cat "$f" > "/gcda/$f"
done
cd /gcda
/bin/busybox tar -cf - . | /bin/busybox gzip -c > /gcov.tgz
echo "{hygiene.GCOV_BEGIN} $(/bin/busybox sha256sum < /gcov.tgz)"
/bin/busybox base64 /gcov.tgz
echo "{hygiene.GCOV_END}"
/bin/busybox reboot -f
'''

# After the KUnit suites: the user-space tests (their KTAP joins the run's),
# then print the gcov data, reboot (QEMU ends). {tests}: one line per test script.
# A boot that only lists the suites (kunit.py --run_isolated boots once
# with kunit.action=list first, and reads nothing after the list) powers
# off at once: no user-space test, no gcov data.
INIT = '''#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dbg /gcda /usr/bin /sbin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
case " $(cat /proc/cmdline) " in *" kunit.action="*) /bin/busybox reboot -f;; esac
{tests}
''' + DUMP_GCOV.replace('{', '{{').replace('}', '}}')

# The anchor: upstream's cpu-hotplug selftest instead of the suites.
SELFTEST_INIT = '''#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dbg /gcda /usr/bin /sbin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
echo "cpuhp-kunit: selftest begin"
/bin/bash /cpu-on-off-test.sh -a
echo "cpuhp-kunit: selftest exit $?"
''' + DUMP_GCOV

QEMU_CONFIG = '''from ..qemu_config import QemuArchParams

# {arch} as kunit.py's own, plus the initramfs; see tools/cpuhpk/arch.py.
QEMU_ARCH = QemuArchParams(linux_arch={arch!r},
			   kconfig="""
{serial}""",
			   qemu_arch={qemu_arch!r},
			   kernel_path={kernel_path!r},
			   kernel_command_line={cmdline!r},
			   extra_qemu_params={params!r})
'''


def qemu_config(a: arch.Arch, initrd: Path) -> str:
    """kunit.py's --qemu_config for @a booting @initrd after the suites."""
    return QEMU_CONFIG.format(
        arch=a.name, serial=a.serial_kconfig, qemu_arch=a.qemu_arch,
        kernel_path=a.kernel_path,
        cmdline=f'console={a.console} kunit_shutdown=none rdinit=/init --',
        params=[*a.qemu_params, '-initrd', str(initrd)])


def userspace_cases(filter_glob: str) -> List[str]:
    """The cases of kunit/cpuhp_sysfs_test.sh that @filter_glob selects."""
    cases = kunitspec.declared_cases(REPO / 'kunit', userspace=True)
    return kunitspec.filtered({k: v for k, v in cases.items() if k == SYSFS_SUITE},
                              filter_glob).get(SYSFS_SUITE, [])


def only_in_boot(anchor: str, command: str) -> str:
    """@command run only in the boot of kunit.py --run_isolated whose
    kunit.filter_glob is @anchor ('suite' or 'suite.case'), or @anchor
    followed by a case glob ('suite.<glob>', ISOLATE=suite with FILTER=s.c)."""
    return (f'case " $(cat /proc/cmdline) " in *" kunit.filter_glob={anchor} "*|'
            f'*" kunit.filter_glob={anchor}."*) {command};; esac')


def write(build_dir: Path, filter_glob: str, a: Optional[arch.Arch] = None,
          anchor: str = '') -> Path:
    """The initramfs and kunit.py --qemu_config of a run on @a; returns the latter.

    Written into @build_dir (the kernel they belong to); the sysfs test runs
    with the cases @filter_glob selects, not at all when it selects none.
    With @anchor (ISOLATE=: one boot per suite or case), only in the boot of
    that suite or case (only_in_boot()): the user-space suite runs once in
    the run, as in a single boot. Every boot prints its gcov data.
    """
    a = a or arch.get(arch.HOST)
    where = build_dir / 'cpuhp-kunit'
    where.mkdir(parents=True, exist_ok=True)
    cases = userspace_cases(filter_glob)
    tests = f"sh /cpuhp_sysfs_test.sh {' '.join(cases)}" if cases else ':'
    if cases and anchor:
        tests = only_in_boot(anchor, tests)
    initrd = make_initramfs(where / 'initramfs.cpio', INIT.format(tests=tests),
                            [('cpuhp_sysfs_test.sh', SYSFS_TEST)] if cases else [],
                            busybox(a))
    config = where / f'{a.name}_gcov.py'
    config.write_text(qemu_config(a, initrd))
    return config


def busybox(a: arch.Arch) -> Path:
    """Debian's static busybox for @a (busybox-static)."""
    return arch.static_binary(a, 'busybox-static', 'bin/busybox')


def make_initramfs(dest: Path, init_text: str, extra: Sequence[Tuple[str, Path]] = (),
                   busybox_path: Path = Path('/bin/busybox')) -> Path:
    """A newc cpio with @busybox_path, /init and @extra (name in the image, source)."""
    stage = dest.with_suffix('')
    shutil.rmtree(stage, ignore_errors=True)
    (stage / 'bin').mkdir(parents=True)
    shutil.copy2(busybox_path, stage / 'bin' / 'busybox')
    names = ['init', 'bin', 'bin/busybox']
    for name, src in extra:
        shutil.copy2(src, stage / name)
        names.append(name)
    (stage / 'init').write_text(init_text)
    (stage / 'init').chmod(0o755)
    with open(dest, 'wb') as f:
        subprocess.run(['cpio', '--quiet', '-o', '-H', 'newc'], cwd=stage,
                       input=('\n'.join(names) + '\n').encode(), stdout=f, check=True)
    return dest


SELFTEST_EXIT = re.compile(r'cpuhp-kunit: selftest exit (\d+)')


def selftest_status(console: Path) -> Optional[int]:
    """The exit status cpu-on-off-test.sh printed, None if it printed none."""
    for line in ktap.read_console(console).lines:
        m = SELFTEST_EXIT.search(line)
        if m:
            return int(m.group(1))
    return None
