"""`make run`: prepare the tree, build and boot it with kunit.py, judge the result.
`make judge`: the same verdict on a console log captured anywhere.

Every run also yields the coverage of kernel/cpu.c and timekeeping.c: the
kernel profiles those two objects and its initramfs prints the gcov data
after the suites and the user-space test (tools/cpuhpk/gcov.py).

Writes to out/<KVER>[-<CONFIG>]/ (make judge: out/judge/):
  console.log   the whole kernel console (kunit.py's test.log); ISOLATE=: the
                console of each boot, each after a line 'cpuhp-kunit: boot
                <i>/<n> of kunit.py --run_isolated=<suite|test>'
  results.ktap  the KTAP the kernel printed, console prefix removed (ISOLATE=:
                each boot's, one document after the other)
  results.json  kunit.py --json (make run only: kunit.py's own view); when
                kernel lines inside the KTAP derailed kunit.py's parser,
                its parse of the KTAP lines alone (results-ktap-only.*)
                and the derailed one in results-derailed.json
  verdict.json  our verdict: pass/fail, counts, every problem with its category,
                title and key; kernel reports decoded against the run's
                vmlinux (make judge: VMLINUX=) when it has debug info (decode.py)
  junit.xml     one testcase per KUnit case (or parameter), plus one per
                problem of the run as a whole; red in it whenever the verdict is
  kunit.log     what kunit.py printed (config, build, summary)
  coverage.info lcov tracefile of the two files; summary.txt, html/ from it
  kcidb.json    the run for KernelCI's KCIDB (kcidb.py, schema in tools/kcidb/)
Exit status 0 only when the verdict has no problem (verdict.py).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

if __package__ in (None, ''):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = 'cpuhpk'  # noqa: A001  (run as a script)

from cpuhpk import (arch, debian, decode, gcov, hostctl, junit, kcidb, ktap,  # noqa: E402
                    page, reports, states, tree, usertree, verdict)

REPO = Path(__file__).resolve().parents[2]
# Time for kunit.py to configure and build a cold tree on a 2-core machine,
# with a wide margin: the kernel's own run has its own timeout (--timeout).
BUILD_TIMEOUT = 45 * 60
# The CPUs a run boots with (make SMP=): the count make test is judged at.
DEFAULT_SMP = 4
# Profile kernel/cpu.o and kernel/time/timekeeping.o (src/0004, gcov.py).
MAKE_OPTIONS = ('CPUHP_KUNIT_GCOV=y',)
# Kernel arguments: reboot (and so end QEMU, -no-reboot) at once on a panic
# instead of waiting for the timeout.
# suspend.pm_test_delay: the seconds a suspend at a pm_test level busy-waits
# at that level (5 by default), for cpuhp_rollback's real-suspend cases.
# printk.time=0: the user-space suite's lines reach the console without
# printk's timestamp; KUnit's must not carry one either (Debian's config has
# PRINTK_TIME), or cutting the KUnit lines' prefix would cut theirs.
KERNEL_ARGS = ('panic=-1', 'suspend.pm_test_delay=0', 'printk.time=0')
# Seconds kunit.py, make and QEMU get to end after SIGTERM before SIGKILL.
GRACE = 10
EXPECTED_SKIPS = REPO / 'kunit' / 'expected-skips'


def known_failures_path(kver: str) -> Path:
    """The known failures of one kernel series: kunit/known-failures-<KVER>."""
    return REPO / 'kunit' / f'known-failures-{kver}'
# STRICT=1 also runs what is known to wedge a CPU (kunit/cpuhp_sweep_kunit.c).
STRICT_KERNEL_ARGS = ('cpuhp_kunit.sweep_wedging=1',)
COMPILER_ERROR = re.compile(r': (?:fatal )?error: |undefined reference')
# kunit.py's word when the kernel outlived --timeout (its QEMU's TimeoutExpired,
# printed). Not just 'timed out after': with ISOLATE kunit.log holds the
# consoles too, and a kernel message may say that.
KUNIT_PY_TIMEOUT = re.compile(r"Command '.*' timed out after [\d.]+ seconds")
BUILD_ERROR = re.compile(r': (?:fatal )?error: |^ERROR:|Error \d+$|undefined reference')


class Interrupted(Exception):
    """SIGINT, SIGTERM or SIGHUP: the run was stopped from outside."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum: int, frame: Optional[FrameType]) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Ignore Ctrl-C and SIGTERM while children are being stopped.

    A second Ctrl-C must not cut short the wait for kunit.py, make and QEMU
    to end: whatever comes next (reversing a mutant, judging) needs them gone.
    """
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, signal.SIG_IGN) for s in sigs}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def out_dir(kver: str, config: str, fixes: bool = False,
            user: Optional[usertree.Resolved] = None, smp: int = DEFAULT_SMP,
            topology: str = 'flat', arch_name: str = arch.HOST) -> Path:
    """out/<KVER>[-<CONFIG>][-arm64][-smp<N>][-smt][-fixes]; TREE=: out/tree-<name>-<rev>[...] alike.

    -arm64 for another architecture than x86_64, -smp<N> only for another
    CPU count than the default, -smt for two threads per core: the same
    kernel booted otherwise is another run, not a replacement.
    """
    base = f'tree-{user.name}-{user.short}' if user is not None else kver
    name = base if config == 'default' else f'{base}-{config}'
    name += arch.get(arch_name).out_suffix
    if smp != DEFAULT_SMP:
        name += f'-smp{smp}'
    if topology != 'flat':
        name += f'-{topology}'
    return REPO / 'out' / (f'{name}-fixes' if fixes else name)


# The guest's CPU topology (make TOPOLOGY=): flat, one thread per core (one
# socket per CPU, QEMU's default), or smt, one socket of cores with two
# threads each, so that the SMT control has siblings to switch. QEMU's
# default CPU (qemu64, AuthenticAMD family 0xf) shows 6.1 no siblings
# whatever -smp says (neither do +topoext nor -cpu max under TCG): smt
# boots an Intel model, Nehalem (family 6, CPUID leaf 0xb), on both series.
# hotplug: one CPU more possible than present, for physical hot-add and
# hot-remove through QEMU's QMP socket (tools/cpuhpk/hostctl.py). x86 since
# 6.9 counts the MADT's disabled CPUs as hot-pluggable only in a guest of a
# hypervisor it knows (acpi_is_processor_usable()), and it knows no TCG:
# the guest is shown VMware's DMI serial and backdoor port (QEMU's vmport)
# without the CPUID hypervisor bit, which vmware_platform() accepts
# (CONFIG_HYPERVISOR_GUEST; 6.1 counts them anyway).
# The user-space cases plug in one CPU each (QEMU 7.2's TCG aborts at a
# plug after an unplug, so none is pulled out and plugged in again).
# nosmt and nosmt-force: the smt guest booted with SMT disabled on the
# command line (the secondary threads are started once, x86 needs CR4.MCE
# set on each, and stay offline; force: until reboot); nosmt-force also
# brings the CPUs up one by one (cpuhp.parallel=0), as the architectures
# without parallel bring-up do, and asks for the mitigations' nosmt
# (mitigations=auto,nosmt: nothing more once SMT is forced off).
HOTPLUG_SLOTS = 3
TOPOLOGIES = ('flat', 'smt', 'hotplug', 'nosmt', 'nosmt-force')
TOPOLOGY_KERNEL_ARGS: Dict[str, Tuple[str, ...]] = {
    'nosmt': ('nosmt',),
    'nosmt-force': ('nosmt=force', 'mitigations=auto,nosmt', 'cpuhp.parallel=0'),
}


def two_threads(topology: str) -> bool:
    """Does @topology put two threads in each core?"""
    return topology in ('smt', 'nosmt', 'nosmt-force')


def smp_arg(smp: int, topology: str) -> str:
    """QEMU's -smp (and -cpu) for @smp CPUs in @topology."""
    if two_threads(topology):
        return f'{smp},sockets=1,cores={smp // 2},threads=2 -cpu Nehalem'
    if topology == 'hotplug':
        return (f'{smp},maxcpus={smp + HOTPLUG_SLOTS} -cpu qemu64,-hypervisor '
                '-smbios type=1,serial=VMware-cpuhp-kunit')
    return str(smp)


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
KCONFIG_WORD = re.compile(r'^CONFIG_\w+=\S+$')
MAKE_WORD = re.compile(r'^[A-Za-z_]\w*=')
# What kbuild's LLVM=1 runs (clang, ld.lld, llvm-ar, ...): Debian's packages.
LLVM_PACKAGES = ('clang', 'lld', 'llvm')


def knob(args: argparse.Namespace, name: str) -> str:
    """The value of kunit.py knob @name in @args ('' when unset, or when
    @args comes from a caller that has none of them)."""
    return str(getattr(args, name, '') or '')


def kconfig_add(args: argparse.Namespace) -> List[str]:
    """KCONFIG_ADD's words: each one kunit.py --kconfig_add."""
    return knob(args, 'kconfig_add').split()


def kernel_args(args: argparse.Namespace) -> List[str]:
    """KERNEL_ARGS's words: each one kunit.py --kernel_args, after this run's own."""
    return knob(args, 'kernel_args').split()


def make_options(args: argparse.Namespace) -> List[str]:
    """The make options of the build: MAKE_OPTIONS (gcov), then MAKE_OPTIONS='s words."""
    return [*MAKE_OPTIONS, *knob(args, 'make_options').split()]


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


def knob_context(args: argparse.Namespace) -> Dict[str, str]:
    """What verdict.json's context says of the kunit.py knobs that are set."""
    return {name: knob(args, name) for name in KUNIT_PY_FLAGS if knob(args, name)}


def knob_errors(args: argparse.Namespace) -> Optional[str]:
    """Why @args' kunit.py knobs cannot run as given (one line), None when they can."""
    bad = [w for w in kconfig_add(args) if not KCONFIG_WORD.match(w)]
    if bad:
        return (f'KCONFIG_ADD={knob(args, "kconfig_add")}: {bad[0]} is not CONFIG_<NAME>=<value> '
                '(words apart by spaces, CONFIG_X=n to turn one off)')
    bad = [w for w in knob(args, 'make_options').split() if not MAKE_WORD.match(w)]
    if bad:
        return f'MAKE_OPTIONS={knob(args, "make_options")}: {bad[0]} is not X=Y (e.g. LLVM=1)'
    if knob(args, 'filter_action') and not knob(args, 'filter_attr'):
        return (f'FILTER_ACTION={knob(args, "filter_action")} says what becomes of the cases '
                'FILTER_ATTR= leaves out: FILTER_ATTR is empty')
    if knob(args, 'filter_attr'):
        try:
            parse_attr_filter(knob(args, 'filter_attr'))
        except ValueError as e:
            return f'FILTER_ATTR={knob(args, "filter_attr")}: {e}'
    if knob(args, 'isolate') and getattr(args, 'topology', 'flat') == 'hotplug':
        return (f'ISOLATE={knob(args, "isolate")} boots QEMU once per '
                f'{knob(args, "isolate")}: TOPOLOGY=hotplug\'s host control serves one QEMU')
    opts = knob(args, 'make_options').split()
    if 'debian' in str(getattr(args, 'config', '')).split('+') and \
            (make_variable(opts, 'LLVM') is not None or make_variable(opts, 'CC') is not None):
        return (f'MAKE_OPTIONS={knob(args, "make_options")} with CONFIG={args.config}: Debian\'s '
                'configuration is resolved once for gcc and cached without the make options '
                '(tools/cpuhpk/debian.py): another compiler needs its own')
    return None


def tree_errors(t: tree.Tree, args: argparse.Namespace) -> Optional[str]:
    """Why the kernel @t or its kunit.py cannot do what @args' knobs ask (one line).

    Each knob needs its kunit.py flag (KUNIT_PY_FLAGS): 6.12's and 6.1's
    kunit.py have all of them (Debian's 6.1.192 tools too: its kunit.py
    takes --filter and --filter_action), a TREE= of an older kernel may
    not. FILTER_ATTR needs the kernel's KUnit attributes
    (lib/kunit/attributes.c, since 6.6): 6.1's kunit.py would hand
    kunit.filter= on to a kernel that ignores it and runs every case.
    ISOLATE needs the kernel to list its cases (kunit.action=list, 5.15).
    """
    try:
        source = t.kunit_py.read_text(errors='replace')
    except OSError:
        source = ''
    for name, flag in KUNIT_PY_FLAGS.items():
        if knob(args, name) and f"'{flag}'" not in source:
            return (f'{KNOB_NAMES[name]}={knob(args, name)}: the kunit.py of linux {t.version} '
                    f'has no {flag}')
    if knob(args, 'filter_attr') and not (t.path / 'lib' / 'kunit' / 'attributes.c').is_file():
        return (f'FILTER_ATTR={knob(args, "filter_attr")}: linux {t.version} has no KUnit test '
                'attributes (lib/kunit/attributes.c, since 6.6): nothing to filter on')
    if knob(args, 'isolate'):
        try:
            executor = (t.path / 'lib' / 'kunit' / 'executor.c').read_text(errors='replace')
        except OSError:
            executor = ''
        if '"list"' not in executor:
            return (f'ISOLATE={knob(args, "isolate")}: linux {t.version}\'s KUnit cannot list '
                    'its cases (kunit.action=list), which kunit.py --run_isolated boots first')
    return None


# --- KUnit's test attributes (FILTER_ATTR=) -----------------------------------
#
# kunit.py --filter hands the filter to the kernel (kunit.filter=), which
# leaves out the cases whose attributes do not pass it (with
# --filter_action=skip: runs them as skipped, without a reason), and a
# suite left without a case altogether. The kernel prints nothing of the
# cases it leaves out, so what the run asks for is worked out here, as
# lib/kunit/attributes.c (6.12) does it, from what the kunit/ sources give
# each case and suite: speed (KUNIT_CASE_SLOW(), a .speed in
# KUNIT_CASE_ATTR()'s or the suite's attributes; unset: normal) and
# is_init (kunit_test_init_section_suites()). module (KBUILD_MODNAME, from
# the kernel's Makefiles) is not worked out: a filter on it is refused.

SPEEDS = ('unset', 'very_slow', 'slow', 'normal')     # enum kunit_speed, in order
ATTR_OPS = ('<=', '>=', '!=', '<', '>', '=')
CASE_CALL = re.compile(r'\b(KUNIT_CASE\w*)\(\s*(\w+)')
SPEED_SET = re.compile(r'\.speed\s*=\s*KUNIT_SPEED_(\w+)')
INIT_SUITES = re.compile(r'\bkunit_test_init_section_suites?\s*\(([^;]*)\)\s*;')


def parse_attr_filter(text: str) -> List[Tuple[str, str, str]]:
    """FILTER_ATTR as the kernel reads it: (attribute, operation, value) per
    ','-separated filter, all of which a case must pass. ValueError for what
    the kernel would refuse (it then runs no case at all) or this harness
    cannot work out (module)."""
    out: List[Tuple[str, str, str]] = []
    for part in (p.strip() for p in text.split(',')):
        if not part:
            continue
        at = next((i for i, c in enumerate(part) if c in '<>!='), -1)
        if at <= 0:
            raise ValueError(f'{part!r}: no attribute and operation (e.g. speed>slow)')
        name = part[:at]
        op = next(o for o in ATTR_OPS if part[at:].startswith(o)) \
            if any(part[at:].startswith(o) for o in ATTR_OPS) else ''
        value = part[at + len(op):]
        if not op or not value or any(c in '<>!=' for c in value) or ' ' in part:
            raise ValueError(f'{part!r}: expected <attribute><op><value>, op one of '
                             + ' '.join(ATTR_OPS))
        if name == 'speed':
            if value not in SPEEDS:
                raise ValueError(f'{part!r}: speed is one of {", ".join(SPEEDS)}')
        elif name == 'is_init':
            if value not in ('true', 'false'):
                raise ValueError(f'{part!r}: is_init is true or false')
        elif name == 'module':
            raise ValueError(f'{part!r}: the harness does not work out the cases a module '
                             'filter leaves out; choose suites with FILTER=')
        else:
            raise ValueError(f'{part!r}: KUnit has no attribute {name!r} '
                             '(speed, module, is_init)')
        out.append((name, op, value))
    if not out:
        raise ValueError('no filter')
    return out


def _int_filter(val: int, op: str, want: int) -> bool:
    """lib/kunit/attributes.c's int_filter()."""
    return {'<=': val <= want, '>=': val >= want, '!=': val != want, '<': val < want,
            '>': val > want, '=': val == want}[op]


def declared_attributes(kunit_dir: Path) -> Dict[str, Tuple[int, bool, Dict[str, int]]]:
    """suite -> (its speed, is_init, case -> its speed), speeds as indices of
    SPEEDS (0: unset), from the kunit/*_kunit.c sources (verdict.declared_cases()'s
    suites and cases)."""
    out: Dict[str, Tuple[int, bool, Dict[str, int]]] = {}
    for src in sorted(kunit_dir.glob('*_kunit.c')):
        text = src.read_text(errors='replace')
        arrays: Dict[str, Dict[str, int]] = {}
        for m in verdict.CASE_ARRAY.finditer(text):
            body = m.group(2)
            cases: Dict[str, int] = {}
            calls = list(CASE_CALL.finditer(body))
            for i, call in enumerate(calls):
                args_text = body[call.end():calls[i + 1].start() if i + 1 < len(calls) else None]
                speed = SPEED_SET.search(args_text) if 'ATTR' in call.group(1) else None
                cases[call.group(2)] = (SPEEDS.index('slow') if call.group(1).endswith('_SLOW')
                                        else _speed(speed.group(1)) if speed else 0)
            arrays[m.group(1)] = cases
        init_vars = {v.strip().lstrip('&') for m in INIT_SUITES.finditer(text)
                     for v in m.group(1).split(',')}
        for m in re.finditer(r'struct\s+kunit_suite\s+(\w+)\s*=\s*\{(.*?)\};', text, re.S):
            name = verdict.SUITE_NAME.search(m.group(2))
            cases_of = verdict.SUITE_CASES.search(m.group(2))
            if name and cases_of and cases_of.group(1) in arrays:
                speed = SPEED_SET.search(m.group(2))
                out[name.group(1)] = (_speed(speed.group(1)) if speed else 0,
                                      m.group(1) in init_vars, arrays[cases_of.group(1)])
    return out


def _speed(enum_suffix: str) -> int:
    """The index in SPEEDS of KUNIT_SPEED_<@enum_suffix> (NORMAL: normal)."""
    name = enum_suffix.lower()
    return SPEEDS.index(name) if name in SPEEDS else 0


def attribute_passes(filters: Sequence[Tuple[str, str, str]], suite_speed: int,
                     is_init: bool, case_speed: int) -> bool:
    """Whether a case passes every filter, as kunit_filter_attr_tests() decides:
    the case's value when set, else its suite's, else the attribute's default
    (speed: normal; is_init: false)."""
    for name, op, value in filters:
        if name == 'speed':
            val = case_speed or suite_speed or SPEEDS.index('normal')
            ok = _int_filter(val, op, SPEEDS.index(value))
        else:
            ok = _int_filter(int(is_init), op, int(value == 'true'))
        if not ok:
            return False
    return True


def attribute_left_out(cases: Dict[str, List[str]], filter_attr: str,
                       kunit_dir: Optional[Path] = None) -> Dict[str, List[str]]:
    """The cases of @cases (suite -> cases) that FILTER_ATTR=@filter_attr
    leaves out. A suite kunit/ does not declare (the user-space suite) has
    no attributes: the filter does not apply to it."""
    if not filter_attr:
        return {}
    filters = parse_attr_filter(filter_attr)
    declared = declared_attributes(kunit_dir or REPO / 'kunit')
    out: Dict[str, List[str]] = {}
    for suite, names in cases.items():
        if suite not in declared:
            continue
        speed, is_init, case_speeds = declared[suite]
        gone = [c for c in names if not attribute_passes(filters, speed, is_init,
                                                         case_speeds.get(c, 0))]
        if gone:
            out[suite] = gone
    return out


def apply_attribute_filter(exp: verdict.Expectations, args: argparse.Namespace) -> List[str]:
    """Narrow @exp to what FILTER_ATTR leaves in; the suite.case names it
    leaves out. Without FILTER_ACTION=skip those are not asked for (the
    kernel never runs them, nor a suite it leaves without a case); with it
    they are, as skipped without a reason (accept_attribute_skips())."""
    if exp.cases is None or not knob(args, 'filter_attr'):
        return []
    gone = attribute_left_out(exp.cases, knob(args, 'filter_attr'))
    if knob(args, 'filter_action') != 'skip':
        kept = {s: [c for c in cs if c not in gone.get(s, ())] for s, cs in exp.cases.items()}
        exp.cases = {s: cs for s, cs in kept.items() if cs}
    return [f'{s}.{c}' for s, cs in gone.items() for c in cs]


def accept_attribute_skips(v: verdict.Verdict, left_out: Sequence[str],
                           context: Dict[str, str]) -> None:
    """FILTER_ACTION=skip: the cases FILTER_ATTR leaves out, printed as
    skipped without a reason (6.12's KUnit gives them none), are expected."""
    if not left_out:
        return
    names = set(left_out)
    why = (f'left out by FILTER_ATTR={context.get("filter_attr", "")} '
           '(FILTER_ACTION=skip)')
    for s in v.skips:
        if s.name in names and not s.reason:
            s.expected, s.why = True, why
    v.problems = [p for p in v.problems if not (
        p.category == 'unexpected-skip' and p.name in names
        and p.message == 'skipped without a stated reason')]


def user_spec(args: argparse.Namespace) -> Optional[usertree.Spec]:
    """TREE=, REV=, LOCAL=, SERIES= of @args; None without TREE=."""
    if not getattr(args, 'tree', None):
        return None
    return usertree.Spec(Path(args.tree), args.rev or 'HEAD', bool(args.local),
                         Path(args.series) if args.series else None)


def resolve_user(args: argparse.Namespace) -> Optional[usertree.Resolved]:
    """Read TREE= (and set args.kver to the series chosen for it); None without TREE=."""
    spec = user_spec(args)
    if spec is None:
        return None
    user = usertree.resolve(spec, REPO)
    args.kver = user.kver
    return user


def tree_context(user: Optional[usertree.Resolved]) -> Dict[str, str]:
    """What a TREE= run adds to verdict.json's context."""
    if user is None:
        return {}
    return {'tree': str(user.spec.path), 'rev': user.sha, 'rev_subject': user.subject,
            'tree_version': user.version, 'series': user.series_label(),
            'local': user.local_note}


def prepare_tree(args: argparse.Namespace, user: Optional[usertree.Resolved]) -> tree.Tree:
    """The tree a run builds: the Debian one of args.kver, or the user's (TREE=)."""
    if user is not None:
        return usertree.prepare(user, REPO, bool(args.fixes))
    return tree.prepare(args.kver, REPO, bool(args.fixes))


def build_dir_of(t: tree.Tree, config: str, arch_name: str = arch.HOST) -> Path:
    """The cached build directory of @config's kernel for @arch_name."""
    return tree.cache_root() / f'build-{t.build_key}-{config}{arch.get(arch_name).out_suffix}'


# A build directory remembers the inputs of kunit.py's last build there
# (BUILD_STAMP): a run whose inputs are the same boots that kernel again with
# kunit.py exec instead of kunit.py run, whose olddefconfig and make take
# 10-35 s on x86 even when nothing changed. That is 18 of make test's 26
# boots: each after the first of make coverage and of fixes-test, the SMP=2
# runs.
BUILD_STAMP = 'cpuhp-kunit-build.json'
# The environment kbuild reads besides its command line.
KBUILD_ENV = ('ARCH', 'CROSS_COMPILE', 'CC', 'LD', 'AR', 'HOSTCC', 'HOSTCXX', 'KCFLAGS',
              'KCPPFLAGS', 'KAFLAGS', 'KRUSTFLAGS', 'LLVM', 'LLVM_IAS', 'LOCALVERSION')
# A tree with more files git does not track than this (a user's tree built
# in place) always builds: reading them all would cost what it saves.
UNTRACKED_MAX = 1000


def build_inputs(t: tree.Tree, frags: Sequence[Path], qemu_config: Path,
                 a: arch.Arch, options: Sequence[str] = MAKE_OPTIONS,
                 kconfig_lines: Sequence[str] = ()) -> Optional[str]:
    """A digest of what kunit.py's build of @t reads: the tree (its commit,
    its changes and the files git does not track, ignored ones too, content
    and all), the kconfigs and the --kconfig_add lines (KCONFIG_ADD), the
    --qemu_config (its kconfig lines), the make options (MAKE_OPTIONS), the
    version of the compiler they choose (compiler(): clang for LLVM=1) and
    kbuild's environment. None when the tree is not a git tree or has more
    than UNTRACKED_MAX such files: then every run builds. What only the boot
    reads (KERNEL_ARGS, QEMU_ARGS, ISOLATE, FILTER_ATTR) is not in it: the
    same kernel boots again with them."""
    def git_bytes(*argv: str) -> Optional[bytes]:
        res = subprocess.run(['git', '-C', str(t.path), *argv], capture_output=True, check=False)
        return res.stdout if res.returncode == 0 else None

    head = git_bytes('rev-parse', 'HEAD')
    diff = git_bytes('diff', '--binary', 'HEAD')
    # Ignored files too: Debian's .gitignore ignores every top-level
    # directory, so the kunit/ sources tree.install_kunit() copies in are
    # ignored files of the tree.
    untracked = git_bytes('ls-files', '--others', '-z')
    if head is None or diff is None or untracked is None:
        return None
    rels = sorted(r for r in untracked.decode(errors='surrogateescape').split('\0') if r)
    if len(rels) > UNTRACKED_MAX:
        return None
    try:
        cc = subprocess.run([compiler(options, a.cross_compile or ''), '--version'],
                            capture_output=True, text=True, check=False).stdout
    except OSError:
        cc = ''
    # The same list as before KCONFIG_ADD existed when it is empty: a build
    # directory stamped then is reused.
    rest = json.dumps([head.decode().strip(), hashlib.sha256(diff).hexdigest(), rels,
                       [str(f) for f in frags], list(options), a.name, a.cross_compile or '',
                       cc, sorted((k, v) for k, v in os.environ.items()
                                  if k in KBUILD_ENV or k.startswith('KBUILD_'))]
                      + ([list(kconfig_lines)] if kconfig_lines else []))
    files = [t.path / r for r in rels if (t.path / r).is_file()]
    return tree.fingerprint([*frags, qemu_config, *files], rest)


def run_build_inputs(t: tree.Tree, frags: Sequence[Path], qemu_config: Path, a: arch.Arch,
                     args: argparse.Namespace) -> Optional[str]:
    """build_inputs() of a make run with @args: its make options and kconfig lines."""
    return build_inputs(t, frags, qemu_config, a, make_options(args), kconfig_add(args))


def built_kernel(build_dir: Path) -> Optional[List[Any]]:
    """What tells the kernel in @build_dir apart from any other build there:
    vmlinux's size and modification time (any build that relinks it, ours or
    not, changes them) and the .config."""
    try:
        st = (build_dir / 'vmlinux').stat()
        config = (build_dir / '.config').read_bytes()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, hashlib.sha256(config).hexdigest()]


def reusable_build(build_dir: Path, inputs: Optional[str]) -> bool:
    """Whether @build_dir holds a kernel kunit.py built from @inputs, untouched since."""
    if inputs is None:
        return False
    try:
        seen = json.loads((build_dir / BUILD_STAMP).read_text())
    except (OSError, ValueError):
        return False
    kernel = built_kernel(build_dir)
    return kernel is not None and seen == {'inputs': inputs, 'kernel': kernel}


def forget_build(build_dir: Path) -> None:
    """Before a build: a build that fails or is stopped leaves no stamp behind."""
    (build_dir / BUILD_STAMP).unlink(missing_ok=True)


def remember_build(build_dir: Path, inputs: Optional[str]) -> None:
    """After kunit.py built @build_dir from @inputs (the kernel started)."""
    kernel = built_kernel(build_dir)
    if inputs is not None and kernel is not None:
        (build_dir / BUILD_STAMP).write_text(json.dumps({'inputs': inputs, 'kernel': kernel}))


def fragment(config: str) -> Path:
    path = REPO / 'kconfigs' / f'{config}.config'
    if not config or not path.is_file():
        known = ' '.join(sorted(p.stem for p in (REPO / 'kconfigs').glob('*.config')))
        raise tree.PrepareError(f'no kconfigs/{config}.config (known: {known}; '
                                'CONFIG=a+b combines fragments)')
    return path


def fragments(config: str, kver: str, arch_name: str = arch.HOST) -> List[Path]:
    """The kconfigs/ fragments of CONFIG=@config on series @kver and @arch_name, in order.

    Every kernel builds on default.config, or on debian.config when @config
    names debian (Debian's own configuration, resolved by debian.base());
    'a+b' adds a's fragment, then b's (CONFIG=rt+debug: PREEMPT_RT with
    lockdep). kconfigs/<KVER>/<name>.config, when it exists, follows
    <name>'s: what only that series has (6.12's buddy hard-lockup
    detector), as mutants/<KVER>/ does for mutants; then
    kconfigs/<ARCH>/<name>.config: what only that architecture has (x86's
    hypervisor guest support).
    """
    names = config.split('+')
    first = 'debian' if 'debian' in names else 'default'
    out: List[Path] = []
    for name in [first] + [c for c in names if c not in ('default', 'debian')]:
        out.append(fragment(name))
        for sub in (kver, arch_name):
            extra = REPO / 'kconfigs' / sub / f'{name}.config'
            if extra.is_file():
                out.append(extra)
    return out


def kernel_fragments(t: tree.Tree, config: str, arch_name: str = arch.HOST,
                     options: Sequence[str] = MAKE_OPTIONS) -> List[Path]:
    """fragments(), with Debian's resolved configuration first for CONFIG=debian."""
    frags = fragments(config, t.kver, arch_name)
    if 'debian' in config.split('+'):
        return [debian.base(t, frags, options, arch.get(arch_name)), *frags]
    return frags


def expectations(filter_glob: str, context: Dict[str, str], strict: bool = False,
                 userspace: bool = False) -> verdict.Expectations:
    """What a run of the kunit/ suites with @filter_glob must show."""
    try:
        skips = verdict.read_expected_skips(EXPECTED_SKIPS)
        known = verdict.read_known_failures(known_failures_path(context.get('kver', '')))
    except ValueError as e:
        raise tree.PrepareError(f'kunit/{e}') from None
    return verdict.Expectations(
        cases=verdict.filtered(verdict.declared_cases(REPO / 'kunit', userspace), filter_glob),
        skips=skips, known=known, strict=strict, context=context)


def stress_kernel_args(args: argparse.Namespace) -> List[str]:
    """cpuhp_stress's seed and length, when set (0: the suite's own)."""
    out = []
    if getattr(args, 'seed', 0):
        out.append(f'cpuhp_kunit.stress_seed={args.seed}')
    if getattr(args, 'stress_ops', 0):
        out.append(f'cpuhp_kunit.stress_ops={args.stress_ops}')
    return out


def kunit_command(t: tree.Tree, args: argparse.Namespace, build_dir: Path,
                  out: Path, qemu_config: Path,
                  control: Optional[hostctl.Control] = None,
                  frags: Optional[List[Path]] = None, build: bool = True) -> List[str]:
    """kunit.py run for @args; @qemu_config boots the initramfs (gcov.guest()),
    @control serves the guest's hot-add requests (TOPOLOGY=hotplug), @frags
    are the kconfigs (default: kernel_fragments()); without @build kunit.py
    exec: the kernel built before (reusable_build())."""
    a = arch.get(getattr(args, 'arch', arch.HOST))
    qemu = f'-smp {smp_arg(args.smp, getattr(args, "topology", "flat"))}'
    if control is not None:
        qemu += f' {control.qemu_args()}'
    isolate = knob(args, 'isolate')
    frags = frags or kernel_fragments(t, args.config, a.name, make_options(args))
    cmd = [sys.executable, str(t.kunit_py), 'run' if build else 'exec',
           *[f'--kunitconfig={f}' for f in frags],
           f'--build_dir={build_dir}',
           *([f'--jobs={args.jobs}'] if build else []), f'--timeout={args.timeout}',
           f'--qemu_args={qemu}']
    if knob(args, 'qemu_args'):
        # Split by kunit.py as a shell would (shlex), after this run's own.
        cmd.append(f'--qemu_args={knob(args, "qemu_args")}')
    if isolate:
        # One boot per suite or case; each boot's console printed whole
        # (--raw_output=all) is the only place all of them are kept:
        # kunit.py's test.log and --json hold its last boot alone.
        cmd += [f'--run_isolated={isolate}', '--raw_output=all']
    else:
        cmd.append(f'--json={out / "results.json"}')
    cmd += [f'--make_options={o}' for o in make_options(args)]
    cmd += [f'--kconfig_add={w}' for w in kconfig_add(args)]
    cmd.append(f'--qemu_config={qemu_config}')
    if a.cross_compile:
        cmd.append(f'--cross_compile={a.cross_compile}')
    cmd += [f'--kernel_args={k}' for k in KERNEL_ARGS]
    cmd += [f'--kernel_args={k}'
            for k in TOPOLOGY_KERNEL_ARGS.get(getattr(args, 'topology', 'flat'), ())]
    if control is not None:
        cmd.append(f'--kernel_args={hostctl.KERNEL_ARG}')
    if args.strict:
        cmd += [f'--kernel_args={k}' for k in STRICT_KERNEL_ARGS]
    cmd += [f'--kernel_args={k}' for k in stress_kernel_args(args)]
    cmd += [f'--kernel_args={k}' for k in kernel_args(args)]
    if knob(args, 'filter_attr'):
        cmd.append(f'--filter={knob(args, "filter_attr")}')
    if knob(args, 'filter_action'):
        cmd.append(f'--filter_action={knob(args, "filter_action")}')
    if args.filter:
        cmd.append(args.filter)
    return cmd


def coverage_report(out: Path, build_dir: Path, src: Path, kver: str,
                    v: verdict.Verdict, a: Optional[arch.Arch] = None,
                    isolate: str = '') -> verdict.Verdict:
    """out/coverage.info and its reports; no gcov data is red when nothing else is.
    @isolate: the gcov data of every boot of console.log, added up."""
    try:
        segments = None
        if isolate and (out / 'console.log').is_file():
            segments = boot_lines(ktap.read_console(out / 'console.log').lines)
        gcov.report(out, build_dir, src, kver, a, segments)
    except tree.PrepareError as e:
        if not v.ok:
            tree.log(f'no coverage report: {e}')
            return v
        return add_problems(out, [verdict.Problem('coverage', '', str(e))])
    tree.log(f'coverage: {out / "summary.txt"}, {out / "html" / "index.html"}')
    return v


def stop_group(proc: 'subprocess.Popen[str]') -> None:
    """End kunit.py and everything it started (make, QEMU): TERM, then KILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(GRACE)
            if sig == signal.SIGTERM:
                # The leader is gone; its group may not be.
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def run_kunit(cmd: List[str], cwd: Path, log_path: Path, seconds: float,
              echo: Optional[Callable[[str], bool]] = None
              ) -> Tuple[Optional[int], Optional[float]]:
    """Run kunit.py, teeing its output: (exit status, or None and the seconds
    after which it was killed). Every line goes to @log_path; to the
    terminal those @echo takes (default: every line).

    kunit.py gets a process group of its own so that all of it can be ended
    at once; a signal to this process (Ctrl-C, SIGTERM) ends that group too
    before it propagates.
    """
    started = time.monotonic()
    with open(log_path, 'w') as log, subprocess.Popen(
            cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            errors='replace', start_new_session=True) as proc:
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            stop_group(proc)

        timer = threading.Timer(seconds, kill)
        timer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if echo is None or echo(line):
                    sys.stdout.write(line)
                log.write(line)
            rc = proc.wait()
        except BaseException:
            with signals_deferred():
                stop_group(proc)
            raise
        finally:
            timer.cancel()
        if killed.is_set():
            return None, time.monotonic() - started
        return rc, None


# --- ISOLATE=: one boot per suite or per case ----------------------------------
#
# kunit.py --run_isolated boots the kernel once to list the cases
# (kunit.action=list; the initramfs then powers off at once, gcov.INIT),
# then once per suite or case with kunit.filter_glob naming it. Each boot
# opens test.log anew and --json is written anew after each boot: both hold
# the last boot alone. With --raw_output=all kunit.py prints each boot's
# console whole on its standard output, after its 'Starting KUnit Kernel
# (i/n)...' line and the QEMU command line: this run takes console.log from
# there (kunit.log), each boot after a line of its own (BOOT_MARK). Each
# boot is judged as a console of its own (its kernel reports on its own
# cases), their KTAP trees are joined into one (merge_suites()) and that is
# judged against what the run asked for, as a single boot's tree is;
# kunit.py's parse of each boot is joined the same way into results.json,
# and the coverage of the boots is added up (gcov.merge_boots()). The
# user-space suite runs in one boot only (gcov.guest(anchor=)).

# kunit.py's own lines: print_with_timestamp()'s '[HH:MM:SS] '.
KUNIT_PY_STAMPED = re.compile(r'^\[\d\d:\d\d:\d\d\] ')
KUNIT_PY_BOOT = re.compile(r'^\[\d\d:\d\d:\d\d\] Starting KUnit Kernel \((\d+)/(\d+)\)\.\.\.$')
BOOT_MARK = re.compile(r'^cpuhp-kunit: boot (\d+)/(\d+) of kunit\.py --run_isolated=(\w+)$')
# 6.1's kunit.py runs stty after each boot, which complains on its standard
# error (kunit.py's output here) when that is not a terminal: not the console's.
KUNIT_PY_STTY = re.compile(r"^stty: 'standard input': ")
# A suite's (top-level) result line in a boot's console.
SUITE_RESULT = re.compile(r'^(not )?ok \d+ \S')
# The problems judge_ktap() finds in a KTAP tree: recomputed on the joined one.
KTAP_CATEGORIES = ('failed', 'crashed', 'missing', 'unexpected-skip')


def boot_mark(n: int, total: int, isolate: str) -> str:
    return f'cpuhp-kunit: boot {n}/{total} of kunit.py --run_isolated={isolate}'


class IsolatedEcho:
    """What of kunit.py --raw_output=all reaches the terminal: kunit.py's own
    lines (the build, 'Starting KUnit Kernel (i/n)...', the time) and each
    boot's suite results; the consoles go to kunit.log (and console.log)."""

    def __init__(self) -> None:
        self.booting = False

    def __call__(self, line: str) -> bool:
        if KUNIT_PY_BOOT.match(line):
            self.booting = True
            return True
        return not self.booting or bool(KUNIT_PY_STAMPED.match(line)
                                        or SUITE_RESULT.match(line))


def isolated_console(kunit_log: str, isolate: str) -> List[str]:
    """console.log of an ISOLATE= run: each boot's console as kunit.py
    --raw_output=all printed it in @kunit_log, after its BOOT_MARK line; ends
    at kunit.py's next own line. The QEMU command line kunit.py prints first
    ('Running tests with:', '$ qemu-system-...') is left out, and so is
    stty's complaint (KUNIT_PY_STTY); the listing boot before 'Starting
    KUnit Kernel (1/n)' printed nothing. [] when no boot started (the build
    failed)."""
    out: List[str] = []
    inside, head = False, 0
    for line in kunit_log.splitlines():
        m = KUNIT_PY_BOOT.match(line)
        if m:
            out.append(boot_mark(int(m.group(1)), int(m.group(2)), isolate))
            inside, head = True, 2
            continue
        if not inside:
            continue
        if KUNIT_PY_STAMPED.match(line):
            inside = False
            continue
        if head == 2 and line == 'Running tests with:':
            head = 1
            continue
        if head == 1 and line.startswith('$ '):
            head = 0
            continue
        head = 0
        if not KUNIT_PY_STTY.match(line):
            out.append(line)
    return out


def boots(lines: Sequence[str]) -> List[Tuple[int, int]]:
    """(first, end) line indices of each boot of an ISOLATE= console: after
    each BOOT_MARK line; in a console without them (joined elsewhere), from
    each kernel boot banner on (the first boot from the first line)."""
    marks = [i for i, ln in enumerate(lines) if BOOT_MARK.match(ln)]
    if marks:
        return [(m + 1, end) for m, end in zip(marks, marks[1:] + [len(lines)])]
    starts = [i for i, ln in enumerate(lines) if reports.BOOT_BANNER.match(ln)] or [0]
    starts[0] = 0
    return list(zip(starts, starts[1:] + [len(lines)]))


def boot_lines(lines: Sequence[str]) -> List[List[str]]:
    """The lines of each boot of an ISOLATE= console (boots())."""
    return [list(lines[a:b]) for a, b in boots(lines)]


def _merged_status(a: ktap.Status, b: ktap.Status) -> ktap.Status:
    """The result of a suite run in two boots: crashed or failed if either
    was, skipped if both were, passed otherwise."""
    for worst in (ktap.Status.CRASHED, ktap.Status.FAIL, ktap.Status.EMPTY):
        if worst in (a, b):
            return worst
    return ktap.Status.SKIP if a is b is ktap.Status.SKIP else ktap.Status.PASS


def merge_suites(roots: Sequence[ktap.Test]) -> ktap.Test:
    """One KTAP tree of the trees of several boots: their suites in order,
    those of one name (ISOLATE=test: a boot per case) joined into one, with
    their cases in order and KUnit's count lines added up. The cases' line
    indices stay those of their own boot's KTAP (attribution is done per
    boot)."""
    merged = ktap.Test(name='', status=ktap.Status.PASS)
    seen: Dict[str, ktap.Test] = {}
    sums: Dict[str, List[int]] = {}
    for root in roots:
        merged.add_diagnostics(root.diagnostics)
        for suite in root.subtests:
            stats = next((m for m in map(ktap.STATS.match, suite.counted)
                          if m and m.group(1) == suite.name), None)
            if stats:
                add = [int(stats.group(k)) for k in (2, 3, 4, 5)]
                old = sums.get(suite.name, [0, 0, 0, 0])
                sums[suite.name] = [x + y for x, y in zip(old, add)]
            prev = seen.get(suite.name) if suite.name and not suite.name.startswith('#') \
                else None
            if prev is None:
                copy = dataclasses.replace(suite, subtests=list(suite.subtests),
                                           diagnostics=list(suite.diagnostics),
                                           counted=list(suite.counted))
                merged.subtests.append(copy)
                if suite.name:
                    seen[suite.name] = copy
                continue
            prev.subtests += suite.subtests
            prev.status = _merged_status(prev.status, suite.status)
            prev.reason = prev.reason or suite.reason
            if suite.plan is not None:
                prev.plan = (prev.plan or 0) + suite.plan
            prev.add_diagnostics(suite.diagnostics)
            prev.cut += suite.cut
    for name, suite in seen.items():
        if name in sums:
            p, f, sk, total = sums[name]
            line = f'# {name}: pass:{p} fail:{f} skip:{sk} total:{total}'
            rest = [c for c in suite.counted
                    if not ((m := ktap.STATS.match(c)) and m.group(1) == name)]
            suite.counted = [line, *rest]
    merged.plan = len(merged.subtests)
    return merged


def _shift_console_line(p: verdict.Problem, offset: int) -> None:
    """A problem of one boot that names its console line ('console line N:'
    ...) names it in the whole console.log."""
    m = re.match(r'console line (\d+)(:.*)', p.message, re.S)
    if not m or not offset:
        return
    old = p.message
    p.message = f'console line {int(m.group(1)) + offset}{m.group(2)}'
    if p.title == old:
        p.title = p.message
    p.key = verdict.key_of(p.category, p.name, p.message, p.title)


def judge_isolated(console: ktap.Console,
                   exp: verdict.Expectations) -> Tuple[ktap.Test, verdict.Verdict, List[str]]:
    """The verdict of an ISOLATE= console, as of a single boot's: (the joined
    KTAP tree, the verdict, the KTAP lines of every boot one after the other).

    Each boot is judged as a console of its own (verdict.judge_console():
    its kernel reports pinned on its own cases, a reboot within it); of
    that, the kernel's reports, reboots and lockdep are kept. The results
    are judged on the joined tree (merge_suites()) against @exp, with the
    known failures, as judge_console() judges one boot's.
    """
    per_boot = dataclasses.replace(exp, cases=None, known=())
    roots: List[ktap.Test] = []
    found: List[verdict.Problem] = []
    lines: List[str] = []
    for first, end in boots(console.lines):
        segment = console.lines[first:end]
        _, root, bv = verdict.judge_console(ktap.Console(lines=segment), per_boot)
        roots.append(root)
        lines += ktap.extract(segment)
        for p in bv.problems:
            if p.category not in KTAP_CATEGORIES:
                _shift_console_line(p, first)
                found.append(p)
    root = merge_suites(roots)
    v = verdict.judge_ktap(root, exp)
    v.problems += found
    if console.truncated:
        v.add('console', '', f'the console log is larger than {ktap.MAX_CONSOLE >> 20} MiB: '
              'only its beginning was judged')
    verdict.apply_known(v, exp)
    verdict.quote_once(v.problems)
    verdict.quote_once(v.known)
    return root, v, lines


def run_root(out: Path, context: Dict[str, str]) -> ktap.Test:
    """The KTAP tree of the run in @out as judge() made it (its junit.xml's)."""
    console = out / 'console.log'
    if context.get('isolate') and console.is_file():
        lines = ktap.read_console(console).lines
        return merge_suites([ktap.parse(ktap.extract(b)) for b in boot_lines(lines)])
    ktap_path = out / 'results.ktap'
    return ktap.parse(ktap.read_console(ktap_path).lines) if ktap_path.is_file() \
        else ktap.Test(name='', status=ktap.Status.PASS)


def isolated_boots(exp: verdict.Expectations, isolate: str) -> int:
    """How many boots kunit.py --run_isolated=@isolate makes for @exp, the
    listing boot left out: one per KUnit suite, or per KUnit case."""
    kunit = {s: c for s, c in (exp.cases or {}).items() if s != gcov.SYSFS_SUITE}
    return len(kunit) if isolate == 'suite' else sum(map(len, kunit.values()))


def isolation_anchor(exp: verdict.Expectations, isolate: str) -> str:
    """The kunit.filter_glob of the boot the user-space suite runs in
    (gcov.guest(anchor=)): the first KUnit suite by name, or its first case."""
    kunit = sorted(s for s in (exp.cases or {}) if s != gcov.SYSFS_SUITE)
    if not isolate or not kunit or exp.cases is None:
        return ''
    suite = kunit[0]
    return suite if isolate == 'suite' else f'{suite}.{exp.cases[suite][0]}'


def merge_kunit_json(groups: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """kunit.py's --json of several boots as one: the first's fields, the
    suites of all, those of one name joined (ISOLATE=test)."""
    if not groups:
        return {}
    out = dict(groups[0])
    out['sub_groups'], out['test_cases'] = [], []
    by_name: Dict[str, Dict[str, Any]] = {}
    for g in groups:
        out['test_cases'] += [c for c in g.get('test_cases') or [] if isinstance(c, dict)]
        for sub in g.get('sub_groups') or []:
            if not isinstance(sub, dict):
                continue
            prev = by_name.get(str(sub.get('name', '')))
            if prev is None:
                copy = dict(sub, sub_groups=list(sub.get('sub_groups') or []),
                            test_cases=list(sub.get('test_cases') or []))
                out['sub_groups'].append(copy)
                by_name[str(sub.get('name', ''))] = copy
            else:
                prev['sub_groups'] += list(sub.get('sub_groups') or [])
                prev['test_cases'] += list(sub.get('test_cases') or [])
    return out


def kunit_py_parse_boots(kunit_py: Path, out: Path, segments: Sequence[Sequence[str]],
                         dest: Path, ktap_only: bool = False) -> bool:
    """kunit.py parse --json of each boot's console (@ktap_only: of its KTAP
    lines alone, as kunit_py_derailed()), joined into @dest
    (merge_kunit_json()). False when kunit.py gave no JSON for a boot."""
    groups: List[Dict[str, Any]] = []
    work = out / 'kunit-py-boots'
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        for n, segment in enumerate(segments, 1):
            lines = list(segment)
            if ktap_only:
                lines = [ln for ln in kernel_lines_in_ktap(lines)[0] if KTAP_LIKE.match(ln)]
            console, parsed = work / f'boot{n}.log', work / f'boot{n}.json'
            console.write_text(''.join(f'{ln}\n' for ln in lines))
            try:
                subprocess.run([sys.executable, str(kunit_py), 'parse', f'--json={parsed}',
                                str(console)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=REPARSE_TIMEOUT, check=False)
                data = json.loads(parsed.read_text())
            except (OSError, ValueError, subprocess.TimeoutExpired) as e:
                tree.log(f'kunit.py gave no JSON of boot {n}: {e}')
                return False
            if isinstance(data, dict):
                groups.append(data)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    dest.write_text(json.dumps(merge_kunit_json(groups), indent=4) + '\n')
    return True


def kunit_py_isolated(kunit_py: Path, out: Path, console: Sequence[str], kunit_json: Path,
                      v: verdict.Verdict) -> Tuple[List[str], bool]:
    """results.json of an ISOLATE= run (kunit.py wrote none: --raw_output)
    from kunit.py's parse of each boot, and where it differs from ours:
    (the differences, whether a parse derailed by kernel lines in the KTAP
    was replaced by that of the KTAP lines alone, as kunit_py_derailed())."""
    segments = boot_lines(console)
    if not kunit_py_parse_boots(kunit_py, out, segments, kunit_json):
        return [], False
    differ = kunit_py_disagreements(kunit_json, v)
    if not differ or not any(kernel_lines_in_ktap(seg)[1] for seg in segments):
        return differ, False
    only = out / 'results-ktap-only.json'
    if not kunit_py_parse_boots(kunit_py, out, segments, only, ktap_only=True):
        return differ, False
    left = kunit_py_disagreements(only, v)
    if left:
        return left, False
    tree.log(f'kunit.py\'s parser was derailed by kernel line(s) printed inside the KTAP of '
             f'a boot and read {len(differ)} result(s) differently; on the KTAP lines alone '
             f'it agrees with ours: {kunit_json.name} is that parse now, the derailed one is '
             'results-derailed.json')
    shutil.copyfile(kunit_json, out / 'results-derailed.json')
    shutil.copyfile(only, kunit_json)
    return [], True


def build_problem(kunit_log: str, rc: Optional[int]) -> Tuple[str, str, str, str]:
    """(category, name, message, detail) when no console came out of kunit.py."""
    errors = [ln for ln in kunit_log.splitlines() if BUILD_ERROR.search(ln)]
    if 'Running tests with:' in kunit_log and 'Starting KUnit Kernel' not in kunit_log:
        # ISOLATE: kunit.py booted the kernel to list its cases, then no more.
        return 'build', '', (f'the kernel booted to list its cases (kunit.py --run_isolated), '
                             f'and no boot followed (kunit.py exited {rc}): see kunit.log'), \
            '\n'.join(kunit_log.splitlines()[-30:])
    if 'Building KUnit Kernel' in kunit_log or 'Configuring KUnit Kernel' in kunit_log:
        if 'Starting KUnit Kernel' not in kunit_log:
            compiler = [ln for ln in errors if COMPILER_ERROR.search(ln)]
            first = (compiler or errors or [f'kunit.py exited {rc}'])[0].strip()
            return 'build', '', f'the kernel did not build: {first}', '\n'.join(errors[:30])
    return 'build', '', f'the kernel never ran (kunit.py exited {rc}): see kunit.log', \
        '\n'.join(kunit_log.splitlines()[-30:])


def only_userspace(exp: verdict.Expectations) -> bool:
    """Does @exp expect cases of the user-space suite and of no KUnit suite?"""
    return exp.cases is not None and set(exp.cases) == {gcov.SYSFS_SUITE}


def judge(out: Path, console_path: Path, exp: verdict.Expectations, rc: Optional[int] = 0,
          killed_after: Optional[float] = None, timeout: int = 0,
          kunit_log: Optional[str] = None,
          kunit_json: Optional[Path] = None,
          kunit_py: Optional[Path] = None, isolate: str = '',
          attr_skipped: Sequence[str] = ()) -> Tuple[ktap.Test, verdict.Verdict]:
    """Judge a console; write results.ktap, junit.xml and verdict.json to @out.

    @rc and @kunit_log are kunit.py's (None: judging a console from elsewhere);
    @kunit_json its --json of this console, written by this run, which must
    agree with our parse; @kunit_py the kunit.py that wrote it (to tell a
    console whose kernel lines derailed kunit.py's parser, kunit_py_derailed()).
    @isolate: the console of several boots (ISOLATE=suite|test,
    judge_isolated()); kunit.py wrote no JSON then: @kunit_py parses each
    boot into @kunit_json. @attr_skipped: the cases FILTER_ATTR left out
    under FILTER_ACTION=skip, expected as skipped without a reason.
    """
    root = ktap.Test(name='', status=ktap.Status.PASS)
    v = verdict.Verdict()
    console_lines: List[str] = []
    if console_path.is_file() and console_path.stat().st_size:
        console = ktap.read_console(console_path)
        console_lines = console.lines
        if isolate:
            root, v, lines = judge_isolated(console, exp)
        else:
            start, root, v = verdict.judge_console(console, exp)
            lines = ktap.extract(console.lines)
        accept_attribute_skips(v, attr_skipped, exp.context)
        (out / 'results.ktap').write_text(''.join(f'{ln}\n' for ln in lines))
        if console.long_lines:
            tree.log(f'{console.long_lines} console line(s) longer than {ktap.MAX_LINE} '
                     'characters were cut')
    elif kunit_log is None:
        v.add('console', '', f'{console_path}: no such file, or empty')
    # kunit.py's parse first: a parse derailed by a kernel line also explains
    # kunit.py's exit status.
    derailed = False
    if isolate and kunit_json is not None and kunit_py is not None and console_lines \
            and killed_after is None:
        differ, derailed = kunit_py_isolated(kunit_py, out, console_lines, kunit_json, v)
        if differ:
            v.add('kunit.py', '', f'kunit.py\'s own parser reads {len(differ)} result(s) of '
                  f'these boots differently from ours (a CI that reads kunit.py\'s summary '
                  f'would see another run): {differ[0]}', '\n'.join(differ[:40]))
    elif kunit_json is not None and killed_after is None and not isolate:
        differ = kunit_py_disagreements(kunit_json, v)
        if differ and kunit_py is not None and console_path.is_file():
            left = kunit_py_derailed(kunit_py, out, console_path, kunit_json, v, differ)
            derailed, differ = not left, left
        if differ:
            v.add('kunit.py', '', f'kunit.py\'s own parser reads {len(differ)} result(s) of this '
                  f'console differently from ours (a CI that reads kunit.py\'s summary would '
                  f'see another run): {differ[0]}', '\n'.join(differ[:40]))
    if killed_after is not None:
        v.add('timeout', '', f'kunit.py was killed after {killed_after:.0f} s: the build and '
              f'the kernel run did not finish in time; partial KTAP kept in results.ktap')
    elif kunit_log is not None and KUNIT_PY_TIMEOUT.search(kunit_log):
        v.add('timeout', '', f'the kernel did not finish within {timeout} s (hang or '
              'deadlock?); partial KTAP kept in results.ktap')
    elif kunit_log is not None and not (console_path.is_file() and console_path.stat().st_size):
        v.add(*build_problem(kunit_log, rc))
    elif rc not in (0, None) and v.ok:
        if derailed:
            tree.log(f'kunit.py exits {rc} for the results its derailed parse made up; the '
                     'verdict follows the parse of the KTAP lines alone')
        elif v.known:
            tree.log('kunit.py exits 1 for the known failures; the verdict follows '
                     'kunit/known-failures-<KVER>')
        elif v.passed == 0 and v.skipped:
            tree.log('every case was skipped: kunit.py exits 1 for that; the verdict follows '
                     'kunit/expected-skips')
        elif only_userspace(exp) and kunit_log is not None and 'Ran 0 tests' in kunit_log:
            tree.log('FILTER selects the user-space suite alone: kunit.py exits 1 for its '
                     '"0 tests run"; the verdict follows the user-space suite')
        else:
            v.add('kunit.py', '', f'kunit.py exited {rc} although every case passed: '
                  'see kunit.log')
    write_outputs(out, root, v, exp.context)
    if console_lines:
        c = exp.context
        states.write(out, console_lines, root, v,
                     f"CPU hotplug states: linux {c.get('version', c.get('kver', '?'))}, "
                     f"CONFIG={c.get('config', '?')}, SMP={c.get('smp', '?')}"
                     + (', FIXES=1' if c.get('fixes') == '1' else ''))
    return root, v


# kunit.py's status names (kunit_json.py) for ours.
KUNIT_PY_STATUS = {'pass': 'PASS', 'fail': 'FAIL', 'skip': 'SKIP', 'crashed': 'ERROR',
                   'no results': 'FAIL'}


def kunit_py_results(path: Path) -> Dict[str, str]:
    """suite.case[.param] -> status, from kunit.py's --json (KernelCI format)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    out: Dict[str, str] = {}

    def walk(group: Dict[str, Any], prefix: str) -> None:
        for case in group.get('test_cases') or []:
            if isinstance(case, dict):
                out[prefix + str(case.get('name', ''))] = str(case.get('status', ''))
        for sub in group.get('sub_groups') or []:
            if isinstance(sub, dict):
                walk(sub, prefix + str(sub.get('name', '')) + '.')
    if isinstance(data, dict):
        walk(data, '')
    return out


def kunit_py_disagreements(path: Path, v: verdict.Verdict) -> List[str]:
    """Where kunit.py's parse of the console (results.json) and ours differ.

    The user-space suite comes after the KUnit document's plan is complete:
    kunit.py does not read it, and it is left out here. Read before
    amend_kunit_json() writes our verdict into the same file.
    """
    theirs = {n: s for n, s in kunit_py_results(path).items()
              if n.split('.')[0] != gcov.SYSFS_SUITE}
    if not theirs:
        return []
    ours = {n: s for n, s in v.statuses.items() if n.split('.')[0] != gcov.SYSFS_SUITE}
    out = [f'{n}: kunit.py {theirs.get(n, "(absent)")}, ours {KUNIT_PY_STATUS.get(s, s)}'
           for n, s in ours.items() if theirs.get(n) != KUNIT_PY_STATUS.get(s, s)]
    out += [f'{n}: kunit.py {st}, ours (absent)' for n, st in theirs.items() if n not in ours]
    return out


# A line kunit.py's parser reads as KTAP (kunit_parser.py: the header,
# result, plan and diagnostic lines) or as the end of the document.
KTAP_LIKE = re.compile(r'\s*(K?TAP version \d+$|(not )?ok \d+|1\.\.\d+|#)')
# Seconds kunit.py gets to parse a console again (it takes about one).
REPARSE_TIMEOUT = 120


def kernel_lines_in_ktap(console: Sequence[str]) -> Tuple[List[str],
                                                          List[Tuple[int, str, bool]]]:
    """(the KTAP as kunit.py extracts it, the kernel's own lines in it).

    Each kernel line with its console line number and whether it stands
    right after a subtest's 'KTAP version' line, where kunit.py's parser
    cannot read past it. Messages printed by other CPUs and by drivers
    probing in the background (an i8042 keyboard, a TSC recalibration)
    land anywhere in the KTAP.
    """
    start, lines = ktap.extract_at(console)
    foreign = [(start + i + 1, ln, i > 0 and lines[i - 1][:1].isspace()
                and bool(ktap.KTAP_START.match(lines[i - 1])))
               for i, ln in enumerate(lines) if not KTAP_LIKE.match(ln)]
    return lines, foreign


def kunit_py_derailed(kunit_py: Path, out: Path, console_path: Path, kunit_json: Path,
                      v: verdict.Verdict, differ: List[str]) -> List[str]:
    """What is left of @differ once the kernel lines inside the KTAP are taken out.

    6.12's kunit_parser takes no other line between a subtest's 'KTAP
    version' and its '# Subtest:' line: one kernel message printed there
    and it reads the rest of the document one level off (hundreds of
    results renamed). That is kunit.py's weakness, not the run's: kunit.py
    parses the console again without the kernel's lines, and when that
    parse agrees with ours, the run is judged on it and its JSON replaces
    the derailed one (kept as results-derailed.json). When it still
    disagrees, or cannot be had, the differences stand.
    """
    console = ktap.read_console(console_path).lines
    lines, foreign = kernel_lines_in_ktap(console)
    if not foreign:
        return differ
    kept = len(lines) - len(foreign)
    only = out / 'results-ktap-only.ktap'
    only.write_text(''.join(f'{ln}\n' for ln in lines if KTAP_LIKE.match(ln)))
    reparsed = out / 'results-ktap-only.json'
    try:
        subprocess.run([sys.executable, str(kunit_py), 'parse', f'--json={reparsed}', str(only)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=REPARSE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        tree.log(f'kunit.py could not parse the KTAP lines alone again: {e}')
        return differ
    if not reparsed.is_file():
        return differ
    left = kunit_py_disagreements(reparsed, v)
    if left:
        return left
    derailing = [f for f in foreign if f[2]] or foreign
    where = '; '.join(f'console line {n}: {ln[:80]!r}' for n, ln, _ in derailing[:3])
    tree.log(f'kunit.py\'s parser was derailed by kernel line(s) printed inside the KTAP '
             f'({where}) and read {len(differ)} result(s) differently; on the {kept} KTAP '
             f'lines alone, without the {len(foreign)} kernel lines ({only.name}), it agrees '
             f'with ours: {kunit_json.name} is that parse now, the derailed one is '
             'results-derailed.json')
    shutil.copyfile(kunit_json, out / 'results-derailed.json')
    shutil.copyfile(reparsed, kunit_json)
    return []


def write_outputs(out: Path, root: ktap.Test, v: verdict.Verdict,
                  context: Dict[str, str]) -> None:
    junit.write(out / 'junit.xml', root, v)
    verdict.write_json(out / 'verdict.json', v, context)
    amend_kunit_json(out / 'results.json', v)
    write_kcidb(out)
    page.write_run(out)


def write_kcidb(out: Path) -> None:
    """out/kcidb.json: the run for KernelCI's KCIDB (kcidb.py); never fails the run."""
    try:
        kcidb.write(out / 'kcidb.json', kcidb.report(out))
    except (kcidb.ExportError, OSError) as e:
        tree.log(f'kcidb.json not written: {e}')


def amend_kunit_json(path: Path, v: verdict.Verdict) -> None:
    """Make kunit.py's results.json (KernelCI format) carry our verdict too.

    kunit.py knows nothing of kernel reports, missing cases or the coverage
    gate: a case the verdict holds something against becomes FAIL (ERROR when
    it crashed or never ran), and problems of the run as a whole are added as
    ERROR test cases named cpuhp-kunit.<category>.
    """
    try:
        data = json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    data.setdefault('name', 'KUnit Test Group')
    data.setdefault('sub_groups', [])
    data.setdefault('test_cases', [])
    rank = {'PASS': 0, 'SKIP': 1, 'FAIL': 2, 'ERROR': 3}
    for p in v.known + v.problems:
        status = 'ERROR' if p.category not in junit.FAILURE_CATEGORIES else 'FAIL'
        if not p.name:
            name = f'cpuhp-kunit.{p.category}'
            if not any(c.get('name') == name for c in data['test_cases']):
                data['test_cases'].append({'name': name, 'status': status})
            continue
        group, parts = data, p.name.split('.', 2)
        for part in parts[:-1]:
            found = next((g for g in group['sub_groups'] if g.get('name') == part), None)
            if found is None:
                found = {'name': part, 'sub_groups': [], 'test_cases': []}
                group['sub_groups'].append(found)
            group = found
        case = next((c for c in group['test_cases'] if c.get('name') == parts[-1]), None)
        if case is None:
            sub = next((g for g in group['sub_groups'] if g.get('name') == parts[-1]), None)
            case = {'name': parts[-1]}
            (sub['test_cases'] if sub is not None else group['test_cases']).append(case)
        if p in v.known:
            # A finding in kunit/known-failures-<KVER>: what kunit.py calls FAIL is not red.
            if case.get('status', 'FAIL') == 'FAIL':
                case['status'] = 'SKIP'
        elif rank[status] > rank.get(case.get('status', 'PASS'), 0):
            case['status'] = status
    path.write_text(json.dumps(data, indent=4) + '\n')


def decode_reports(out: Path, vmlinux: Path, trees: Sequence[Optional[Path]],
                   cross_compile: str = '') -> Optional[verdict.Verdict]:
    """Decode the kernel reports of the run in @out against @vmlinux (decode.py)
    and write its outputs again; says in the log and in verdict.json's context
    what was decoded, or why not. None when there was nothing to decode."""
    path = out / 'verdict.json'
    if not path.is_file():
        return None
    v, context = verdict.read_json(path)
    note = decode.decode_verdict(v, vmlinux, trees, cross_compile)
    if not note:
        return None
    tree.log(f'stack traces: {note}')
    context['decoded'] = note
    write_outputs(out, run_root(out, context), v, context)
    return v


def add_problems(out: Path, problems: Sequence[verdict.Problem]) -> verdict.Verdict:
    """Add problems found after a run (coverage gate, ...) to its outputs."""
    path = out / 'verdict.json'
    v, context = verdict.read_json(path) if path.is_file() else (verdict.Verdict(), {})
    v.problems += problems
    write_outputs(out, run_root(out, context), v, context)
    return v


def summary(v: verdict.Verdict) -> List[str]:
    """What the run prints last: skips, problems, the verdict and the counts."""
    lines = []
    for s in v.skips:
        tag = 'expected' if s.expected else 'NOT EXPECTED'
        lines.append(f'cpuhp-kunit: skipped ({tag}) {s.name}: {s.reason or "(no reason)"}'
                     + (f' [{s.why}]' if s.why else ''))
    lines += [f'cpuhp-kunit: known failure: [{p.category}] {p}' for p in v.known]
    lines += [f'cpuhp-kunit: {p.name}: {p.message} [{p.detail}]' for p in v.not_seen]
    lines += [f'cpuhp-kunit: FAIL: [{p.category}] {p}' for p in v.problems]
    if v.known:
        lines.append(f'cpuhp-kunit: {v.closing_counts()[3]} known failure(s) '
                     '(kunit/known-failures-<KVER>; STRICT=1 makes them red)')
    lines.append('cpuhp-kunit: PASS' if v.ok else 'cpuhp-kunit: FAIL')
    lines.append(counts_line(v))
    return lines


def counts_line(v: verdict.Verdict) -> str:
    """'kunit: N passed, N failed, N skipped' (see Verdict.closing_counts)."""
    passed, failed, skipped, _ = v.closing_counts()
    return f'kunit: {passed} passed, {failed} failed, {skipped} skipped'



def commit() -> str:
    """This repository's commit, '-dirty' with uncommitted changes ('' outside git)."""
    try:
        head = tree.git(REPO, 'rev-parse', '--short=12', 'HEAD').stdout.strip()
        dirty = tree.git(REPO, 'status', '--porcelain', '--', 'kunit', 'src', 'kconfigs',
                         'tools/cpuhpk').stdout.strip()
    except (OSError, tree.PrepareError):
        return ''
    return head + ('-dirty' if dirty else '')


def fail_early(out: Path, category: str, message: str, context: Dict[str, str]) -> int:
    """A run that ends before the kernel ran still leaves a red junit.xml."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    v = verdict.Verdict()
    v.add(category, '', message)
    write_outputs(out, ktap.Test(name='', status=ktap.Status.PASS), v, context)
    print(f'cpuhp-kunit: error: {message}', file=sys.stderr)
    print('\n'.join(summary(v)))
    return 1


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kver', default='6.12')
    ap.add_argument('--arch', choices=tuple(arch.ARCHES), default=arch.HOST,
                    help='the architecture to build and boot (arm64: cross-compiled, '
                    'qemu-system-aarch64 virt)')
    ap.add_argument('--smp', type=int, default=DEFAULT_SMP)
    ap.add_argument('--topology', choices=TOPOLOGIES, default='flat',
                    help='smt, nosmt, nosmt-force: two threads per core (needs an even --smp)')
    ap.add_argument('--filter', default='')
    ap.add_argument('--config', default='default')
    ap.add_argument('--timeout', type=int, default=600, help='seconds for the kernel run')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--out', type=Path, help='output directory (default out/KVER[-CONFIG], '
                    'with --judge out/judge)')
    ap.add_argument('--no-coverage-report', dest='coverage_report', action='store_false',
                    help='do not turn the gcov data into coverage.info and html/ (make mutate)')
    ap.add_argument('--judge', type=Path, metavar='CONSOLE',
                    help='judge this console log instead of building and booting')
    ap.add_argument('--vmlinux', type=Path, default=None,
                    help='make judge: the vmlinux of the console\'s kernel, to decode the '
                    'frames of its reports (file:line) with its tree\'s '
                    'scripts/decode_stacktrace.sh; it needs debug info')
    ap.add_argument('--userspace', type=int, choices=(0, 1), default=1,
                    help='make judge: 1 (default, as make run): the console is from a run whose '
                    'initramfs ran kunit/*_test.sh, so the user-space suite is expected where '
                    'FILTER selects it; 0: a console that never had it')
    ap.add_argument('--fixes', type=int, choices=(0, 1), default=0,
                    help='1: apply src/KVER/fixes/series (our kernel fixes) on top of src/KVER/series')
    ap.add_argument('--seed', type=int, default=0,
                    help='cpuhp_stress: seed of the random walk (0: a random one, printed)')
    ap.add_argument('--stress-ops', type=int, default=0,
                    help='cpuhp_stress: operations of the walk (0: the suite\'s default)')
    ap.add_argument('--strict', type=int, choices=(0, 1), default=0,
                    help='1: known failures (kunit/known-failures-<KVER>) are red, and what is '
                    'known to wedge a CPU runs too')
    add_kunit_py_arguments(ap)
    add_tree_arguments(ap)
    return ap


def add_kunit_py_arguments(ap: argparse.ArgumentParser) -> None:
    """kunit.py's own knobs (KUNIT_PY_FLAGS), handed on to it. make judge
    takes --isolate, --filter-attr and --filter-action as what the console's
    run asked for and ignores the others (they change the kernel or its
    boot, not what is judged)."""
    ap.add_argument('--kconfig-add', default='', metavar='"CONFIG_X=y CONFIG_Y=n"',
                    help='kconfig lines on top of the fragments, apart by spaces: one '
                    'kunit.py --kconfig_add each; part of the build (a change rebuilds)')
    ap.add_argument('--kernel-args', default='', metavar='"A B"',
                    help='kernel arguments after the run\'s own, apart by spaces: one '
                    'kunit.py --kernel_args each')
    ap.add_argument('--qemu-args', default='', metavar='"-X Y"',
                    help='QEMU arguments after the run\'s own: one kunit.py --qemu_args '
                    '(split by it as a shell would)')
    ap.add_argument('--make-options', default='', metavar='"X=Y ..."',
                    help='make options of the build after the run\'s own, e.g. LLVM=1: one '
                    'kunit.py --make_options each; part of the build, with the version of '
                    'the compiler they choose')
    ap.add_argument('--isolate', choices=('', 'suite', 'test'), default='',
                    help='one boot per suite or per case (kunit.py --run_isolated), judged, '
                    'reported and covered as one run')
    ap.add_argument('--filter-attr', default='', metavar='ATTR<OP>VALUE[,...]',
                    help='KUnit attribute filter (kunit.py --filter), e.g. speed>slow: the '
                    'cases it leaves out are not asked for; kernels with KUnit attributes '
                    '(6.6 on) only')
    ap.add_argument('--filter-action', choices=('', 'skip'), default='',
                    help='skip: the cases --filter-attr leaves out run as skipped '
                    '(kunit.py --filter_action=skip) and are expected so')


def add_tree_arguments(ap: argparse.ArgumentParser) -> None:
    """TREE=, REV=, LOCAL=, SERIES= (tools/cpuhpk/usertree.py)."""
    ap.add_argument('--tree', default='', help='a kernel git tree of your own to test instead '
                    'of the Debian one (never written to); --kver is then chosen by its version')
    ap.add_argument('--rev', default='HEAD', help='--tree: the revision to test')
    ap.add_argument('--local', type=int, choices=(0, 1), default=1,
                    help='--tree: 1 tests the uncommitted changes of its tracked files too')
    ap.add_argument('--series', default='', help='--tree: a directory of patches (with a '
                    'series file, or *.patch in name order) instead of src/<KVER>/series')


def tree_arguments(args: argparse.Namespace) -> List[str]:
    """The TREE= arguments of @args, to hand on to a run."""
    if not getattr(args, 'tree', ''):
        return []
    return ['--tree', str(args.tree), '--rev', args.rev, '--local', str(args.local),
            *(['--series', str(args.series)] if args.series else [])]


# What make judge takes of kunit.py's knobs: what the console's run asked for.
JUDGED_KNOBS = ('isolate', 'filter_attr', 'filter_action')


def judge_file(args: argparse.Namespace) -> int:
    """make judge: the verdict of a console log captured elsewhere."""
    out = args.out or REPO / 'out' / 'judge'
    userspace = bool(args.userspace and gcov.userspace_cases(args.filter))
    context = {'kver': args.kver, 'arch': args.arch, 'config': args.config,
               'smp': str(args.smp), 'topology': args.topology,
               'filter': args.filter, 'fixes': str(args.fixes), 'console': str(args.judge),
               'userspace': str(int(userspace)), 'commit': commit(),
               **{k: v for k, v in knob_context(args).items() if k in JUDGED_KNOBS}}
    tree.log('judging as make run would: the user-space suite ' + (
        'expected (USERSPACE=0 for a console that never had it)' if userspace else
        'not expected' + (' (USERSPACE=0)' if not args.userspace else
                          f' (FILTER={args.filter} selects none of it)')))
    try:
        exp = expectations(args.filter, context, bool(args.strict), userspace)
        left_out = apply_attribute_filter(exp, args)
    except tree.PrepareError as e:
        return fail_early(out, 'prepare', str(e), context)
    except ValueError as e:
        return fail_early(out, 'prepare', f'FILTER_ATTR={args.filter_attr}: {e}', context)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    console = out / 'console.log'
    try:
        with open(args.judge, 'rb') as src, open(console, 'wb') as dst:
            # A bounded copy: only what the verdict reads, and one byte more.
            shutil.copyfileobj(_Bounded(src, ktap.MAX_CONSOLE + 1), dst)
    except OSError as e:
        return fail_early(out, 'console', f'cannot read {args.judge}: {e.strerror}', context)
    _, v = judge(out, console, exp, rc=None, kunit_log=None, isolate=args.isolate,
                 attr_skipped=left_out if args.filter_action == 'skip' else ())
    if args.vmlinux:
        trees: List[Optional[Path]] = []
        with contextlib.suppress(tree.PrepareError):
            trees.append(tree.tree_path(args.kver))
        v = decode_reports(out, args.vmlinux, trees,
                           arch.get(args.arch).cross_compile or '') or v
    page.write_run(out)     # with the state map
    print('\n'.join(summary(v)))
    tree.log(f'outputs in {out}, at a glance in {out / "index.html"}')
    return 0 if v.ok else 1


class _Bounded:
    """A file-like reader that stops after @limit bytes."""

    def __init__(self, f: 'object', limit: int) -> None:
        self._f, self._left = f, limit

    def read(self, n: int = -1) -> bytes:
        if self._left <= 0:
            return b''
        n = self._left if n < 0 else min(n, self._left)
        data: bytes = self._f.read(n)  # type: ignore[attr-defined]
        self._left -= len(data)
        return data


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if args.smp < 1:
        parser().error('--smp must be at least 1')
    if two_threads(args.topology) and args.smp % 2:
        parser().error(f'TOPOLOGY={args.topology} puts two threads in each core: '
                       f'SMP={args.smp} is odd')
    if args.topology not in arch.get(args.arch).topologies:
        parser().error(f'TOPOLOGY={args.topology} is not possible on ARCH={args.arch} '
                       f'(it has: {" ".join(arch.get(args.arch).topologies)}; '
                       'tools/cpuhpk/arch.py says why)')
    if args.judge is not None:
        return judge_file(args)
    problem = knob_errors(args)
    if problem:
        parser().error(problem)
    try:
        user = resolve_user(args)
    except tree.PrepareError as e:
        name = usertree.tree_key(Path(args.tree).expanduser().resolve())[0]
        return fail_early(args.out or REPO / 'out' / f'tree-{name}', 'prepare', str(e),
                          {'tree': str(args.tree), 'rev': args.rev, 'commit': commit()})
    out = args.out or out_dir(args.kver, args.config, bool(args.fixes), user, args.smp,
                              args.topology, args.arch)
    context = {'kver': args.kver, 'arch': args.arch, 'config': args.config,
               'smp': str(args.smp), 'topology': args.topology,
               'filter': args.filter, 'fixes': str(args.fixes), 'strict': str(args.strict),
               'commit': commit(), **tree_context(user), **knob_context(args)}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupted)
    try:
        what = f'TREE={user.spec.path} REV={user.short}' if user else f'KVER={args.kver}'
        with tree.cache_lock(f'make run {what} CONFIG={args.config}'):
            return _run(args, out, context, user)
    except tree.LockBusy as e:
        # Not a word in out/: it belongs to the run that holds the lock.
        print(f'cpuhp-kunit: error: {e}', file=sys.stderr)
        return 1
    except (Interrupted, KeyboardInterrupt) as e:
        signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
        if out.is_dir():
            add_problems(out, [verdict.Problem('interrupted', '', f'interrupted by '
                                               f'{signal.Signals(signum).name}')])
        print(f'cpuhp-kunit: interrupted by {signal.Signals(signum).name}; kunit.py, make '
              'and QEMU stopped', file=sys.stderr)
        return 128 + signum


def _run(args: argparse.Namespace, out: Path, context: Dict[str, str],
         user: Optional[usertree.Resolved] = None) -> int:
    isolate = knob(args, 'isolate')
    options = make_options(args)
    try:
        exp = expectations(args.filter, context, bool(args.strict),
                           bool(gcov.userspace_cases(args.filter)))
        if exp.cases == {}:
            return fail_early(out, 'missing', f'FILTER={args.filter} matches no case of the '
                              'kunit/ suites', context)
        left_out = apply_attribute_filter(exp, args)
        if exp.cases == {}:
            return fail_early(out, 'missing', f'FILTER_ATTR={args.filter_attr} leaves out '
                              f'every case FILTER={args.filter} selects', context)
        if isolate and not isolated_boots(exp, isolate):
            return fail_early(out, 'prepare', f'ISOLATE={isolate} boots once per KUnit '
                              f'{isolate}: FILTER={args.filter} selects none (only the '
                              'user-space suite, which runs after the suites of a boot)',
                              context)
        a = arch.get(args.arch)
        fragments(args.config, args.kver, a.name)
        llvm = LLVM_PACKAGES if make_variable(options, 'LLVM') == '1' else ()
        tree.ensure_packages([*gcov.PACKAGES, *a.packages, *llvm])
        t = prepare_tree(args, user)
        problem = tree_errors(t, args)
        if problem:
            raise tree.PrepareError(problem)
        frags = kernel_fragments(t, args.config, a.name, options)  # CONFIG=debian: resolved here
        qemu_config = gcov.guest(build_dir_of(t, args.config, a.name), args.filter, a,
                                 isolation_anchor(exp, isolate))
    except tree.PrepareError as e:
        return fail_early(out, 'prepare', str(e), context)
    context['version'] = t.version
    context['package'] = t.package
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    build_dir = build_dir_of(t, args.config, a.name)
    build_dir.mkdir(parents=True, exist_ok=True)
    test_log = build_dir / 'test.log'
    test_log.unlink(missing_ok=True)     # never judge a previous run's console
    gcov.clear(build_dir)                # nor count a previous run's coverage

    tree.log(f'linux {t.version} ({t.package}) in {t.path}, ARCH={a.name}, SMP={args.smp}, '
             f'CONFIG={args.config}, FILTER={args.filter or "*"}'
             + ''.join(f', {KNOB_NAMES[k]}={v}' for k, v in knob_context(args).items()))
    if user is not None:
        tree.log(f'testing {user.describe()}')
    started = time.monotonic()
    control = None
    if args.topology == 'hotplug':
        control = hostctl.Control(build_dir / 'cpuhp-kunit', out / 'hostctl.log')
        control.start()
    inputs = run_build_inputs(t, frags, qemu_config, a, args)
    built = reusable_build(build_dir, inputs)
    if built:
        tree.log(f'{build_dir.name} holds the kernel of these very sources and configs: '
                 'booting it again (kunit.py exec, no make)')
    else:
        forget_build(build_dir)
    cmd = kunit_command(t, args, build_dir, out, qemu_config, control, frags, build=not built)
    # ISOLATE=: kunit.py's --timeout holds for each boot, the listing one too.
    boots_due = isolated_boots(exp, isolate) + 1 if isolate else 1
    if isolate:
        tree.log(f'ISOLATE={isolate}: {boots_due - 1} boot(s) of one {isolate} each, after '
                 'one that lists the cases')
    try:
        rc, killed_after = run_kunit(cmd, t.path, out / 'kunit.log',
                                     BUILD_TIMEOUT + boots_due * args.timeout + 60,
                                     IsolatedEcho() if isolate else None)
    finally:
        if control is not None:
            control.stop()
    kunit_log = (out / 'kunit.log').read_text(errors='replace')
    # The kernel started (ISOLATE=: its listing boot at least): it was built.
    started_kernel = 'Starting KUnit Kernel' in kunit_log or 'Running tests with:' in kunit_log
    if (not built and started_kernel
            and run_build_inputs(t, frags, qemu_config, a, args) == inputs):
        remember_build(build_dir, inputs)   # the build went through, its inputs held still
    context['toolchain'] = toolchain(build_dir, options, a.cross_compile or '', started_kernel)
    if isolate:
        console = isolated_console(kunit_log, isolate)
        if console:
            (out / 'console.log').write_text(''.join(f'{ln}\n' for ln in console))
    elif test_log.is_file():
        shutil.copyfile(test_log, out / 'console.log')
    _, v = judge(out, out / 'console.log', exp, rc, killed_after, args.timeout,
                 kunit_log, out / 'results.json', t.kunit_py, isolate,
                 left_out if knob(args, 'filter_action') == 'skip' else ())
    if args.coverage_report:
        v = coverage_report(out, build_dir, t.path, args.kver, v, a, isolate)
    v = decode_reports(out, build_dir / 'vmlinux', [t.path], a.cross_compile or '') or v
    write_kcidb(out)        # with the coverage
    page.write_run(out)     # with the coverage and the state map
    tree.log(f'{time.monotonic() - started:.0f} s; outputs in {out}, at a glance in '
             f'{out / "index.html"}')
    if user is not None:
        tree.log(f'tested {user.describe()}; the same verdict again: make judge '
                 f'CONSOLE={out / "console.log"} KVER={user.kver} SMP={args.smp}'
                 + (f' CONFIG={args.config}' if args.config != 'default' else '')
                 + (f" FILTER='{args.filter}'" if args.filter else ''))
    print('\n'.join(summary(v)))
    return 0 if v.ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
