"""Consoles of other kernels and machines: each test imitates one format.

Each console below is crafted after the source that prints it (named in
reports.KINDS, or syzkaller's table in pkg/report/linux.go for what its
consoles look like), the way a console captured on another machine or
from another kernel version than 6.1/6.12 has it: the console prefixes
of other loggers, the older wordings of the same reports, kinds our own
runs have not met, a firmware banner in the middle of a console. Each
says what it imitates; each is judged as make judge judges a console
(hygiene.check(), judging.judge_console()), and each report must come
out with its kind and its title.
"""

from __future__ import annotations

import unittest
from typing import List, Tuple

from cpuhpk import hygiene, reports, verdict
from tests import test_whole_console as whole

WARN = 'WARNING: CPU: 1 PID: 1234 at kernel/cpu.c:2299 cpuhp_reserve_state+0x5e/0x80'
WARN_BODY = ['Modules linked in:', 'CPU: 1 UID: 0 PID: 1234 Comm: kunit_try_catch Not tainted',
             'RIP: 0010:cpuhp_reserve_state+0x5e/0x80', 'Call Trace:', ' <TASK>',
             ' __cpuhp_setup_state_cpuslocked+0x1a0/0x2c0', ' </TASK>',
             '---[ end trace 0000000000000000 ]---']


def found(lines: List[str]) -> List[Tuple[str, str]]:
    """(kind, title) of each kernel report of @lines, as make judge finds them."""
    return [(f.kind, f.title) for f in hygiene.check(lines) if f.why == hygiene.KERNEL_REPORT]


class PrefixTest(unittest.TestCase):
    """The prefixes other consoles put before the kernel's own."""

    def test_cpu_context_caller_id(self) -> None:
        # A syzbot-style console (CONFIG_PRINTK_CALLER): KCSAN reports from
        # an interrupt, so its lines carry the CPU's caller id [    C1],
        # while the task's lines ([ T5120]) go on between them.
        console = [
            '[  214.102010][ T5120] cpuhp_kunit: cpu 1 -> state 120',
            '[  214.106285][    C1] ' + '=' * 66,
            '[  214.114479][    C1] BUG: KCSAN: data-race in cpuhp_thread_fun / cpuhp_kick_ap',
            '[  214.122717][    C1] ',
            '[  214.124989][    C1] write to 0xffff88807dd2f0a8 of 4 bytes by interrupt on cpu 0:',
            '[  214.132695][    C1]  cpuhp_kick_ap+0x6e/0x1a0',
            '[  214.137351][ T5120] cpuhp_kunit: cpu 1 -> state 121',
            '[  214.150000][    C1] read to 0xffff88807dd2f0a8 of 4 bytes by task 21 on cpu 1:',
            '[  214.160000][    C1]  cpuhp_thread_fun+0x4c/0x300',
            '[  214.170000][    C1] Reported by Kernel Concurrency Sanitizer on:',
            '[  214.190000][    C1] ' + '=' * 66]
        self.assertEqual(found(console),
                         [('kcsan', 'KCSAN: data-race in cpuhp_thread_fun / cpuhp_kick_ap')])

    def test_printk_messages_dropped_glued_in_front(self) -> None:
        # kernel/printk/printk.c console_unlock() of 3.x-5.9: "** %u printk
        # messages dropped ** " with no newline, the next message after it.
        console = ['[  123.456789] cpuhp_kunit: cpu 3 -> offline',
                   '** 2499 printk messages dropped ** [  123.567890] ' + WARN,
                   *WARN_BODY]
        self.assertEqual(found(console), [('warning', 'WARNING in cpuhp_reserve_state')])

    def test_timestamps_of_other_loggers_before_the_kernels(self) -> None:
        # What other loggers put before printk's own timestamp: syzkaller's
        # logs (2024/01/02 10:11:12), a serial logger's date and time with
        # or without brackets, a CI runner's ISO stamp, grabserial's
        # [time delta], journalctl -o short-monotonic's '<host> kernel:', a
        # getty prompt the next message was glued to.
        for prefix in ('2024/01/02 10:11:12 [  123.456789][ T1234] ',
                       '[2024-01-02 10:11:12.345] [  123.456789] ',
                       '2024-01-02 10:11:12,345 [  123.456789] ',
                       '10:11:12.345 [  123.456789] ',
                       '[10:11:12] [  123.456789] ',
                       '2024-01-02T10:11:12.1234567Z [  123.456789] ',
                       '[0.123456 0.000123] [  123.456789] ',
                       '[  123.456789] vm-ci kernel: ',
                       'Jan  2 10:11:12 [  123.456789] ',
                       'syzkaller login: [  123.456789][ T1234] '):
            with self.subTest(prefix=prefix):
                self.assertEqual(reports.strip_prefix(prefix + WARN), WARN)
                self.assertEqual(found([prefix + WARN, *WARN_BODY]),
                                 [('warning', 'WARNING in cpuhp_reserve_state')])

    def test_a_message_that_only_looks_stamped_keeps_its_text(self) -> None:
        for line in ('    # cpuhp_x: 10:11:12 is not a prefix here',
                     'rtc_cmos 00:02: setting system clock to 2024-01-02T10:11:12 UTC',
                     'ok 1 cpuhp_rollback_cycles'):
            self.assertEqual(reports.strip_prefix(line), line)


HUNG_IOWAIT = [
    'INFO: task kworker/u8:3:123 blocked in I/O wait for more than 122 seconds.',
    '      Not tainted 7.1.0 #1',
    '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
    'task:kworker/u8:3    state:D stack:0     pid:123   tgid:123   ppid:2      flags:0x00004000',
    'Workqueue: writeback wb_workfn (flush-8:0)',
    'Call Trace:', ' <TASK>', ' __schedule+0x3c4/0xc10', ' schedule+0x27/0xa0',
    ' io_schedule+0x46/0x70', ' folio_wait_bit_common+0x12f/0x300',
    ' folio_wait_writeback+0x2b/0x80', ' __filemap_fdatawait_range+0x7f/0x100',
    ' filemap_write_and_wait_range+0x8a/0xc0', ' writeback_single_inode+0x5c/0x1a0',
    ' wb_workfn+0x3a/0x400', ' process_one_work+0x1a4/0x5d0', ' </TASK>']


class WordingTest(unittest.TestCase):
    """The same reports in the words of other kernel versions than 6.1/6.12."""

    def test_hung_task_in_io_wait(self) -> None:
        # Mainline's hung_task_info() since v7.1: 'blocked%s for more than',
        # " in I/O wait" for a task waiting in iowait.
        self.assertEqual(found(HUNG_IOWAIT),
                         [('hung-task', 'INFO: task hung in writeback_single_inode')])

    def test_hung_task_in_io_wait_turns_a_run_red(self) -> None:
        # The same, printed while a case of today's recorded run ran.
        v = whole.judge(whole.inserted(HUNG_IOWAIT))
        self.assertEqual([(p.category, p.kind, p.title) for p in v.problems],
                         [('kernel-log', 'hung-task', 'INFO: task hung in writeback_single_inode')])

    def test_ubsan_undefined_behaviour(self) -> None:
        # lib/ubsan.c ubsan_prologue() of 4.5-5.x: 'UBSAN: Undefined behaviour in %s:%d:%d'.
        console = ['=' * 80, 'UBSAN: Undefined behaviour in kernel/cpu.c:1234:20',
                   "shift exponent 64 is too large for 64-bit type 'long unsigned int'",
                   'CPU: 1 PID: 80 Comm: kunit_try_catch Not tainted 5.4.0 #1',
                   'Call Trace:', ' dump_stack+0x5d/0x80', ' ubsan_epilogue+0x9/0x40',
                   ' __ubsan_handle_shift_out_of_bounds+0x10a/0x1a0',
                   ' cpuhp_invoke_callback+0x1e/0x40', '=' * 80]
        self.assertEqual(found(console),
                         [('ubsan', 'UBSAN: undefined-behaviour in cpuhp_invoke_callback')])

    def test_lockdep_bracketed_headers(self) -> None:
        # kernel/lockdep.c until 4.9: each header in brackets, the lock's
        # acquisition as ' (lock){+.+.+.}, at: [<address>] func+0x../0x..'.
        circular = ['=' * 54, '[ INFO: possible circular locking dependency detected ]',
                    '4.4.0 #1 Not tainted', '-' * 54,
                    'cpuhp/1/20 is trying to acquire lock:',
                    ' (cpu_hotplug.lock){+.+.+.}, at: [<ffffffff81085cf7>] '
                    'get_online_cpus+0x37/0x80', '', 'but task is already holding lock:',
                    ' (&pool->lock){-.-...}, at: [<ffffffff810a1234>] process_one_work+0x1a4/0x5d0']
        unlock = ['=' * 37, '[ BUG: bad unlock balance detected! ]', '4.4.0 #1 Not tainted',
                  '-' * 37, 'sh/1 is trying to release lock (cpu_hotplug.lock) at:',
                  '[<ffffffff81085d2a>] put_online_cpus+0x2a/0x70',
                  'but there are no more locks to release!']
        rcu = ['=' * 31, '[ INFO: suspicious RCU usage. ]', '4.6.0 #321 Not tainted', '-' * 31,
               'kernel/cpu.c:1234 suspicious rcu_dereference_check() usage!',
               'stack backtrace:', 'Call Trace:', ' [<ffffffff81c8f6cd>] dump_stack+0xc1/0x124',
               ' [<ffffffff81085d2a>] cpuhp_invoke_callback+0x1e/0x40']
        self.assertEqual(found(circular), [('lockdep', 'possible deadlock in get_online_cpus')])
        self.assertEqual(found(unlock),
                         [('lockdep', 'WARNING: bad unlock balance in put_online_cpus')])
        self.assertEqual(found(rcu),
                         [('rcu-usage', 'WARNING: suspicious RCU usage in cpuhp_invoke_callback')])

    def test_lockdep_bug_headers(self) -> None:
        # kernel/locking/lockdep.c of 4.10-4.14 ('BUG:', no brackets; in
        # syzkaller's table).
        for head, title in (('BUG: held lock freed!', 'WARNING: held lock freed in cpuhp_free'),
                            ('BUG: sh/1 still has locks held!',
                             'WARNING: still has locks held in cpuhp_free')):
            with self.subTest(head=head):
                self.assertEqual(found(['=' * 20, head, '-' * 20,
                                        ' #0:  (cpu_hotplug.lock){+.+.+.}, at: '
                                        '[<ffffffff81085cf7>] cpuhp_free+0x37/0x80']),
                                 [('lockdep', title)])

    def test_slub_info_lines(self) -> None:
        # mm/slub.c until 5.13: the lines under a SLUB report's head all
        # began with 'INFO:' (print_track(), print_page_info(),
        # print_trailer(), check_bytes_and_report()).
        body = ['INFO: 0xffff88003a3f9a00-0xffff88003a3f9a03 @offset=2560. First byte 0x0 '
                'instead of 0x6b',
                'INFO: Allocated in cpuhp_kunit_record+0x12/0x30 age=12 cpu=1 pid=45',
                '\tkmem_cache_alloc_trace+0x1a/0x1c0', '\tcpuhp_kunit_record+0x12/0x30',
                'INFO: Freed in cpuhp_kunit_forget+0x12/0x30 age=3 cpu=1 pid=45',
                '\tkfree+0x1a/0x1c0', '\tcpuhp_kunit_forget+0x12/0x30',
                'INFO: Slab 0xffffea0000e8fe40 objects=16 used=16 fp=0x          (null) '
                'flags=0x4080',
                'INFO: Object 0xffff88003a3f9a00 @offset=2560 fp=0xffff88003a3f9a40', '']
        with self.subTest(what='4.x, the taint in the head'):
            self.assertEqual(found(['=' * 77, 'BUG kmalloc-64 (Not tainted): Poison overwritten',
                                    '-' * 77, '', *body]),
                             [('slab', 'SLUB: Poison overwritten in kmalloc-64')])
        with self.subTest(what='2.6.x-3.x, no taint'):
            self.assertEqual(found(['=' * 77, 'BUG kmalloc-64: Poison overwritten', '-' * 77,
                                    '', *body]),
                             [('slab', 'SLUB: Poison overwritten in kmalloc-64')])
        with self.subTest(what='the head lost (messages dropped)'):
            self.assertEqual(found(body[2:]), [('slab', 'INFO: Freed in cpuhp_kunit_forget')])

    def test_kasan_older_titles(self) -> None:
        # mm/kasan/report.c of 4.0-4.3: 'BUG: KASan: %s in %pS at addr %p',
        # the bug type in words, 'Read of size %zu by task', then SLUB's
        # report of the object (object_err(): its own 'BUG <cache>' head).
        console = ['=' * 66,
                   'BUG: KASan: use after free in cpuhp_invoke_callback+0x1e/0x40 at addr '
                   'ffff88003a3f9a00',
                   'Read of size 8 by task cpuhp/1/20', '=' * 77,
                   'BUG kmalloc-64 (Not tainted): kasan: bad access detected', '-' * 77, '',
                   'Disabling lock debugging due to kernel taint',
                   'INFO: Allocated in cpuhp_kunit_record+0x12/0x30 age=12 cpu=1 pid=45',
                   'INFO: Freed in cpuhp_kunit_forget+0x12/0x30 age=3 cpu=1 pid=45',
                   'INFO: Object 0xffff88003a3f9a00 @offset=2560 fp=0xffff88003a3f9a40',
                   'CPU: 1 PID: 20 Comm: cpuhp/1 Tainted: G    B           4.3.0 #1',
                   'Call Trace:', ' [<ffffffff81c8f6cd>] dump_stack+0x44/0x55',
                   ' [<ffffffff81085d2a>] cpuhp_invoke_callback+0x1e/0x40']
        self.assertEqual(found(console),
                         [('kasan', 'KASAN: use-after-free Read in cpuhp_invoke_callback')])
        # 4.4-4.12: 'BUG: KASAN: use-after-free in ... at addr', 'Read of size N by task'.
        self.assertEqual(found(['BUG: KASAN: use-after-free in cpuhp_invoke_callback+0x1e/0x40 '
                                'at addr ffff88003a3f9a00',
                                'Read of size 8 by task cpuhp/1/20']),
                         [('kasan', 'KASAN: use-after-free Read in cpuhp_invoke_callback')])


class KindTest(unittest.TestCase):
    """Kinds of report the table did not have."""

    def test_kmemleak_unreferenced_object(self) -> None:
        # mm/kmemleak.c print_unreferenced() with kmemleak.verbose=1 (pr_fmt
        # 'kmemleak: ' on every line), then kmemleak_scan()'s summary.
        console = ['kmemleak: unreferenced object 0xffff888003a3c000 (size 64):',
                   'kmemleak:   comm "cpuhp/1", pid 20, jiffies 4294937330',
                   'kmemleak:   hex dump (first 32 bytes):',
                   'kmemleak:     00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ...',
                   'kmemleak:   backtrace (crc 5e0b1c3a):',
                   'kmemleak:     kmemleak_alloc+0x4a/0x80',
                   'kmemleak:     __kmalloc_cache_noprof+0x2b6/0x360',
                   'kmemleak:     cpuhp_kunit_record+0x12/0x30',
                   'kmemleak:     cpuhp_invoke_callback+0x1e/0x40',
                   'kmemleak: 1 new suspected memory leaks (see /sys/kernel/debug/kmemleak)']
        self.assertEqual(found(console), [('kmemleak', 'memory leak in cpuhp_kunit_record')])

    def test_syzkaller_memory_leak(self) -> None:
        # syzkaller's executor: 'BUG: memory leak', then the object as
        # /sys/kernel/debug/kmemleak lists it (symbolized frames).
        console = ['BUG: memory leak',
                   'unreferenced object 0xffff888109a4e000 (size 64):',
                   '  comm "syz-executor.0", pid 5091, jiffies 4294944586 (age 13.820s)',
                   '  hex dump (first 32 bytes):',
                   '    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................',
                   '  backtrace:',
                   '    [<00000000110a155a>] kmemleak_alloc_recursive '
                   'include/linux/kmemleak.h:42 [inline]',
                   '    [<00000000110a155a>] kmalloc_trace+0x26/0x60 mm/slab_common.c:1076',
                   '    [<0000000036e2d5c9>] cpuhp_kunit_record+0x12/0x30 kernel/cpu.c:100']
        self.assertEqual(found(console), [('kmemleak', 'memory leak in cpuhp_kunit_record')])

    def test_unregister_netdevice_waiting(self) -> None:
        # net/core/dev.c netdev_wait_allrefs_any(): a device whose references
        # never drop, every 10 s.
        console = ['unregister_netdevice: waiting for lo to become free. Usage count = 2',
                   'ref_tracker: netdev@ffff888012345678 has 1/1 users at',
                   '     __netdev_tracker_alloc include/linux/netdevice.h:4050 [inline]']
        self.assertEqual(found(console), [('netdev-refcount',
                                           'unregister_netdevice: waiting for DEV to become free')])

    def test_kinds_of_syzkallers_table(self) -> None:
        # One report each of the other kinds taken from syzkaller's table,
        # as the source named in reports.KINDS prints it.
        cases: List[Tuple[List[str], str, str]] = [
            (['BUG: spinlock lockup suspected on CPU#0, swapper/0/1',
              ' lock: cpuhp_lock+0x0/0x40, .magic: dead4ead, .owner: cpuhp/1/20, .owner_cpu: 1',
              'Call Trace:', ' dump_stack_lvl+0x5d/0x80', ' do_raw_spin_lock+0x1e/0x40',
              ' cpuhp_thread_fun+0x4c/0x300'],
             'spinlock', 'BUG: spinlock lockup suspected in cpuhp_thread_fun'),
            (["WARNING: kernel stack regs at 00000000a1b2c3d4 in sh:1 has bad 'bp' value "
              '0000000000000000'], 'stack-unwind',
             "WARNING: kernel stack regs has bad 'bp' value"),
            (['VFS: Busy inodes after unmount of tmpfs (tmpfs)'], 'vfs',
             'VFS: Busy inodes after unmount'),
            (['rust_kernel: panicked at rust/kernel/sync/arc.rs:222:9:',
              'attempt to subtract with overflow',
              '------------[ cut here ]------------',
              'kernel BUG at rust/helpers/bug.c:7!', 'Oops: invalid opcode: 0000 [#1] SMP',
              'RIP: 0010:rust_helper_BUG+0x8/0x10', 'Call Trace:',
              ' rust_begin_unwind+0x5a/0x90', ' _RNvCs_cpuhp_sample+0x30/0x50'],
             'rust-panic', 'attempt to subtract with overflow in _RNvCs_cpuhp_sample'),
            (['divide_error: 0000 [#1] PREEMPT SMP KASAN',
              'RIP: 0010:cpuhp_invoke_callback+0x1e/0x40'],
             'divide-error', 'divide error in cpuhp_invoke_callback'),
            (['BUG: workqueue leaked lock or atomic: kworker/1:1/0x00000000/45',
              '     last function: vmstat_update'],
             'sleep-in-atomic', 'BUG: workqueue leaked lock or atomic in vmstat_update'),
            (['BUG: Kernel NULL pointer dereference on read at 0x00000010',
              'NIP:  c000000000123456 LR: c000000000123400 CTR: 0000000000000000',
              'NIP [c000000000123456] cpuhp_invoke_callback+0x1e/0x40'],
             'page-fault', 'BUG: unable to handle kernel NULL pointer dereference'),
            (['Kernel BUG at cpuhp_invoke_callback+0x1e/0x40 [verbose debug info unavailable]',
              'Oops: invalid opcode: 0000 [#1] SMP'],
             'bug', 'kernel BUG in cpuhp_invoke_callback'),
            (["INFO: task syz-executor.0:1234 can't die for more than 143 seconds.",
              'Call Trace:', ' __schedule+0x3c4/0xc10', ' cpuhp_kunit_wait_down+0x1e/0x40'],
             'hung-task', "INFO: task can't die in cpuhp_kunit_wait_down"),
            (['BUG: non-zero pgtables_bytes on freeing mm: 4096'], 'bad-page',
             'BUG: non-zero pgtables_bytes on freeing mm'),
        ]
        for console, kind, title in cases:
            with self.subTest(head=console[0]):
                self.assertEqual(found(console), [(kind, title)])


class FirmwareBannerTest(unittest.TestCase):
    """A machine that reset prints its firmware's banner before the next kernel's."""

    BANNERS = ('SeaBIOS (version 1.16.2-debian-1.16.2-1)',
               'BdsDxe: loading Boot0001 "UEFI QEMU HARDDISK QM00001 " from PciRoot(0x0)',
               'EFI stub: Booting Linux Kernel...',
               'Booting the kernel (entry_offset: 0x0000000000000000).')

    def test_firmware_banner_in_the_middle_is_a_reboot(self) -> None:
        # SeaBIOS src/bootsplash.c, OVMF's BdsDxe, the EFI stub, the x86
        # decompressor: the console of a guest that reset during a case, the
        # second kernel's banner lost.
        for banner in self.BANNERS:
            with self.subTest(banner=banner):
                console = whole.lines()
                cut = console[:whole.at(console, whole.CASE)]
                v = whole.judge(cut + [banner])
                self.assertEqual([p.category for p in v.problems if p.category == 'reboot'],
                                 ['reboot'])
                self.assertIn('cpuhp_rollback', [p.name for p in v.problems
                                                 if p.category == 'crashed'])

    def test_banner_then_kernel_banner_is_one_reboot(self) -> None:
        linux = 'Linux version 6.12.118 (root@vm) (gcc 12.2.0) #1 SMP PREEMPT_DYNAMIC'
        for banner in self.BANNERS:
            with self.subTest(banner=banner):
                found_ = hygiene.check([banner, linux, 'ok 1 a', banner, linux, 'ok 1 a'])
                self.assertEqual([(f.why, f.lineno) for f in found_], [(hygiene.REBOOT, 4)])

    def test_firmware_before_the_first_boot_is_not_a_reboot(self) -> None:
        console = [self.BANNERS[0], self.BANNERS[2]] + whole.lines()
        self.assertTrue(whole.judge(console).ok)


class TitleTest(unittest.TestCase):
    """Titles of the recorded reports: what CI systems call them."""

    RECORDED = {
        'nonfatal': ['WARNING in lkdtm_WARNING', 'WARNING in lkdtm_WARNING_MESSAGE',
                     'WARNING: refcount bug in lkdtm_REFCOUNT_DEC_ZERO',
                     'BUG: corrupted list in lkdtm_CORRUPT_LIST_ADD',
                     'BUG: corrupted list in lkdtm_CORRUPT_LIST_DEL',
                     'UBSAN: array-index-out-of-bounds in lkdtm_ARRAY_BOUNDS',
                     'KASAN: slab-use-after-free Read in lkdtm_READ_AFTER_FREE',
                     'KASAN: slab-out-of-bounds Write in lkdtm_SLAB_LINEAR_OVERFLOW',
                     'KFENCE: use-after-free read in lkdtm_KFENCE_READ_AFTER_FREE'],
        'bug': ['kernel BUG in lkdtm_BUG'],
        'exception': ['general protection fault in lkdtm_EXCEPTION'],
        'write-ro': ['BUG: unable to handle kernel paging request in lkdtm_WRITE_RO'],
        'stack-guard': ['KASAN: vmalloc-out-of-bounds Read in lkdtm_STACK_GUARD_PAGE_LEADING',
                        'BUG: stack guard page was hit in lkdtm_STACK_GUARD_PAGE_LEADING'],
        'panic': ['kernel panic: dumptest'],
        'hung-task': ['INFO: task hung in lkdtm_HUNG_TASK'],
    }

    def test_recorded_reports(self) -> None:
        for name, titles in self.RECORDED.items():
            with self.subTest(recording=name):
                path = whole.DATA / 'reports' / f'{name}.log'
                self.assertEqual([t for _, t in found(path.read_text().splitlines())], titles)

    def test_a_title_names_no_address_cpu_or_line(self) -> None:
        for path in sorted((whole.DATA / 'reports').glob('*.log')):
            for _, title in found(path.read_text().splitlines()):
                with self.subTest(title=title):
                    self.assertNotRegex(title, r'0x[0-9a-f]|\+0x|CPU#?\d|PID|:\d+')

    def test_the_vmstat_race_of_the_debug_runs(self) -> None:
        # The known race (kunit/known-failures-6.12), on whichever case it lands.
        lines = (whole.DATA / 'vmstat_race_debug_console.log').read_text().splitlines()
        self.assertIn(('preemptible', 'BUG: using smp_processor_id() in preemptible code in '
                       'refresh_cpu_vm_stats'), found(lines))


class KeyTest(unittest.TestCase):
    """The same report in two cases is one finding; two reports are two."""

    def test_same_report_in_two_cases_has_one_key(self) -> None:
        report = [WARN, *WARN_BODY]
        console = whole.lines()
        first = whole.at(console, whole.CASE)
        second = whole.at(console, '    ok 1 cpuhp_rollback_up_ap_fails')
        console = console[:second] + report + console[second:first] + report + console[first:]
        v = whole.judge(console)
        logs = [p for p in v.problems if p.category == 'kernel-log']
        self.assertEqual(len({p.name for p in logs}), 2)
        self.assertEqual({p.title for p in logs}, {'WARNING in cpuhp_reserve_state'})
        self.assertEqual(len({p.key for p in logs}), 1)
        data = v.to_json({})['problems']
        self.assertEqual({(d['title'], d['key']) for d in data if d['category'] == 'kernel-log'},
                         {(logs[0].title, logs[0].key)})

    def test_failures_of_many_parameters_are_one_finding(self) -> None:
        blocks = ['# cpuhp_sweep_fail_fires: EXPECTATION FAILED at kernel/tests/x.c:461\n'
                  'Expected cpuhp_kunit_get_fail(cpu) == CPUHP_INVALID, but\n'
                  'cpuhp_kunit_get_fail(cpu) == 57 (0x39)']
        a = verdict.failure_title('cpuhp_sweep.cpuhp_sweep_fail_fires.57 sched:active', blocks[0])
        b = verdict.failure_title('cpuhp_sweep.cpuhp_sweep_fail_fires.12 mm/vmstat:online',
                                  blocks[0].replace('57 (0x39)', '12 (0xc)'))
        self.assertEqual(a, b)
        self.assertEqual(a, 'cpuhp_sweep.cpuhp_sweep_fail_fires: Expected '
                            'cpuhp_kunit_get_fail(cpu) == CPUHP_INVALID, but '
                            '(kernel/tests/x.c:461)')


if __name__ == '__main__':
    unittest.main()
