"""kunit.py's own knobs as a run takes them, and the compiler they choose.

make KCONFIG_ADD=, KERNEL_ARGS=, QEMU_ARGS=, MAKE_OPTIONS=, ISOLATE=,
FILTER_ATTR= and FILTER_ACTION= are handed on to kunit.py as they are
(KUNIT_PY_FLAGS: this run's flag, kunit.py's flag); a RunSpec holds
them (runspec.py). The make options of a build are
this run's own (MAKE_OPTIONS: cpu.o and timekeeping.o profiled), then
MAKE_OPTIONS='s, which may choose another compiler (LLVM=1, CC=):
compiler() names the one kbuild runs, toolchain() what a kernel built
says it was built with. What the knobs make of kunit.py's command line,
and why a run refuses them, is kunitcmd.py's.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import List, Optional, Sequence

from cpuhpk.runspec import RunSpec

# kunit.py's own knobs, handed on as they are (make KCONFIG_ADD=, KERNEL_ARGS=,
# QEMU_ARGS=, MAKE_OPTIONS=, ISOLATE=, FILTER_ATTR=, FILTER_ACTION=): this
# run's flag, kunit.py's flag. Both kunit.py run and kunit.py exec take each
# (exec ignores --kconfig_add and --make_options: the kernel is built).
KUNIT_PY_FLAGS = {'kconfig_add': '--kconfig_add', 'kernel_args': '--kernel_args',
                  'qemu_args': '--qemu_args', 'make_options': '--make_options',
                  'isolate': '--run_isolated', 'filter_attr': '--filter',
                  'filter_action': '--filter_action'}
# The make variable of each, for messages.
KNOB_NAMES = {'kconfig_add': 'KCONFIG_ADD', 'kernel_args': 'KERNEL_ARGS',
              'qemu_args': 'QEMU_ARGS', 'make_options': 'MAKE_OPTIONS', 'isolate': 'ISOLATE',
              'filter_attr': 'FILTER_ATTR', 'filter_action': 'FILTER_ACTION'}
# Profile kernel/cpu.o and kernel/time/timekeeping.o (src/6.12/0007, src/6.1/0004; gcov.py).
MAKE_OPTIONS = ('CPUHP_KUNIT_GCOV=y',)
# What kbuild's LLVM=1 runs (clang, ld.lld, llvm-ar, ...): Debian's packages.
LLVM_PACKAGES = ('clang', 'lld', 'llvm')


def kconfig_add(spec: RunSpec) -> List[str]:
    """KCONFIG_ADD's words: each one kunit.py --kconfig_add."""
    return spec.kconfig_add.split()


def kernel_args(spec: RunSpec) -> List[str]:
    """KERNEL_ARGS's words: each one kunit.py --kernel_args, after this run's own."""
    return spec.kernel_args.split()


def make_options(spec: RunSpec) -> List[str]:
    """The make options of the build: MAKE_OPTIONS (gcov), then MAKE_OPTIONS='s words."""
    return [*MAKE_OPTIONS, *spec.make_options.split()]


def make_variable(options: Sequence[str], name: str) -> Optional[str]:
    """The value make's command line @options give @name (the last wins), None if none."""
    found = None
    for o in options:
        key, sep, value = o.partition('=')
        if sep and key == name:
            found = value
    return found


def compiler(options: Sequence[str], cross_compile: str = '') -> str:
    """The C compiler kbuild runs with make @options: CC= given there, else
    clang for LLVM= (there, or in the environment: kbuild reads it from
    either; LLVM=/dir/ and LLVM=-14 as kbuild takes them), else
    <CROSS_COMPILE>gcc. kbuild sets CC itself: an environment's CC counts not."""
    cc = make_variable(options, 'CC')
    if cc:
        return cc
    llvm = make_variable(options, 'LLVM')
    if llvm is None:
        llvm = os.environ.get('LLVM', '')
    if llvm:
        if llvm.endswith('/'):
            return f'{llvm}clang'
        return f'clang{llvm}' if llvm.startswith('-') else 'clang'
    return f'{cross_compile}gcc'


def compiler_version(cc: str) -> str:
    """The first line of `@cc --version` ('' when it cannot be run)."""
    try:
        res = subprocess.run([cc, '--version'], capture_output=True, text=True, check=False,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ''
    return (res.stdout.splitlines() or [''])[0].strip()


LINUX_COMPILER = re.compile(r'^#define LINUX_COMPILER\s+"(.*)"$', re.M)
CC_VERSION_TEXT = re.compile(r'^CONFIG_CC_VERSION_TEXT="(.*)"$', re.M)


def toolchain(build_dir: Path, options: Sequence[str], cross_compile: str = '',
              built: bool = True) -> str:
    """The toolchain of the kernel in @build_dir, for verdict.json's context:
    when it was built (@built), what the kernel says it was built with
    (include/generated/compile.h, as its boot banner: 'gcc (Debian
    12.2.0-14+deb12u1) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40'; or its
    .config's CONFIG_CC_VERSION_TEXT); otherwise, and failing those, the
    first line of the --version of the compiler make @options choose
    (compiler()): a build that failed names the compiler it ran, not the
    one of an older build left there."""
    if built:
        for name, pattern in (('include/generated/compile.h', LINUX_COMPILER),
                              ('.config', CC_VERSION_TEXT)):
            try:
                m = pattern.search((build_dir / name).read_text(errors='replace'))
            except OSError:
                continue
            if m and m.group(1).strip():
                return m.group(1).strip()
    return compiler_version(compiler(options, cross_compile))
