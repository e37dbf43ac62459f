"""The kernel's reports: one table of their formats, a console scanner.

A report is what the kernel prints when it catches itself misbehaving: a
WARN(), a BUG, an oops, a sanitizer, lockdep, a stall or lockup detector.
Each has a fixed head line, written by one place in the kernel; the table
below lists them, with the source that prints each, so that a line that
merely contains a word ('WARNING:', 'Oops', 'general protection fault')
is not taken for one. Every pattern is anchored at the start of the
message, after the console's prefixes (timestamps, caller ids, dmesg -T,
journalctl and syslog prefixes, the stamps a serial logger or CI adds:
strip_prefix()); a message that a subsystem prefixes with its own name
('Spectre V2 : WARNING: ...', 'XFS (loop4): WARNING: ...', 'traps:
a.out[12] general protection fault ip:...' from a user-space crash) is
therefore not a report, with the exceptions the kernel's own pr_fmt()
adds (watchdog:, rcu:, kmemleak:).

The formats were taken from the 6.12 and 6.1 sources (lib/bug.c and
kernel/panic.c for WARN/BUG, arch/x86/kernel/{traps,dumpstack}.c and
arch/x86/mm/fault.c, arch/arm64/kernel/traps.c and arch/arm64/mm/fault.c,
mm/kasan/report.c, mm/kfence/report.c, kernel/kcsan/report.c,
mm/kmsan/report.c, lib/ubsan.c, kernel/locking/lockdep.c,
kernel/rcu/tree_stall.h, kernel/hung_task.c, kernel/watchdog*.c,
kernel/workqueue.c, lib/refcount.c, lib/list_debug.c, lib/debugobjects.c,
mm/kmemleak.c, kernel/sched/core.c, mm/slub.c, mm/memory.c) and from
syzkaller's report parser (google/syzkaller pkg/report/linux.go, its table
of oops headers and the console prefixes it accepts), which reads consoles
of every kernel version since 4.x: the older wordings of the same reports
(lockdep's bracketed headers, 'BUG: KASan:', 'UBSAN: Undefined behaviour
in', SLUB's 'INFO:' lines) and the kinds it knows besides ours are in the
table with the source that printed them. Documentation/verdict.md lists
what of syzkaller's table was taken and what was left out, and why.

Every report the scanner finds gets its title (titles.py), the key two
runs or two jobs compare it by: 'WARNING in cpuhp_thread_fun'.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterable, List, Optional, Pattern, Sequence, Tuple

from cpuhpk import titles


@dataclasses.dataclass(frozen=True)
class Kind:
    name: str           # the report's kind, as verdict.json and JUnit say it
    fatal: bool         # the task (oops class) or the whole kernel (panic) dies
    head: Pattern[str]  # the head line, anchored at the message's start
    source: str         # what prints it
    # Kinds of report this line is a part of when it comes while one is open
    # (within PART_LINES of its last head, no end marker between): SLUB's
    # 'INFO:' lines of a SLUB or an old KASAN report, kmemleak's summary
    # after the objects it lists. Alone, the line is a report of its own.
    joins: Tuple[str, ...] = ()
    # Kinds whose head, within MERGE_LINES after this one, belongs to this
    # report (besides FOLLOWERS): syzkaller's 'BUG: memory leak' and the
    # kmemleak object it prints next.
    leads: Tuple[str, ...] = ()


def _k(name: str, fatal: bool, head: str, source: str, joins: Tuple[str, ...] = (),
       leads: Tuple[str, ...] = ()) -> Kind:
    return Kind(name, fatal, re.compile(head), source, joins, leads)


# The order matters: the first kind whose head matches names the report, so
# the specific 'BUG: KASAN:' comes before the generic 'BUG:'.
KINDS: Tuple[Kind, ...] = (
    _k('panic', True, r'Kernel panic - not syncing: ', 'kernel/panic.c panic()'),
    # 'KASan' and spaces in the bug type: 4.0-4.3 ('BUG: KASan: use after free in').
    _k('kasan', False, r'BUG: KAS(?:AN|an): ', 'mm/kasan/report.c'),
    _k('kfence', False, r'BUG: KFENCE: ', 'mm/kfence/report.c'),
    _k('kcsan', False, r'BUG: KCSAN: ', 'kernel/kcsan/report.c'),
    _k('kmsan', False, r'BUG: KMSAN: ', 'mm/kmsan/report.c'),
    _k('ubsan', False, r'UBSAN: (?:Undefined behaviour in \S+|[\w-]+ in \S+|[\w /-]+ at \S+)',
       'lib/ubsan.c ubsan_prologue() (4.5-5.x: "UBSAN: Undefined behaviour in")'),
    _k('soft-lockup', False, r'(?:watchdog: )?BUG: soft lockup - CPU#\d+ stuck',
       'kernel/watchdog.c watchdog_timer_fn()'),
    _k('hard-lockup', False,
       r'(?:NMI )?watchdog: (?:CPU ?\d+: )?Watchdog detected hard LOCKUP on cpu \d+',
       'kernel/watchdog.c watchdog_hardlockup_check(), kernel/watchdog_perf.c'),
    _k('workqueue-lockup', False, r'BUG: workqueue lockup - pool',
       'kernel/workqueue.c wq_watchdog_timer_fn()'),
    # 'blocked in I/O wait': mainline's hung_task_info() since v7.1 ('blocked%s for
    # more than', " in I/O wait" for a task in iowait); "can't die": the
    # debug patch of linux-next that syzkaller's table knows.
    _k('hung-task', False,
       r"INFO: task .+?:\d+ (?:blocked(?: in I/O wait)?|can't die) for more than \d+ seconds\.",
       'kernel/hung_task.c check_hung_task(), hung_task_info()'),
    _k('rcu-stall', False,
       r"(?:rcu: )?INFO: rcu_\w+ (?:self-)?detected (?:expedited )?stalls?\b",
       'kernel/rcu/tree_stall.h, kernel/rcu/tasks.h'),
    # Until 4.9 lockdep wrote its headers in brackets ('[ INFO: possible
    # circular locking dependency detected ]', '[ BUG: bad unlock balance
    # detected! ]'); 4.10-4.14 wrote some as 'BUG:' without them.
    _k('lockdep', False,
       r'WARNING: (?:possible (?:circular locking dependency|recursive locking|irq lock '
       r'inversion dependency) detected|inconsistent lock state|\w+-safe -> \w+-unsafe lock '
       r'order detected|bad unlock balance detected!|held lock freed!|\S+/\d+ still has '
       r'locks held!|Nested lock was not taken|bad contention detected!|lock held when '
       r'returning to user space!|possible deadlock)|\[ BUG: Invalid wait context \]'
       r'|\[ (?:INFO|BUG): (?:possible (?:circular locking dependency|recursive locking|irq '
       r'lock inversion dependency) detected|inconsistent lock state|\S+-safe -> \S+-unsafe '
       r'lock order detected|bad unlock balance detected!|held lock freed!|\S+/\d+ still has '
       r'locks held!|lock held when returning to user space!|bad contention detected!|Nested '
       r'lock was not taken) \]'
       r'|INFO: trying to register non-static key\.'
       r'|BUG: (?:key \S+ has not been registered!|looking up invalid subclass'
       r'|bad unlock balance detected!|held lock freed!|\S+/\d+ still has locks held!'
       r'|lock held when returning to user space!)',
       'kernel/locking/lockdep.c (kernel/lockdep.c until 3.15)'),
    _k('rcu-usage', False, r'WARNING: suspicious RCU usage|\[ INFO: suspicious RCU usage\. \]',
       'kernel/locking/lockdep.c lockdep_rcu_suspicious()'),
    _k('sleep-in-atomic', False,
       r'BUG: (?:sleeping function called from invalid context|scheduling while atomic'
       r'|workqueue leaked atomic, lock or RCU|workqueue leaked lock or atomic)',
       'kernel/sched/core.c __might_resched(), __schedule_bug(); kernel/workqueue.c '
       'process_one_work() (6.1: "leaked lock or atomic")'),
    _k('preemptible', False, r'BUG: using \w+\(\) in preemptible',
       'lib/smp_processor_id.c check_preemption_disabled()'),
    _k('spinlock', False,
       r'BUG: (?:spinlock|rwlock) (?:lockup suspected|already unlocked|recursion|cpu recursion'
       r'|bad magic|wrong owner|wrong CPU|trylock failure on UP)',
       'kernel/locking/spinlock_debug.c spin_dump(), rwlock_bug()'),
    _k('refcount', False,
       r'refcount_t: (?:saturated|addition on 0|underflow|decrement hit 0);',
       'lib/refcount.c refcount_warn_saturate()'),
    _k('list-corruption', False, r'(?:h?list_(?:add|del)|list_bl_\w+) corruption[.,]',
       'lib/list_debug.c'),
    _k('odebug', False, r'ODEBUG: \w+ \S+ \(active state \d+\)',
       'lib/debugobjects.c debug_print_object()'),
    # 'unreferenced object': with kmemleak.verbose=1 (or a kernel that prints
    # each leak); 'BUG: memory leak': what syzkaller's executor prints before
    # it copies /sys/kernel/debug/kmemleak to the console.
    _k('kmemleak', False, r'(?:kmemleak: )?unreferenced object 0x[0-9a-f]+ \(size \d+\):',
       'mm/kmemleak.c print_unreferenced()'),
    _k('kmemleak', False, r'BUG: memory leak$', "syzkaller's executor (its table: 'BUG: "
       "memory leak')", leads=('kmemleak',)),
    _k('kmemleak', False, r'kmemleak: \d+ new suspected memory leaks',
       'mm/kmemleak.c kmemleak_scan()', joins=('kmemleak',)),
    _k('bad-page', False,
       r'BUG: (?:Bad (?:page state|page map|page cache|rss-counter state)'
       r'|non-zero (?:nr_ptes|nr_pmds|pgtables_bytes) on freeing mm)',
       'mm/page_alloc.c bad_page(), mm/memory.c print_bad_pte(), mm/filemap.c, '
       'kernel/fork.c check_mm()'),
    _k('page-fault', True,
       r'BUG: (?:kernel NULL pointer dereference|unable to handle (?:page fault|kernel))'
       r'|Unable to handle kernel (?:NULL pointer dereference|paging request|execute|'
       r'read|write|access)'
       r'|BUG: (?:Kernel NULL pointer dereference|Unable to handle kernel (?:data access'
       r'|instruction fetch|unaligned access))',
       'arch/x86/mm/fault.c show_fault_oops(), arch/arm64/mm/fault.c die_kernel_fault(), '
       'arch/powerpc/mm/fault.c __bad_page_fault()'),
    _k('stack-overflow', True,
       r'BUG: (?:TASK |IRQ |\w+ )?stack guard page was hit|kernel stack overflow'
       r'|Insufficient stack space to handle exception!',
       'arch/x86/kernel/traps.c handle_stack_overflow(), arch/arm64/kernel/traps.c'),
    _k('gpf', True, r'(?:Oops: )?general protection fault(?:, |: )',
       'arch/x86/kernel/traps.c exc_general_protection() (kernel mode)'),
    # 'divide_error:': the name 5.8's IDTENTRY conversion (9d06c4027f21) gave
    # the trap for a while, as syzkaller's table has it.
    _k('divide-error', True, r'(?:Oops: )?divide(?: |_)error: [0-9a-f]{4}',
       'arch/x86/kernel/traps.c do_error_trap() (kernel mode)'),
    _k('invalid-opcode', True, r'(?:Oops: )?invalid opcode: [0-9a-f]{4}',
       'arch/x86/kernel/traps.c handle_invalid_op() (kernel mode)'),
    _k('double-fault', True, r'PANIC: double fault|(?:Oops: )?(?:double fault|stack segment): ',
       'arch/x86/kernel/traps.c exc_double_fault(), exc_stack_segment()'),
    _k('bug', True, r'kernel BUG at \S+:\d+!|Kernel BUG at \S+',
       'lib/bug.c report_bug() for BUG() ("Kernel BUG at": without DEBUG_BUGVERBOSE)'),
    _k('rust-panic', True, r'rust_kernel: panicked at ',
       'rust/kernel/lib.rs panic handler (pr_emerg!, then BUG())'),
    _k('oops', True, r'Oops(?: - \w+)?: |Internal error: ',
       'arch/x86/kernel/dumpstack.c __die(), arch/arm64/kernel/traps.c die()'),
    # Without the taint: 2.6.x-3.x ('BUG kmalloc-64: Poison overwritten').
    _k('slab', False, r'BUG [\w.:-]+(?: \([^)]*\))?: \S', 'mm/slub.c slab_bug()'),
    # SLUB's lines under its head until 5.13 ('INFO: Freed in', 'INFO: Object
    # ... @offset'); old KASAN printed them too: a part of either report, or
    # a report whose head was lost.
    _k('slab', False,
       r'INFO: (?:(?:Allocated|Freed) in \S+ age=|Object 0x[0-9a-f]+ @offset=\d+'
       r'|Slab 0x[0-9a-f]+ objects=\d+|0x[0-9a-f]+-0x[0-9a-f]+ @offset=\d+\. First byte)',
       'mm/slub.c print_track(), print_trailer(), print_page_info(), check_bytes_and_report() '
       '(until 5.13)', joins=('slab', 'kasan')),
    _k('netdev-refcount', False, r'unregister_netdevice: waiting for \S+ to become free',
       'net/core/dev.c netdev_wait_allrefs_any()'),
    _k('vfs', False, r'VFS: (?:Busy inodes after unmount of \S+|Close: file count is 0)',
       'fs/super.c generic_shutdown_super(), fs/open.c filp_flush() (older: filp_close())'),
    _k('stack-unwind', False,
       r'WARNING: kernel stack (?:regs|frame pointer) at \S+ in \S+ has bad',
       'arch/x86/kernel/unwind_frame.c update_stack_state() (frame-pointer unwinder)'),
    _k('warning', False,
       r'WARNING: (?:CPU: \d+ PID: \d+ at |at )\S+|WARNING: [\w./-]+:\d+ at \S+'
       r'|WARNING: \[[^\]]*\] [\w./-]+:\d+ at \S+',
       'kernel/panic.c __warn() (WARN(), WARN_ON(), WARN_ONCE())'),
    _k('bug', False, r'BUG: ', 'any other BUG: report'),
)

# Lockdep switched itself off: a debug kernel that lost its checking. Not a
# report of a bug by itself (what turned it off may have been), but a run on
# such a kernel checked less than it says: its own problem (verdict.py).
LOCKDEP_OFF = re.compile(
    r'INFO: lockdep is turned off\.|BUG: MAX_(?:LOCKDEP_\w+|LOCK_DEPTH|STACK_TRACE_ENTRIES)'
    r' too low!|Disabling lock debugging due to kernel taint'
    r'|turning off the locking correctness validator\.')

# A second boot in the same console: the guest (or machine) rebooted.
BOOT_BANNER = re.compile(r'Linux version \d+\.\d+\S* \(')
# What the firmware and the kernel's own loader print before the kernel's
# banner: after a boot, the machine reset (a watchdog, a triple fault, a
# panic with panic=N) even when the console lost the next banner.
# SeaBIOS src/bootsplash.c enable_vga_console(); EDK2/OVMF
# MdeModulePkg/Universal/BdsDxe/BdsEntry.c; the EFI stub
# drivers/firmware/efi/libstub/efi-stub-entry.c; the x86 decompressor
# arch/x86/boot/compressed/misc.c (syzkaller: 'unexpected kernel reboot').
FIRMWARE_BANNER = re.compile(
    r'SeaBIOS \(version |\W{0,4}BdsDxe: (?:loading|starting) Boot[0-9A-F]{4} '
    r'|EFI stub: Booting Linux Kernel|Booting the kernel\b')

# The console's own prefixes, stripped one after another from a line's
# start. Stamps: printk's time, dmesg -T's date, syslog's and a serial
# logger's or CI's date and time (2024-01-02T10:11:12.345Z, 2024/01/02
# 10:11:12 as syzkaller's logs, 10:11:12, grabserial's [12.3 0.1]); after a
# stamp, journalctl's and syslog's '<host> kernel: '. Then printk's caller
# id ([T1], [C4]), a syslog priority, what 3.x-5.9 printed glued before the
# next message when the console lost some ('** 2499 printk messages
# dropped ** ', kernel/printk/printk.c console_unlock()), a getty prompt
# the next message was glued to ('syzkaller login: ', as syzkaller's
# console reader accepts), and dmesg -x's facility and level.
_MONTH = r'(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)'
_STAMP = re.compile(
    r'(?:\[ *\d+\.\d+\] ?'
    r'|\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ' + _MONTH + r' [ \d]\d \d\d:\d\d:\d\d \d{4}\] ?'
    r'|' + _MONTH + r' [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? '
    r'|\[?\d{4}[-/]\d\d[-/]\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]? '
    r'|\[?\d\d:\d\d:\d\d(?:[.,]\d+)?\]? '
    r'|\[ *\d+\.\d+ +\d+\.\d+\] ?)')
_HOST = re.compile(r'[\w.-]+ kernel: ')
_OTHER = re.compile(r'(?:\[ *[TC]\d+\] ?|<\d{1,3}>|\*\* \d+ printk messages dropped \*\* ?'
                    r'|\S+ login: (?=\[ *\d+\.\d+\]))')
_DMESG_X = re.compile(r'\w+ *:\w+ *: (?=\[ *(?:\d+\.\d+|[TC]\d+)\])')


def strip_prefix(line: str) -> str:
    """@line without the console prefixes before the kernel's message.

    The message's own indentation (KTAP nesting) is kept: a prefix is one
    separator wide. dmesg -x's 'kern  :warn  : ' is taken only before a
    timestamp, '<host> kernel: ' only after one, where nothing else looks
    like them.
    """
    stamped = False
    while line:
        m = _STAMP.match(line)
        if m:
            line, stamped = line[m.end():], True
            continue
        m = _OTHER.match(line) or (_HOST.match(line) if stamped else None) \
            or _DMESG_X.match(line)
        if not m:
            return line
        line, stamped = line[m.end():], False
    return line


def kind_of(message: str) -> Optional[Kind]:
    """The kind of report whose head @message (prefixes stripped) is, if any."""
    # Every head starts with one of these characters: most lines are
    # decided without trying the table.
    if not message or message[0] not in _FIRST:
        return None
    m = _ANY.match(message)
    return KINDS[int(m.lastgroup[1:])] if m and m.lastgroup else None


_FIRST = frozenset('KBUwNIr[WhlOkugdisPV')
# The table as one pattern, tried in its order: the first kind that matches
# names the report, in one pass (the heads have no groups of their own).
_ANY = re.compile('|'.join(f'(?P<k{i}>{k.head.pattern})' for i, k in enumerate(KINDS)))


# A report whose specific head comes first and is followed by a generic one
# of its own, a few lines later with no end marker between: a lead-in
# message and its WARNING or BUG line (refcount_t, list corruption, ODEBUG),
# 'BUG: kernel NULL pointer dereference' and its 'Oops:', 'kernel BUG at'
# and its 'Oops: invalid opcode', an old KASAN report and the SLUB object
# report it printed. Any other head is a report of its own.
FOLLOWERS = {
    'refcount': ('warning',),
    'list-corruption': ('warning', 'bug', 'invalid-opcode', 'oops'),
    'odebug': ('warning',),
    'page-fault': ('oops',),
    'stack-overflow': ('oops', 'double-fault'),
    'bug': ('invalid-opcode', 'oops'),
    'ubsan': ('invalid-opcode', 'oops'),
    'rust-panic': ('bug', 'invalid-opcode', 'oops'),
    'kasan': ('slab',),
}
MERGE_LINES = 6
PART_LINES = 40
# Lines of a report read for its title (its stack), at most.
BODY_LINES = 150
END_MARKER = re.compile(r'---\[ end (?:trace|Kernel panic)')


@dataclasses.dataclass
class Report:
    lineno: int                 # 1-based console line of the first head
    kind: Kind
    heads: List[Tuple[int, str]]    # (lineno, message) of every head line it holds
    end: int = 0                # 1-based line after its text (next report, end marker)
    title: str = ''             # titles.title(): what CI systems would call it

    @property
    def line(self) -> str:
        return self.heads[0][1]


def _part_of(k: Kind, report: Report, n: int, last_head: int, ended: bool) -> bool:
    if ended:
        return False
    if (k.name in FOLLOWERS.get(report.kind.name, ()) or k.name in report.kind.leads) \
            and n - last_head <= MERGE_LINES:
        return True
    return report.kind.name in k.joins and n - last_head <= PART_LINES


def scan(messages: Sequence[str], skip: Iterable[int] = ()) -> List[Report]:
    """The reports in @messages (console lines, prefixes stripped), titled.

    @skip: 1-based line numbers not to read (the gcov dump's base64).
    """
    skipped = set(skip)
    out: List[Report] = []
    last_head = -PART_LINES - 1
    ended = True
    for n, msg in enumerate(messages, 1):
        if n in skipped:
            continue
        if '---[ end ' in msg and END_MARKER.search(msg):
            if out and not ended and not out[-1].end:
                out[-1].end = n + 1
            ended = True
            continue
        k = kind_of(msg)
        if k is None:
            continue
        if out and _part_of(k, out[-1], n, last_head, ended):
            out[-1].heads.append((n, msg))
        else:
            if out and not out[-1].end:
                out[-1].end = n
            out.append(Report(n, k, [(n, msg)]))
        last_head, ended = n, False
    for r in out:
        r.end = min(r.end or len(messages) + 1, r.lineno + BODY_LINES)
        r.title = titles.title(r.kind.name, r.line, messages[r.lineno - 1:r.end - 1])
    return out
