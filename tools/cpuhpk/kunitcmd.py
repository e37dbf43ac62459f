"""The kunit.py command line of a run, and why a run's knobs cannot make one.

kunit_command() is kunit.py run for a run's RunSpec (kunit.py exec when
the build directory holds the kernel of these very inputs, buildstamp.py):
the kconfigs/ fragments of CONFIG= (fragments(); for CONFIG=debian,
Debian's resolved configuration first, debian.py), the guest's CPUs and
topology (TOPOLOGY=: QEMU's -smp and -cpu, and kernel arguments), this
run's kernel arguments (KERNEL_ARGS: a panic ends QEMU at once), STRICT=1's
and cpuhp_stress's, then kunit.py's own knobs (knobs.py) after them.
knob_errors() refuses knobs that cannot run as given before anything is
prepared; tree_errors() those the kernel tree or its kunit.py cannot do (a
kunit.py without the flag, a kernel without KUnit attributes for
FILTER_ATTR=, as 6.1, or one that cannot list its cases for ISOLATE=).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from cpuhpk import arch, attrs, debian, hostctl, knobs, say, tree
from cpuhpk.paths import REPO
from cpuhpk.runspec import RunSpec, two_threads

# Kernel arguments: reboot (and so end QEMU, -no-reboot) at once on a panic
# instead of waiting for the timeout.
# suspend.pm_test_delay: the seconds a suspend at a pm_test level busy-waits
# at that level (5 by default), for cpuhp_rollback's real-suspend cases.
# printk.time=0: the user-space suite's lines reach the console without
# printk's timestamp; KUnit's must not carry one either (Debian's config has
# PRINTK_TIME), or cutting the KUnit lines' prefix would cut theirs.
KERNEL_ARGS = ('panic=-1', 'suspend.pm_test_delay=0', 'printk.time=0')
# STRICT=1 also runs what is known to wedge a CPU (kunit/cpuhp_sweep_kunit.c).
STRICT_KERNEL_ARGS = ('cpuhp_kunit.sweep_wedging=1',)


# The guest's CPU topology (make TOPOLOGY=, runspec.TOPOLOGIES): flat, one thread per core (one
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
# maxcpus: the smt guest with one core's two slots left empty (made
# possible CPUs as hotplug's are, VMware's DMI serial), booted with
# maxcpus= one CPU short of the present ones, so that one thread is
# present and has never run: the maxcpus_* sysfs cases alone.
HOTPLUG_SLOTS = 3
VMWARE_SERIAL = '-smbios type=1,serial=VMware-cpuhp-kunit'
# What the maxcpus guest runs (make coverage, make mutate; refused otherwise).
MAXCPUS_FILTER = 'cpuhp_sysfs.maxcpus_*'
TOPOLOGY_KERNEL_ARGS: Dict[str, Tuple[str, ...]] = {
    'nosmt': ('nosmt',),
    'nosmt-force': ('nosmt=force', 'mitigations=auto,nosmt', 'cpuhp.parallel=0'),
}


def smp_arg(smp: int, topology: str) -> str:
    """QEMU's -smp (and -cpu) for @smp CPUs in @topology."""
    if topology == 'maxcpus':
        return (f'{smp},maxcpus={smp + 2},sockets=1,cores={smp // 2 + 1},threads=2 '
                f'-cpu Nehalem,-hypervisor {VMWARE_SERIAL}')
    if two_threads(topology):
        return f'{smp},sockets=1,cores={smp // 2},threads=2 -cpu Nehalem'
    if topology == 'hotplug':
        return f'{smp},maxcpus={smp + HOTPLUG_SLOTS} -cpu qemu64,-hypervisor {VMWARE_SERIAL}'
    return str(smp)


KCONFIG_WORD = re.compile(r'^CONFIG_\w+=\S+$')
MAKE_WORD = re.compile(r'^[A-Za-z_]\w*=')


def knob_errors(spec: RunSpec) -> Optional[str]:
    """Why @spec's kunit.py knobs cannot run as given (one line), None when they can."""
    bad = [w for w in knobs.kconfig_add(spec) if not KCONFIG_WORD.match(w)]
    if bad:
        return (f'KCONFIG_ADD={spec.kconfig_add}: {bad[0]} is not '
                'CONFIG_<NAME>=<value> (words apart by spaces, CONFIG_X=n to turn one off)')
    bad = [w for w in spec.make_options.split() if not MAKE_WORD.match(w)]
    if bad:
        return (f'MAKE_OPTIONS={spec.make_options}: {bad[0]} is not X=Y '
                '(e.g. LLVM=1)')
    if spec.filter_action and not spec.filter_attr:
        return (f'FILTER_ACTION={spec.filter_action} says what becomes of the '
                'cases FILTER_ATTR= leaves out: FILTER_ATTR is empty')
    if spec.filter_attr:
        try:
            attrs.parse_attr_filter(spec.filter_attr)
        except ValueError as e:
            return f'FILTER_ATTR={spec.filter_attr}: {e}'
    if spec.topology == 'maxcpus' and spec.smp < 4:
        return (f'SMP={spec.smp} with TOPOLOGY=maxcpus: the guest boots maxcpus=SMP-1 and '
                'needs two CPUs online and a thread left unstarted (SMP=4 or more)')
    if spec.topology == 'maxcpus' and not spec.filter.startswith(MAXCPUS_FILTER[:-1]):
        return (f'TOPOLOGY=maxcpus runs FILTER={MAXCPUS_FILTER} alone: any other case\'s '
                'clean-up brings up the CPUs the boot left offline before those cases look')
    if spec.isolate and spec.topology == 'hotplug':
        return (f'ISOLATE={spec.isolate} boots QEMU once per '
                f'{spec.isolate}: TOPOLOGY=hotplug\'s host control serves one QEMU')
    opts = spec.make_options.split()
    if 'debian' in spec.config.split('+') and \
            (knobs.make_variable(opts, 'LLVM') is not None
             or knobs.make_variable(opts, 'CC') is not None):
        return (f'MAKE_OPTIONS={spec.make_options} with CONFIG={spec.config}: '
                'Debian\'s configuration is resolved once for gcc and cached without the make '
                'options (tools/cpuhpk/debian.py): another compiler needs its own')
    return None


def tree_errors(t: tree.Tree, spec: RunSpec) -> Optional[str]:
    """Why the kernel @t or its kunit.py cannot do what @spec's knobs ask (one line).

    Each knob needs its kunit.py flag (knobs.KUNIT_PY_FLAGS): 6.12's and 6.1's
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
    for name, value in spec.set_knobs().items():
        flag = knobs.KUNIT_PY_FLAGS[name]
        if f"'{flag}'" not in source:
            return (f'{knobs.KNOB_NAMES[name]}={value}: the kunit.py of linux '
                    f'{t.version} has no {flag}')
    if spec.filter_attr and \
            not (t.path / 'lib' / 'kunit' / 'attributes.c').is_file():
        return (f'FILTER_ATTR={spec.filter_attr}: linux {t.version} has no KUnit '
                'test attributes (lib/kunit/attributes.c, since 6.6): nothing to filter on')
    if spec.isolate:
        try:
            executor = (t.path / 'lib' / 'kunit' / 'executor.c').read_text(errors='replace')
        except OSError:
            executor = ''
        if '"list"' not in executor:
            return (f'ISOLATE={spec.isolate}: linux {t.version}\'s KUnit '
                    'cannot list its cases (kunit.action=list), which kunit.py --run_isolated '
                    'boots first')
    return None


def fragment(config: str) -> Path:
    path = REPO / 'kconfigs' / f'{config}.config'
    if not config or not path.is_file():
        known = ' '.join(sorted(p.stem for p in (REPO / 'kconfigs').glob('*.config')))
        raise say.PrepareError(f'no kconfigs/{config}.config (known: {known}; '
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
                     options: Sequence[str] = knobs.MAKE_OPTIONS) -> List[Path]:
    """fragments(), with Debian's resolved configuration first for CONFIG=debian."""
    frags = fragments(config, t.kver, arch_name)
    if 'debian' in config.split('+'):
        return [debian.base(t, frags, options, arch.get(arch_name)), *frags]
    return frags


def topology_kernel_args(spec: RunSpec) -> List[str]:
    """The kernel arguments of @spec's topology."""
    if spec.topology == 'maxcpus':
        return [f'maxcpus={spec.smp - 1}']
    return list(TOPOLOGY_KERNEL_ARGS.get(spec.topology, ()))


def stress_kernel_args(spec: RunSpec) -> List[str]:
    """cpuhp_stress's seed and length, when set (0: the suite's own)."""
    out = []
    if spec.seed:
        out.append(f'cpuhp_kunit.stress_seed={spec.seed}')
    if spec.stress_ops:
        out.append(f'cpuhp_kunit.stress_ops={spec.stress_ops}')
    return out


def kunit_command(t: tree.Tree, spec: RunSpec, build_dir: Path,
                  out: Path, qemu_config: Path,
                  control: Optional[hostctl.Control] = None,
                  frags: Optional[List[Path]] = None, build: bool = True) -> List[str]:
    """kunit.py run for @spec; @qemu_config boots the initramfs (guest.write()),
    @control serves the guest's hot-add requests (TOPOLOGY=hotplug), @frags
    are the kconfigs (default: kernel_fragments()); without @build kunit.py
    exec: the kernel built before (buildstamp.reusable_build())."""
    a = arch.get(spec.arch)
    qemu = f'-smp {smp_arg(spec.smp, spec.topology)}'
    if control is not None:
        qemu += f' {control.qemu_args()}'
    frags = frags or kernel_fragments(t, spec.config, a.name, knobs.make_options(spec))
    cmd = [sys.executable, str(t.kunit_py), 'run' if build else 'exec',
           *[f'--kunitconfig={f}' for f in frags],
           f'--build_dir={build_dir}',
           *([f'--jobs={spec.jobs}'] if build else []), f'--timeout={spec.timeout}',
           f'--qemu_args={qemu}']
    if spec.qemu_args:
        # Split by kunit.py as a shell would (shlex), after this run's own.
        cmd.append(f'--qemu_args={spec.qemu_args}')
    if spec.isolate:
        # One boot per suite or case; each boot's console printed whole
        # (--raw_output=all) is the only place all of them are kept:
        # kunit.py's test.log and --json hold its last boot alone.
        cmd += [f'--run_isolated={spec.isolate}', '--raw_output=all']
    else:
        cmd.append(f'--json={out / "results.json"}')
    cmd += [f'--make_options={o}' for o in knobs.make_options(spec)]
    cmd += [f'--kconfig_add={w}' for w in knobs.kconfig_add(spec)]
    cmd.append(f'--qemu_config={qemu_config}')
    if a.cross_compile:
        cmd.append(f'--cross_compile={a.cross_compile}')
    cmd += [f'--kernel_args={k}' for k in KERNEL_ARGS + a.kernel_args]
    cmd += [f'--kernel_args={k}' for k in topology_kernel_args(spec)]
    if control is not None:
        cmd.append(f'--kernel_args={hostctl.KERNEL_ARG}')
    if spec.strict:
        cmd += [f'--kernel_args={k}' for k in STRICT_KERNEL_ARGS]
    cmd += [f'--kernel_args={k}' for k in stress_kernel_args(spec)]
    cmd += [f'--kernel_args={k}' for k in knobs.kernel_args(spec)]
    if spec.filter_attr:
        cmd.append(f'--filter={spec.filter_attr}')
    if spec.filter_action:
        cmd.append(f'--filter_action={spec.filter_action}')
    if spec.filter:
        cmd.append(spec.filter)
    return cmd
