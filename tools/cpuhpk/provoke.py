"""make reports: real reports of every kind the kernel's crash tests provoke.

Builds the default kernel plus kconfigs/reports.config (LKDTM, KASAN,
KFENCE, UBSAN, list debugging, the lockup and hung-task detectors,
lockdep), then boots it once per entry of BOOTS under QEMU with KUnit off
and a small initramfs that, for each crash type of the entry, prints
'cpuhp-kunit: provoke <TYPE>' and writes the type to LKDTM's
/sys/kernel/debug/provoke-crash/DIRECT (from a child shell, so an oops
kills only that shell). Reports the kernel survives share a boot; a fatal
one (panic, an oops that panics, a stack overflow) or one that never ends
(a lockup, a hung task: the child runs in the background and the script
waits, bounded, for the detector's line) gets a boot of its own.

Each console is judged as the verdict judges any console (hygiene.py,
reports.py): the boot before the first provoked report must hold no
finding (a clean boot of a debug/KASAN kernel), and each provoked section
must hold a report of every kind its entry names. Consoles go to
out/reports/<boot>.log; RECORD=1 also copies them, unedited, into
tools/tests/data/reports/, where tools-test judges them the same way
(tests/test_recorded_reports.py) on every run.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from cpuhpk import cache, execute, gcov, guest, hygiene, kunitcmd, packages, say, tree
from cpuhpk.paths import REPO

RECORDINGS = REPO / 'tools' / 'tests' / 'data' / 'reports'
MARK = 'cpuhp-kunit: provoke '
END = 'cpuhp-kunit: provoke end'
# Seconds a never-ending crash type's detector gets to speak.
WAIT = 90


@dataclasses.dataclass(frozen=True)
class Provoke:
    crashtype: str              # LKDTM's name for it
    kinds: Tuple[str, ...]      # report kinds (reports.KINDS) its section must hold
    wait: Tuple[str, ...] = ()  # never ends: run it in the background, wait for these


@dataclasses.dataclass(frozen=True)
class Boot:
    name: str
    provokes: Tuple[Provoke, ...]
    args: str = ''              # kernel arguments of this boot


BOOTS: Tuple[Boot, ...] = (
    # The kernel goes on after these: one boot for all of them.
    Boot('nonfatal', (
        Provoke('WARNING', ('warning',)),
        Provoke('WARNING_MESSAGE', ('warning',)),
        Provoke('REFCOUNT_DEC_ZERO', ('refcount',)),
        Provoke('CORRUPT_LIST_ADD', ('list-corruption',)),
        Provoke('CORRUPT_LIST_DEL', ('list-corruption',)),
        Provoke('ARRAY_BOUNDS', ('ubsan',)),
        Provoke('READ_AFTER_FREE', ('kasan',)),
        Provoke('SLAB_LINEAR_OVERFLOW', ('kasan',)),
        Provoke('KFENCE_READ_AFTER_FREE', ('kfence',)),
    )),
    # An oops each: the task dies, the kernel is tainted.
    Boot('bug', (Provoke('BUG', ('bug',)),)),
    # A NULL write: under KASAN its shadow check faults first, on a
    # non-canonical address: a general protection fault.
    Boot('exception', (Provoke('EXCEPTION', ('gpf',)),)),
    Boot('write-ro', (Provoke('WRITE_RO', ('page-fault',)),)),
    # A read of the page below the task's stack: the vmap stack's guard
    # page (KASAN_VMALLOC and VMAP_STACK in kconfigs/reports.config), which
    # x86 reports as a stack overflow (after KASAN's vmalloc-out-of-bounds);
    # die() ends the task, the panic() after it is not reached. Not
    # EXHAUST_STACK: on a KASAN kernel (twice the stack) its recursion ends
    # in KASAN reports and 'lkdtm: FAIL: survived without exhausting
    # stack?!' (seen on 6.12.118).
    Boot('stack-guard', (Provoke('STACK_GUARD_PAGE_LEADING', ('stack-overflow',)),)),
    Boot('panic', (Provoke('PANIC', ('panic',)),)),
    # Never end: the detectors' thresholds lowered so that they speak soon.
    Boot('softlockup', (Provoke('SOFTLOCKUP', ('soft-lockup', 'rcu-stall'),
                                ('soft lockup', 'detected stall')),),
         'watchdog_thresh=5 rcupdate.rcu_cpu_stall_timeout=7'),
    Boot('hardlockup', (Provoke('HARDLOCKUP', ('hard-lockup',), ('hard LOCKUP',)),),
         'watchdog_thresh=5'),
    Boot('hung-task', (Provoke('HUNG_TASK', ('hung-task',), ('blocked for more than',)),),
         'sysctl.kernel.hung_task_timeout_secs=5'),
)

INIT = '''#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dbg /usr/bin /sbin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /dbg
# The shell gives a background job /dev/null as its input (no devtmpfs here).
/bin/busybox mkdir -p /dev
[ -e /dev/null ] || mknod /dev/null c 1 3
# wait_for TEXT: until the kernel log has TEXT, {wait} s at most.
wait_for() {{
	i=0
	while [ $i -lt {wait} ]; do
		dmesg | grep -q "$1" && return 0
		sleep 1
		i=$((i + 1))
	done
	echo "cpuhp-kunit: no '$1' in the kernel log after {wait} s"
}}
{steps}
echo "{end}"
reboot -f
'''


def init_script(boot: Boot) -> str:
    steps = []
    for p in boot.provokes:
        steps.append(f'echo "{MARK}{p.crashtype}"')
        write = f"sh -c 'echo {p.crashtype} > /dbg/provoke-crash/DIRECT'"
        if p.wait:
            steps.append(write + ' &')
            steps += [f"wait_for '{w}'" for w in p.wait]
        else:
            steps.append(write)
    return INIT.format(wait=WAIT, steps='\n'.join(steps), end=END)


def sections(lines: Sequence[str]) -> List[Tuple[str, int, int]]:
    """(crash type or '' for the boot before, first line, last line), 1-based."""
    marks = [(n, ln[len(MARK):].strip()) for n, ln in enumerate(lines, 1)
             if ln.startswith(MARK) and not ln.startswith(END)]
    out = [('', 1, (marks[0][0] - 1) if marks else len(lines))]
    for i, (n, name) in enumerate(marks):
        last = marks[i + 1][0] - 1 if i + 1 < len(marks) else len(lines)
        out.append((name, n, last))
    return out


def check(boot: Boot, lines: Sequence[str]) -> Tuple[List[str], Dict[str, List[str]]]:
    """(what is wrong with @boot's console, kinds found per crash type)."""
    findings = [f for f in hygiene.check(lines) if f.why == hygiene.KERNEL_REPORT]
    errors: List[str] = []
    found: Dict[str, List[str]] = {}
    for name, first, last in sections(lines):
        kinds = [f.kind for f in findings if first <= f.lineno <= last]
        found[name] = kinds
        if not name:
            errors += [f'{boot.name}: a report before anything was provoked (the boot is not '
                       f'clean): {f}' for f in findings if first <= f.lineno <= last]
    for p in boot.provokes:
        if p.crashtype not in found:
            errors.append(f'{boot.name}: {p.crashtype} was never provoked (the console ends '
                          'before it)')
            continue
        errors += [f'{boot.name}: {p.crashtype}: no {k} report (found: '
                   f'{", ".join(found[p.crashtype]) or "none"})'
                   for k in p.kinds if k not in found[p.crashtype]]
    return errors, found


def boot_kernel(boot: Boot, bzimage: Path, work: Path, console: Path, smp: int,
                timeout: int) -> None:
    initrd = guest.make_initramfs(work / f'{boot.name}.cpio', init_script(boot))
    append = ' '.join(['console=ttyS0', 'kunit.enable=0', 'panic=-1', 'kasan_multi_shot',
                       'rdinit=/init', boot.args]).strip()
    cmd = ['qemu-system-x86_64', '-nodefaults', '-m', '2048', '-smp', str(smp),
           '-kernel', str(bzimage), '-initrd', str(initrd), '-append', append,
           '-no-reboot', '-nographic', '-serial', 'stdio', '-bios', 'qboot.rom']
    say.log(f'boot {boot.name}: {" ".join(p.crashtype for p in boot.provokes)}')
    with open(console, 'w') as f:
        try:
            subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                           timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            f.write(f'\ncpuhp-kunit: QEMU killed after {timeout} s\n')


def build(t: tree.Tree, build_dir: Path, jobs: int) -> None:
    cmd = [sys.executable, str(t.kunit_py), 'build', '--arch=x86_64',
           f'--kunitconfig={kunitcmd.fragment("default")}',
           f'--kunitconfig={kunitcmd.fragment("reports")}',
           f'--build_dir={build_dir}', f'--jobs={jobs}']
    say.log('building ' + ' '.join(cmd[2:]))
    rc = subprocess.run(cmd, cwd=t.path, timeout=execute.BUILD_TIMEOUT, check=False).returncode
    if rc:
        raise say.PrepareError(f'the reports kernel did not build (kunit.py exited {rc})')


def reports(args: argparse.Namespace) -> int:
    packages.ensure_packages([*guest.PACKAGES, *gcov.PACKAGES])
    t = tree.prepare(args.kver, REPO)
    build_dir = execute.build_dir_of(t, 'reports')
    build_dir.mkdir(parents=True, exist_ok=True)
    build(t, build_dir, args.jobs)
    out = REPO / 'out' / 'reports'
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    chosen = [b for b in BOOTS if not args.boots or b.name in args.boots]
    errors: List[str] = []
    for boot in chosen:
        console = out / f'{boot.name}.log'
        boot_kernel(boot, build_dir / 'arch' / 'x86' / 'boot' / 'bzImage', build_dir,
                    console, args.smp, args.timeout)
        errs, found = check(boot, console.read_text(errors='replace').splitlines())
        for name, kinds in found.items():
            say.log(f'  {boot.name}: {name or "(boot)"}: {", ".join(kinds) or "no report"}')
        errors += errs
        if args.record:
            RECORDINGS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(console, RECORDINGS / f'{boot.name}.log')
    for e in errors:
        print(f'cpuhp-kunit: FAIL: {e}')
    print('cpuhp-kunit: PASS' if not errors else 'cpuhp-kunit: FAIL')
    say.log(f'consoles in {out}' + (f', recorded into {RECORDINGS}' if args.record else ''))
    return 1 if errors else 0


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kver', default='6.12')
    ap.add_argument('--smp', type=int, default=2)
    ap.add_argument('--timeout', type=int, default=300, help='seconds per boot')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--record', type=int, choices=(0, 1), default=0,
                    help='1: copy the consoles into tools/tests/data/reports/')
    ap.add_argument('boots', nargs='*', help='only these boots (default: all of BOOTS)')
    args = ap.parse_args(argv)
    unknown = set(args.boots) - {b.name for b in BOOTS}
    if unknown:
        ap.error('no such boot: ' + ', '.join(sorted(unknown)))
    return cache.locked(f'make reports KVER={args.kver}', lambda: reports(args))


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
