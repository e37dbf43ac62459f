"""The kernel's reports: one table of their formats, and a console scanner.

A report is what the kernel prints when it catches itself misbehaving: a
WARN(), a BUG, an oops, a sanitizer, lockdep, a stall or lockup detector.
Each has a fixed head line, written by one place in the kernel; the table
below lists them, with the source that prints each, so that a line that
merely contains a word ('WARNING:', 'Oops', 'general protection fault')
is not taken for one. Every pattern is anchored at the start of the
message, after the console's prefixes (timestamps, caller ids, dmesg -T,
journalctl and syslog prefixes: strip_prefix()); a message that a
subsystem prefixes with its own name ('Spectre V2 : WARNING: ...',
'XFS (loop4): WARNING: ...', 'traps: a.out[12] general protection
fault ip:...' from a user-space crash) is therefore not a report, with the
exceptions the kernel's own pr_fmt() adds (watchdog:, rcu:, kmemleak:).

The formats were taken from the 6.12 and 6.1 sources (lib/bug.c and
kernel/panic.c for WARN/BUG, arch/x86/kernel/{traps,dumpstack}.c and
arch/x86/mm/fault.c, arch/arm64/kernel/traps.c and arch/arm64/mm/fault.c,
mm/kasan/report.c, mm/kfence/report.c, kernel/kcsan/report.c,
mm/kmsan/report.c, lib/ubsan.c, kernel/locking/lockdep.c,
kernel/rcu/tree_stall.h, kernel/hung_task.c, kernel/watchdog*.c,
kernel/workqueue.c, lib/refcount.c, lib/list_debug.c, lib/debugobjects.c,
mm/kmemleak.c, kernel/sched/core.c, mm/slub.c, mm/memory.c) and checked
against how syzkaller's pkg/report reads Linux consoles (the same anchored
heads; its list of harmless lines that look like reports).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterable, List, Optional, Pattern, Sequence, Tuple


@dataclasses.dataclass(frozen=True)
class Kind:
    name: str           # the report's kind, as verdict.json and JUnit say it
    fatal: bool         # the task (oops class) or the whole kernel (panic) dies
    head: Pattern[str]  # the head line, anchored at the message's start
    source: str         # what prints it


def _k(name: str, fatal: bool, head: str, source: str) -> Kind:
    return Kind(name, fatal, re.compile(head), source)


# The order matters: the first kind whose head matches names the report, so
# the specific 'BUG: KASAN:' comes before the generic 'BUG:'.
KINDS: Tuple[Kind, ...] = (
    _k('panic', True, r'Kernel panic - not syncing: ', 'kernel/panic.c panic()'),
    _k('kasan', False, r'BUG: KASAN: ', 'mm/kasan/report.c'),
    _k('kfence', False, r'BUG: KFENCE: ', 'mm/kfence/report.c'),
    _k('kcsan', False, r'BUG: KCSAN: ', 'kernel/kcsan/report.c'),
    _k('kmsan', False, r'BUG: KMSAN: ', 'mm/kmsan/report.c'),
    _k('ubsan', False, r'UBSAN: (?:[\w-]+ in \S+|[\w /-]+ at \S+)', 'lib/ubsan.c ubsan_prologue()'),
    _k('soft-lockup', False, r'(?:watchdog: )?BUG: soft lockup - CPU#\d+ stuck',
       'kernel/watchdog.c watchdog_timer_fn()'),
    _k('hard-lockup', False,
       r'(?:NMI )?watchdog: (?:CPU ?\d+: )?Watchdog detected hard LOCKUP on cpu \d+',
       'kernel/watchdog.c watchdog_hardlockup_check(), kernel/watchdog_perf.c'),
    _k('workqueue-lockup', False, r'BUG: workqueue lockup - pool',
       'kernel/workqueue.c wq_watchdog_timer_fn()'),
    _k('hung-task', False, r'INFO: task \S+:\d+ blocked for more than \d+ seconds\.',
       'kernel/hung_task.c check_hung_task()'),
    _k('rcu-stall', False,
       r"(?:rcu: )?INFO: rcu_\w+ (?:self-)?detected (?:expedited )?stalls?\b",
       'kernel/rcu/tree_stall.h, kernel/rcu/tasks.h'),
    _k('lockdep', False,
       r'WARNING: (?:possible (?:circular locking dependency|recursive locking|irq lock '
       r'inversion dependency) detected|inconsistent lock state|\w+-safe -> \w+-unsafe lock '
       r'order detected|bad unlock balance detected!|held lock freed!|\S+/\d+ still has '
       r'locks held!|Nested lock was not taken|bad contention detected!|lock held when '
       r'returning to user space!|possible deadlock)|\[ BUG: Invalid wait context \]'
       r'|INFO: trying to register non-static key\.'
       r'|BUG: (?:key \S+ has not been registered!|looking up invalid subclass)',
       'kernel/locking/lockdep.c'),
    _k('rcu-usage', False, r'WARNING: suspicious RCU usage',
       'kernel/locking/lockdep.c lockdep_rcu_suspicious()'),
    _k('sleep-in-atomic', False,
       r'BUG: (?:sleeping function called from invalid context|scheduling while atomic'
       r'|workqueue leaked atomic, lock or RCU)',
       'kernel/sched/core.c __might_resched(), __schedule_bug(); kernel/workqueue.c'),
    _k('preemptible', False, r'BUG: using (?:__this_cpu_\w+\(\)|smp_processor_id\(\)) in '
       r'preemptible', 'lib/smp_processor_id.c check_preemption_disabled()'),
    _k('refcount', False,
       r'refcount_t: (?:saturated|addition on 0|underflow|decrement hit 0);',
       'lib/refcount.c refcount_warn_saturate()'),
    _k('list-corruption', False, r'(?:h?list_(?:add|del)|list_bl_\w+) corruption[.,]',
       'lib/list_debug.c'),
    _k('odebug', False, r'ODEBUG: \w+ \S+ \(active state \d+\)',
       'lib/debugobjects.c debug_print_object()'),
    _k('kmemleak', False, r'kmemleak: \d+ new suspected memory leaks',
       'mm/kmemleak.c kmemleak_scan()'),
    _k('bad-page', False, r'BUG: Bad (?:page state|page map|rss-counter state)',
       'mm/page_alloc.c bad_page(), mm/memory.c print_bad_pte(), kernel/fork.c check_mm()'),
    _k('page-fault', True,
       r'BUG: (?:kernel NULL pointer dereference|unable to handle (?:page fault|kernel))'
       r'|Unable to handle kernel (?:NULL pointer dereference|paging request|execute|'
       r'read|write|access)',
       'arch/x86/mm/fault.c show_fault_oops(), arch/arm64/mm/fault.c die_kernel_fault()'),
    _k('stack-overflow', True,
       r'BUG: (?:TASK |IRQ |\w+ )?stack guard page was hit|kernel stack overflow'
       r'|Insufficient stack space to handle exception!',
       'arch/x86/kernel/traps.c handle_stack_overflow(), arch/arm64/kernel/traps.c'),
    _k('gpf', True, r'(?:Oops: )?general protection fault(?:, |: )',
       'arch/x86/kernel/traps.c exc_general_protection() (kernel mode)'),
    _k('divide-error', True, r'(?:Oops: )?divide error: [0-9a-f]{4}',
       'arch/x86/kernel/traps.c do_error_trap() (kernel mode)'),
    _k('invalid-opcode', True, r'(?:Oops: )?invalid opcode: [0-9a-f]{4}',
       'arch/x86/kernel/traps.c handle_invalid_op() (kernel mode)'),
    _k('double-fault', True, r'PANIC: double fault|(?:Oops: )?(?:double fault|stack segment): ',
       'arch/x86/kernel/traps.c exc_double_fault(), exc_stack_segment()'),
    _k('bug', True, r'kernel BUG at \S+:\d+!', 'lib/bug.c report_bug() for BUG()'),
    _k('oops', True, r'Oops(?: - \w+)?: |Internal error: ',
       'arch/x86/kernel/dumpstack.c __die(), arch/arm64/kernel/traps.c die()'),
    _k('slab', False, r'BUG [\w.:-]+ \([^)]*\): ', 'mm/slub.c slab_bug()'),
    _k('warning', False,
       r'WARNING: (?:CPU: \d+ PID: \d+ at |at )\S+|WARNING: [\w./-]+:\d+ at \S+',
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

# The console's own prefixes, stripped one after another from a line's
# start: a syslog priority, rsyslog/journalctl '<date> <host> kernel:',
# journalctl -o short-iso, dmesg -T's date, printk's timestamp and caller id,
# dmesg -x's facility and level.
PREFIXES = re.compile(
    r'(?:<\d{1,3}>'
    r'|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? '
    r'\S+ kernel: '
    r'|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:?\d\d|Z)? \S+ kernel: '
    r'|\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)'
    r' [ \d]\d \d\d:\d\d:\d\d \d{4}\] ?'
    r'|\[ *\d+\.\d+\] ?'
    r'|\[ *[TC]\d+\] ?'
    r'|\w+ *:\w+ *: )')
_TIMESTAMP_NEXT = re.compile(r'\[ *(?:\d+\.\d+|[TC]\d+)\]')


def strip_prefix(line: str) -> str:
    """@line without the console prefixes before the kernel's message.

    The message's own indentation (KTAP nesting) is kept: a prefix is one
    separator wide. dmesg -x's 'kern  :warn  : ' is taken only before a
    timestamp, where nothing else looks like it.
    """
    while True:
        m = PREFIXES.match(line)
        if not m:
            return line
        if m.group(0)[0].isalpha() and m.group(0).rstrip().endswith(':') \
                and 'kernel:' not in m.group(0) \
                and not _TIMESTAMP_NEXT.match(line, m.end()):
            return line
        line = line[m.end():]


def kind_of(message: str) -> Optional[Kind]:
    """The kind of report whose head @message (prefixes stripped) is, if any."""
    return next((k for k in KINDS if k.head.match(message)), None)


# A report whose specific head comes first and is followed by a generic one
# of its own, a few lines later with no end marker between: a lead-in
# message and its WARNING or BUG line (refcount_t, list corruption, ODEBUG),
# 'BUG: kernel NULL pointer dereference' and its 'Oops:', 'kernel BUG at'
# and its 'Oops: invalid opcode'. Any other head is a report of its own.
FOLLOWERS = {
    'refcount': ('warning',),
    'list-corruption': ('warning', 'bug', 'invalid-opcode', 'oops'),
    'odebug': ('warning',),
    'page-fault': ('oops',),
    'stack-overflow': ('oops', 'double-fault'),
    'bug': ('invalid-opcode', 'oops'),
    'ubsan': ('invalid-opcode', 'oops'),
}
MERGE_LINES = 6
END_MARKER = re.compile(r'---\[ end (?:trace|Kernel panic)')


@dataclasses.dataclass
class Report:
    lineno: int                 # 1-based console line of the first head
    kind: Kind
    heads: List[Tuple[int, str]]    # (lineno, message) of every head line it holds

    @property
    def line(self) -> str:
        return self.heads[0][1]


def scan(messages: Sequence[str], skip: Iterable[int] = ()) -> List[Report]:
    """The reports in @messages (console lines, prefixes stripped).

    @skip: 1-based line numbers not to read (the gcov dump's base64).
    """
    skipped = set(skip)
    out: List[Report] = []
    last_head = -MERGE_LINES - 1
    ended = True
    for n, msg in enumerate(messages, 1):
        if n in skipped:
            continue
        if END_MARKER.search(msg):
            ended = True
            continue
        k = kind_of(msg)
        if k is None:
            continue
        if out and not ended and n - last_head <= MERGE_LINES and \
                k.name in FOLLOWERS.get(out[-1].kind.name, ()):
            out[-1].heads.append((n, msg))
        else:
            out.append(Report(n, k, [(n, msg)]))
        last_head, ended = n, False
    return out
