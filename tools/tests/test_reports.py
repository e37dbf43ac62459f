"""Tests for cpuhpk.reports: the table of report kinds, prefixes, grouping.

The head lines below are the kernel's own format strings (reports.KINDS
names the file of each) filled in as a real kernel fills them; the
recordings of tools/tests/data/reports/ (make reports) are read by
test_recorded_reports.py.
"""

from __future__ import annotations

import unittest
from typing import List

from cpuhpk import hygiene, reports

HEADS = (
    ('Kernel panic - not syncing: Fatal exception', 'panic'),
    ('Kernel panic - not syncing: hung_task: blocked tasks', 'panic'),
    ('BUG: KASAN: slab-use-after-free in cpuhp_invoke_callback+0x1e/0x40', 'kasan'),
    ('BUG: KFENCE: out-of-bounds read in test_out_of_bounds_read+0x9e/0x1c0', 'kfence'),
    ('BUG: KCSAN: data-race in cpuhp_thread_fun / cpuhp_kick_ap', 'kcsan'),
    ('BUG: KMSAN: uninit-value in cpuhp_invoke_callback+0x1e/0x40', 'kmsan'),
    ('UBSAN: shift-out-of-bounds in kernel/cpu.c:1234:20', 'ubsan'),
    ('UBSAN: array-index-out-of-bounds in drivers/misc/lkdtm/bugs.c:376:16', 'ubsan'),
    ('UBSAN: array index out of bounds at lkdtm_ARRAY_BOUNDS+0x5c/0x90', 'ubsan'),
    ('watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [cpuhp/1:20]', 'soft-lockup'),
    ('BUG: soft lockup - CPU#0 stuck for 23s! [swapper/0:1]', 'soft-lockup'),
    ('watchdog: Watchdog detected hard LOCKUP on cpu 2', 'hard-lockup'),
    ('NMI watchdog: Watchdog detected hard LOCKUP on cpu 1', 'hard-lockup'),
    ('watchdog: CPU1: Watchdog detected hard LOCKUP on cpu 2', 'hard-lockup'),
    ('BUG: workqueue lockup - pool cpus=1 node=0 flags=0x0 nice=0 stuck for 31s!',
     'workqueue-lockup'),
    ('INFO: task cpuhp/3:30 blocked for more than 122 seconds.', 'hung-task'),
    ('rcu: INFO: rcu_preempt self-detected stall on CPU', 'rcu-stall'),
    ('rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:', 'rcu-stall'),
    ('rcu: INFO: rcu_sched detected expedited stalls on CPUs/tasks: { 1-... } 21 jiffies',
     'rcu-stall'),
    ('INFO: rcu_tasks detected stalls on tasks:', 'rcu-stall'),
    ('INFO: rcu_sched detected stalls on CPUs/tasks:', 'rcu-stall'),
    ('WARNING: possible circular locking dependency detected', 'lockdep'),
    ('WARNING: possible recursive locking detected', 'lockdep'),
    ('WARNING: inconsistent lock state', 'lockdep'),
    ('WARNING: HARDIRQ-safe -> HARDIRQ-unsafe lock order detected', 'lockdep'),
    ('WARNING: bad unlock balance detected!', 'lockdep'),
    ('WARNING: held lock freed!', 'lockdep'),
    ('WARNING: kworker/1:1/45 still has locks held!', 'lockdep'),
    ('[ BUG: Invalid wait context ]', 'lockdep'),
    ('INFO: trying to register non-static key.', 'lockdep'),
    ('WARNING: suspicious RCU usage', 'rcu-usage'),
    ('BUG: sleeping function called from invalid context at kernel/cpu.c:400', 'sleep-in-atomic'),
    ('BUG: scheduling while atomic: cpuhp/1/20/0x00000002', 'sleep-in-atomic'),
    ('BUG: using smp_processor_id() in preemptible [00000000] code: kworker/u8:1/45',
     'preemptible'),
    ('refcount_t: underflow; use-after-free.', 'refcount'),
    ('refcount_t: saturated; leaking memory.', 'refcount'),
    ('list_add corruption. prev->next should be next (ffff8880), but was ffff8881. '
     '(prev=ffff8882).', 'list-corruption'),
    ('list_del corruption, ffff8880->next is LIST_POISON1 (dead000000000100)',
     'list-corruption'),
    ('ODEBUG: free active (active state 0) object: ffff888 object type: timer_list hint: '
     'f+0x0/0x10', 'odebug'),
    ('kmemleak: 3 new suspected memory leaks (see /sys/kernel/debug/kmemleak)', 'kmemleak'),
    ('BUG: Bad page state in process swapper/0  pfn:12345', 'bad-page'),
    ('BUG: Bad rss-counter state mm:ffff888 type:MM_ANONPAGES val:-24', 'bad-page'),
    ('BUG: kernel NULL pointer dereference, address: 0000000000000010', 'page-fault'),
    ('BUG: unable to handle page fault for address: ffffffffc0000000', 'page-fault'),
    ('Unable to handle kernel NULL pointer dereference at virtual address 0000000000000010',
     'page-fault'),
    ('Unable to handle kernel paging request at virtual address ffff800008000000',
     'page-fault'),
    ('BUG: TASK stack guard page was hit at ffffc90000a0ff78 (stack is ffffc90000a10000..)',
     'stack-overflow'),
    ('Oops: general protection fault, probably for non-canonical address '
     '0xdffffc0000000001: 0000 [#1] PREEMPT SMP KASAN NOPTI', 'gpf'),
    ('general protection fault: 0000 [#1] SMP', 'gpf'),
    ('Oops: divide error: 0000 [#1] PREEMPT SMP NOPTI', 'divide-error'),
    ('divide error: 0000 [#1] SMP', 'divide-error'),
    ('Oops: invalid opcode: 0000 [#1] PREEMPT SMP NOPTI', 'invalid-opcode'),
    ('PANIC: double fault, error_code: 0x0', 'double-fault'),
    ('kernel BUG at drivers/misc/lkdtm/bugs.c:86!', 'bug'),
    ('Oops: Oops: 0002 [#1] PREEMPT SMP NOPTI', 'oops'),
    ('Oops: 0000 [#1] PREEMPT SMP', 'oops'),
    ('Internal error: Oops: 0000000096000005 [#1] PREEMPT SMP', 'oops'),
    ('Internal error: Oops - BUG: 00000000f2000800 [#1] PREEMPT SMP', 'oops'),
    ('BUG kmalloc-64 (Tainted: G    B): Poison overwritten', 'slab'),
    ('WARNING: CPU: 1 PID: 42 at kernel/cpu.c:2299 cpuhp_reserve_state+0x5e/0x80', 'warning'),
    ('WARNING: CPU: 0 PID: 1 at cpuhp_reserve_state+0x5e/0x80', 'warning'),
    ('WARNING: at kernel/cpu.c:2299 cpuhp_reserve_state+0x5e/0x80()', 'warning'),
    ('WARNING: kernel/cpu.c:2299 at cpuhp_reserve_state+0x5e/0x80, CPU#1: swapper/1', 'warning'),
    ('BUG: workqueue leaked atomic, lock or RCU: kworker/1:1[45]', 'sleep-in-atomic'),
    ('BUG: MAX_LOCKDEP_KEYS too low!', 'bug'),
    # Kinds and wordings of syzkaller's table (pkg/report/linux.go), each
    # line as the source named in reports.KINDS prints it.
    ('BUG: spinlock lockup suspected on CPU#0, swapper/0/1', 'spinlock'),
    ('BUG: rwlock wrong owner on CPU#1, kworker/1:1/45, ffffffff82a5b0b0', 'spinlock'),
    ('unregister_netdevice: waiting for lo to become free. Usage count = 2', 'netdev-refcount'),
    ('VFS: Busy inodes after unmount of tmpfs (tmpfs)', 'vfs'),
    ('VFS: Close: file count is 0 (f_op=ext4_file_operations)', 'vfs'),
    ("WARNING: kernel stack regs at 00000000a1b2c3d4 in kworker/1:1:45 has bad 'bp' value "
     '0000000000000000', 'stack-unwind'),
    ('WARNING: kernel stack frame pointer at 00000000a1b2c3d4 in sh:1 has bad value '
     '0000000000000001', 'stack-unwind'),
    ('rust_kernel: panicked at rust/kernel/sync/arc.rs:222:9:', 'rust-panic'),
    ('divide_error: 0000 [#1] PREEMPT SMP KASAN', 'divide-error'),
    ('Kernel BUG at cpuhp_invoke_callback+0x1e/0x40 [verbose debug info unavailable]', 'bug'),
    ('BUG: Kernel NULL pointer dereference on read at 0x00000010', 'page-fault'),
    ('BUG: Unable to handle kernel data access on write at 0xc000000000001234', 'page-fault'),
    ('Unable to handle kernel access to user memory outside uaccess routines at virtual '
     'address 0000000000001000', 'page-fault'),
    ('BUG: Bad page cache in process sh  pfn:12345', 'bad-page'),
    ('BUG: non-zero pgtables_bytes on freeing mm: 4096', 'bad-page'),
    ('BUG: workqueue leaked lock or atomic: kworker/1:1/0x00000000/45', 'sleep-in-atomic'),
    ('BUG: using __this_cpu_add() in preemptible [00000000] code: sh/1', 'preemptible'),
    ("INFO: task syz-executor.0:1234 can't die for more than 143 seconds.", 'hung-task'),
    ('WARNING: [CPU: 1] kernel/cpu.c:2299 at cpuhp_reserve_state+0x5e/0x80', 'warning'),
    ('BUG kmalloc-64: Poison overwritten', 'slab'),
    ('INFO: Freed in cpuhp_kunit_free+0x12/0x30 age=12 cpu=1 pid=45', 'slab'),
    ('kmemleak: unreferenced object 0xffff888003a3c000 (size 64):', 'kmemleak'),
    ('BUG: memory leak', 'kmemleak'),
)

# Real lines of kernels and machines that are not reports: each was a false
# alarm of the word-matching check before 1067cc5, or is printed at boot.
HARMLESS = (
    'Spectre V2 : WARNING: Unprivileged eBPF is enabled with eIBRS on, data leaks possible '
    'via Spectre v2 BHB attacks!',
    'WARNING: The mand mount option has been deprecated and',
    'XFS (loop4): WARNING: Reset corrupted AGFL on AG 0. 1 blocks leaked. Please unmount and '
    'run xfs_repair.',
    'traps: a.out[1234] general protection fault ip:401136 sp:7ffc2e8 error:0 in a.out[401000+1000]',
    'traps: a.out[1235] trap divide error ip:401136 sp:7ffc2e8 error:0 in a.out[401000+1000]',
    'traps: a.out[1236] trap invalid opcode ip:401136 sp:7ffc2e8 error:0 in a.out[401000+1000]',
    'ODEBUG: Out of memory. ODEBUG disabled',
    'ODEBUG: selftest passed',
    'ODEBUG: 10 of 10 active objects replaced',
    'rcu: RCU lockdep checking is enabled.',
    ' MAX_LOCKDEP_SUBCLASSES:  8',
    'Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar',
    'kmemleak: Kernel memory leak detector initialized (mem pool available: 15692)',
    'kmemleak: Automatic memory scanning thread started',
    'ACPI: BIOS WARNING: table has a bad checksum',
    'i915 0000:00:02.0: [drm] *ERROR* Oops, something failed',
    'EXT4-fs warning (device sda1): ext4_end_bio: I/O error 10 writing to inode',
    'pcieport 0000:00:1c.0: AER: Corrected error received: 0000:00:1c.0',
    'x86/cpu: SGX disabled by BIOS.',
    'UBSAN is enabled',
    'hung_task: 120 seconds timeout',
    'NMI watchdog: Enabled. Permanently consumes one hw-PMU counter.',
    'watchdog: Disabling watchdog on nohz_full cores by default',
    'INFO: NMI handler (perf_event_nmi_handler) took too long to run: 1.234 msecs',
    'MDS: Vulnerable: Clear CPU buffers attempted, no microcode',
    'Kernel command line: panic=-1 oops=panic console=ttyS0',
    'test_bpf: #12 check: missing ret PASS',
    '    # cpuhp_rollback_undo: BUG: nothing, this is a KUnit diagnostic',
    'H4sIAAAAAAAAA+3OOopsQ0kBQ==',
    # What syzkaller's table lists as not reports, that could look like ours.
    'WARNING: workqueue cpumask: online intersect > possible intersect',
    'WARNING: kernel not compiled with CPU_SRSO.',
    'WARNING: See https://kernel.org/doc/html/latest/admin-guide/hw-vuln/srso.html for '
    'mitigation options.',
    'INFO: Stall ended before state dump start',
    'INFO: recovery required on readonly filesystem.',
    'EFI stub: WARNING: Failed to measure data for event 1: 0x800000000000000e',
    'kmemleak: Not scanning unknown object at 0xffff888003a3c000',
    'Unknown kernel command line parameters "Booting the kernel.", will be passed to user '
    'space.',
)


def kinds(lines: List[str]) -> List[str]:
    return [f.kind for f in hygiene.check(lines) if f.why == hygiene.KERNEL_REPORT]


class KindTest(unittest.TestCase):
    def test_each_head_has_its_kind(self) -> None:
        for line, kind in HEADS:
            with self.subTest(line=line):
                k = reports.kind_of(line)
                self.assertIsNotNone(k)
                assert k is not None
                self.assertEqual(k.name, kind)

    def test_every_kind_is_tested(self) -> None:
        self.assertEqual({k.name for k in reports.KINDS}, {kind for _, kind in HEADS})

    def test_harmless_lines_are_not_reports(self) -> None:
        for line in HARMLESS:
            with self.subTest(line=line):
                self.assertIsNone(reports.kind_of(reports.strip_prefix(line)))
                self.assertEqual(hygiene.check([line]), [])

    def test_fatal_kinds(self) -> None:
        fatal = {k.name for k in reports.KINDS if k.fatal}
        self.assertIn('panic', fatal)
        self.assertIn('oops', fatal)
        self.assertNotIn('warning', fatal)
        self.assertNotIn('kasan', fatal)


class PrefixTest(unittest.TestCase):
    WARN = 'WARNING: CPU: 1 PID: 42 at kernel/cpu.c:2299 cpuhp_reserve_state+0x5e/0x80'

    def test_console_prefixes(self) -> None:
        for prefix in ('[    1.234567] ', '[    1.234567][    T1] ', '[ 1234.000001][  C0] ',
                       '<4>[    1.234567] ', '[Fri Dec  4 16:28:11 2026] ',
                       'Dec 04 16:28:11 host kernel: ', 'Dec  4 16:28:11 host kernel: ',
                       'Dec  4 16:28:11 host kernel: [    1.234567] ',
                       '2026-12-04T16:28:11+0000 host kernel: ',
                       '2026-12-04T16:28:11.123456+01:00 host kernel: ',
                       'kern  :warn  : [    1.234567] ', '<4>'):
            with self.subTest(prefix=prefix):
                self.assertEqual(reports.strip_prefix(prefix + self.WARN), self.WARN)
                self.assertEqual(kinds([prefix + self.WARN]), ['warning'])
                # The message's own indentation (KTAP nesting) is kept.
                self.assertEqual(reports.strip_prefix(prefix + '    ok 1 a'), '    ok 1 a')

    def test_a_message_is_not_a_prefix(self) -> None:
        for line in ('    # cpuhp_x: state 3: up', 'clocksource: Switched to clocksource tsc',
                     'smpboot: CPU 3 is now offline'):
            self.assertEqual(reports.strip_prefix(line), line)


class GroupTest(unittest.TestCase):
    def test_lead_and_its_warning_are_one_report(self) -> None:
        lines = ['------------[ cut here ]------------', 'refcount_t: underflow; use-after-free.',
                 'WARNING: CPU: 1 PID: 1 at lib/refcount.c:28 refcount_warn_saturate+0x9c/0x110',
                 'Call Trace:', '---[ end trace 0000000000000000 ]---']
        self.assertEqual(kinds(lines), ['refcount'])

    def test_null_dereference_and_its_oops(self) -> None:
        lines = ['BUG: kernel NULL pointer dereference, address: 0000000000000000',
                 '#PF: supervisor write access in kernel mode', '#PF: error_code(0x0002)',
                 'PGD 0 P4D 0', 'Oops: Oops: 0002 [#1] PREEMPT SMP NOPTI',
                 '---[ end trace 0000000000000000 ]---',
                 'Kernel panic - not syncing: Fatal exception']
        self.assertEqual(kinds(lines), ['page-fault', 'panic'])

    def test_kernel_bug_and_its_invalid_opcode(self) -> None:
        lines = ['------------[ cut here ]------------', 'kernel BUG at lib/list_debug.c:32!',
                 'Oops: invalid opcode: 0000 [#1] PREEMPT SMP NOPTI']
        self.assertEqual(kinds(lines), ['bug'])

    def test_two_reports_close_together_stay_two(self) -> None:
        lines = [PrefixTest.WARN, 'BUG: sleeping function called from invalid context at x.c:1',
                 PrefixTest.WARN]
        self.assertEqual(kinds(lines), ['warning', 'sleep-in-atomic', 'warning'])


class LockdepOffTest(unittest.TestCase):
    def test_lockdep_switched_off(self) -> None:
        for line in ('INFO: lockdep is turned off.', 'BUG: MAX_LOCKDEP_KEYS too low!',
                     'BUG: MAX_LOCK_DEPTH too low!', 'Disabling lock debugging due to kernel taint',
                     '[   12.3] turning off the locking correctness validator.'):
            with self.subTest(line=line):
                found = hygiene.check(['ok 1 a', line])
                self.assertIn(hygiene.LOCKDEP_OFF, [f.why for f in found])

    def test_once_per_console(self) -> None:
        found = hygiene.check(['INFO: lockdep is turned off.'] * 3)
        self.assertEqual([f.why for f in found], [hygiene.LOCKDEP_OFF])


class RebootTest(unittest.TestCase):
    BANNER = ('Linux version 6.12.118 (root@vm) (gcc (Debian 12.2.0-14+deb12u1) 12.2.0) '
              '#1 SMP PREEMPT_DYNAMIC')

    def test_second_banner(self) -> None:
        found = hygiene.check([self.BANNER, 'ok 1 a', '[    0.000000] ' + self.BANNER])
        self.assertEqual([(f.why, f.lineno) for f in found], [(hygiene.REBOOT, 3)])

    def test_one_banner(self) -> None:
        self.assertEqual(hygiene.check([self.BANNER, 'Command line: Linux version 6']), [])


if __name__ == '__main__':
    unittest.main()
