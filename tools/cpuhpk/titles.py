"""The title of a kernel report, the way kernel CI systems title them.

'KASAN: slab-use-after-free Read in cpuhp_invoke_callback', 'WARNING in
cpuhp_thread_fun', 'INFO: task hung in smpboot_thread_fn': a title names
the bug, not the occasion: no address, CPU, PID, time or line number, the
function where the report's own code is skipped (dump_stack, __warn, the
sanitizer's runtime, the lock primitives); the same report in two runs has
the same title, which is the key two runs or two jobs are compared by.
The titles, and the frames they skip, follow syzkaller's report parser
(google/syzkaller pkg/report/linux.go); a report's kind is reports.py's.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, List, Pattern, Sequence

_SYM = r'([A-Za-z_][\w.$]*)\+0x[0-9a-f]+(?:/0x[0-9a-f]+)?'
# A frame of a stack trace (x86, arm64, kmemleak's backtrace, old kernels'
# '[<ffffffff81234567>] foo+0x12/0x30'); '? ' marks an unreliable one.
FRAME = re.compile(r'\s*(?:\[<?(?:0x)?[0-9a-f]+>?\]\s*){0,2}(\? )?\s*(?:\d+:)?' + _SYM)
# Where the task was: x86's RIP (not a user-space one), arm64's pc, ppc's NIP.
RIP = re.compile(r'(?:RIP: [0-9a-f]{4}:|pc : |PC is at |NIP[: ] *|IP: )\s*'
                 r'(?:\[<[0-9a-f]+>\]\s*){0,2}' + _SYM)
CALL_TRACE = re.compile(r'\s*(?:Call [Tt]race:|Backtrace:|backtrace(?: \(crc [0-9a-f]+\))?:)')
AT = re.compile(r'.*\bat: (?:\[<[0-9a-f]+>\]\s*)?' + _SYM)
# Frames that are the reporting machinery, not the code that misbehaved
# (from syzkaller's skip list, the kinds this table has).
SKIP = re.compile(
    r'__sanitizer|__asan|kasan|__msan|kmsan|kcsan_setup_watchpoint|ubsan|check_memory_region'
    r'|print_address_description|print_report|panic|invalid_op|report_bug|fixup_bug|handle_bug'
    r'|do_error|_trap$|do_trap|show_stack|dump_stack|dump_backtrace|warn_slowpath|__warn'
    r'|lockdep|lock_acquire|lock_release|lock_class|mark_lock|(?:reacquire|mark)_held_locks'
    r'|print_usage_bug|print_unlock|spin_lock|spin_trylock|spin_unlock|_raw_|^__pfx_'
    r'|^asm_exc_|^exc_|^el1h_64_sync|^el1_abort|^do_mem_abort|do_(?:kernel|translation)_fault'
    r'|__might_resched|__might_sleep|^might_sleep|__might_fault|^refcount_|^kref_'
    r'|^printk|^_printk|vprintk|stack_trace_save|arch_stack_walk|^__schedule_bug'
    r'|^check_preemption_disabled|^debug_smp_processor_id|^__this_cpu_preempt_check')
# Syscall wrappers a stall's function is named without (syzkaller's list).
_WRAPPERS = re.compile(r'^(?:__x64_sys_|__ia32_sys_|__arm64_sys_|__do_sys_|__se_sys_|ksys_'
                       r'|__x64_|__ia32_|__arm64_|SyS_|SYSC_|compat_SyS_|compat_SYSC_)')
# Where a stall's loop was entered from: the frame before one of these.
_STALL_ANCHORS = re.compile(
    r'process_one_work|do_syscall_|do_fast_syscall_|netif_receive_skb|do_softirq'
    r'|call_timer_fn|_run_timers|run_timer_softirq|run_ksoftirqd|smpboot_thread_fn|^kthread$'
    r'|start_secondary|cpu_startup_entry|ret_from_fork|vfs_write|vfs_read|vfs_ioctl'
    r'|__do_fault|handle_mm_fault|do_page_fault|task_work_run|smp_call_function')
_HUNG_SKIP = ('sched', '_lock', '_slowlock', 'down', 'rwsem', 'completion', 'kthread', 'wait',
              'synchronize', 'context_switch', '__switch_to', 'cancel_delayed_work')
_HEX = re.compile(r'\b(?:0x)?[0-9a-f]{6,}\b|\b0x[0-9a-f]+\b|\(____ptrval____\)')
_SRC_PATH = re.compile(r'(?:\S*/)?(?:linux-[^/\s]+/)(\S+)')


def _fn(name: str) -> str:
    """A function's name as titles use it: no .isra.0/.cold, no syscall wrapper."""
    return _WRAPPERS.sub('', name.split('.')[0])


def _frames(body: Sequence[str], start: int = 0) -> List[str]:
    """The reliable frames of @body's stack traces from line @start, in order."""
    out: List[str] = []
    for line in body[start:]:
        m = FRAME.match(line)
        if m and not m.group(1):
            out.append(_fn(m.group(2)))
    return out


def _index(body: Sequence[str], pattern: Pattern[str], start: int = 0) -> int:
    return next((i for i in range(start, len(body)) if pattern.match(body[i])), -1)


def _first(frames: Sequence[str], skip: Sequence[str] = ()) -> str:
    """The first frame that is not reporting machinery nor in @skip."""
    for f in frames:
        if not SKIP.search(f) and not any(s in f for s in skip):
            return f
    return ''


def _rip(body: Sequence[str]) -> str:
    for line in body:
        m = RIP.match(line)
        if m:
            return _fn(m.group(1))
    return ''


def _stack(body: Sequence[str], skip: Sequence[str] = (), rip: bool = True) -> str:
    """The function a report is about: where the task was (RIP, pc) unless
    that is reporting machinery, else the first frame of its call trace."""
    start = _index(body, CALL_TRACE)
    frames = ([_rip(body)] if rip else []) + _frames(body, max(start, 0))
    return _first([f for f in frames if f], skip)


def _at(body: Sequence[str], after: str, skip: Sequence[str] = ()) -> str:
    """The function of the first 'at: FUNC+0x' line or frame (lockdep) after
    the line with @after."""
    begin = next((i for i, ln in enumerate(body) if after in ln), 0)
    for line in body[begin:]:
        m = AT.match(line)
        f = FRAME.match(line) if not m else None
        name = m.group(1) if m else f.group(2) if f and not f.group(1) else ''
        if name and not SKIP.search(name) and not any(s in name for s in skip):
            return _fn(name)
    return ''


def _in(what: str, func: str) -> str:
    return f'{what} in {func}' if func else what


def _scrub(text: str) -> str:
    """@text without what changes from one run to the next: addresses, offsets."""
    text = re.sub(_SYM, lambda m: _fn(m.group(1)), text)
    return re.sub(r'\s+', ' ', _HEX.sub('X', text)).strip()


def _src(path: str) -> str:
    """A source file as the tree names it ('/root/.../linux-6.12.118/kernel/cpu.c'
    -> 'kernel/cpu.c'), without line and column."""
    path = path.split(':')[0]
    m = _SRC_PATH.fullmatch(path)
    return m.group(1) if m else path


def _hang(body: Sequence[str]) -> str:
    """The function a hung task waits in (syzkaller's: rtnl_lock and the
    synchronize_*() calls by name, else the first that is not a wait)."""
    frames = _frames(body, max(_index(body, CALL_TRACE), 0))
    for f in frames:
        if 'rtnl_lock' in f:
            return f
        if any(s in f for s in ('synchronize_rcu', 'synchronize_srcu', 'synchronize_net',
                                'synchronize_sched')):
            return 'synchronize_rcu'
    return _first(frames, _HUNG_SKIP)


def _stall(body: Sequence[str]) -> str:
    """Where a stalled CPU loops: the frame before the first entry point
    (syzkaller's stall extractor), from the interrupt that caught it."""
    irq = next((i for i, ln in enumerate(body)
                if 'apic_timer_interrupt' in ln or 'el1h_64_irq' in ln), -1)
    rip = _rip(body[irq:]) if irq >= 0 else _rip(body)
    frames = ([rip] if rip else []) + _frames(body, irq + 1 if irq >= 0 else
                                              max(_index(body, CALL_TRACE), 0))
    frames = [f for f in frames if 'apic_timer_interrupt' not in f and not SKIP.search(f)]
    if not frames:
        return ''
    prev = frames[0]
    for f in frames:
        if _STALL_ANCHORS.search(f):
            return prev
        prev = f
    return frames[0]


_LOCKDEP_TITLES = (
    ('circular locking dependency', 'possible deadlock', 'is trying to acquire lock'),
    ('recursive locking', 'possible deadlock', 'is trying to acquire lock'),
    ('irq lock inversion', 'possible deadlock', 'just changed the state of lock'),
    ('-unsafe lock order', 'possible deadlock', 'is trying to acquire'),
    ('inconsistent lock state', 'inconsistent lock state', 'takes'),
    ('bad unlock balance', 'WARNING: bad unlock balance', 'is trying to release lock'),
    ('held lock freed', 'WARNING: held lock freed', 'held lock freed'),
    ('still has locks held', 'WARNING: still has locks held', 'still has locks held'),
    ('returning to user space', 'WARNING: lock held when returning to user space',
     'leaving the kernel with locks still held'),
    ('bad contention', 'WARNING: bad contention', 'contention'),
)


def _lockdep(head: str, body: Sequence[str]) -> str:
    for words, what, after in _LOCKDEP_TITLES:
        if words in head:
            return _in(what, _at(body, after, ('process_one_work', 'flush_workqueue',
                                               'drain_workqueue', 'destroy_workqueue')))
    if 'Nested lock' in head:
        return _in('WARNING: nested lock was not taken', _stack(body))
    if 'Invalid wait context' in head:
        return _in('WARNING: locking bug', _stack(body, ('lock_sock', 'release_sock')))
    if 'non-static key' in head:
        return _in('INFO: trying to register non-static key',
                   _stack(body, ('stack', 'lock', 'IRQ'), rip=False))
    return _scrub(head)


# WARN()s in files whose WARNs are about their callers (syzkaller's titles).
_WARN_FILES = (
    ('lib/debugobjects.c', 'WARNING: ODEBUG bug', ('debug_', 'rcu', 'hrtimer_', 'timer_',
                                                   'work_', 'percpu_', 'vunmap', 'vfree',
                                                   '__free_', 'kobject_')),
    ('mm/usercopy.c', 'WARNING: bad usercopy', ('usercopy', '__check')),
    ('lib/kobject.c', 'WARNING: kobject bug', ('kobject_',)),
    ('fs/proc/generic.c', 'WARNING: proc registration bug', ('proc_',)),
    ('lib/refcount.c', 'WARNING: refcount bug', ('refcount', 'kobject_')),
    ('kernel/locking/lockdep.c', 'WARNING: locking bug', ('lock_sock', 'release_sock')),
)
_WARN_FILE = re.compile(r'(\S+\.(?:c|h|S|rs)):\d+')


def _warning(head: str, body: Sequence[str]) -> str:
    path = _WARN_FILE.search(head)
    sym = re.search(_SYM, head)
    src = _src(path.group(1)) if path else ''
    for file, what, skip in _WARN_FILES:
        if src == file:
            return _in(what, _stack(body, skip))
    return _in('WARNING', _fn(sym.group(1)) if sym else _stack(body))


def _kasan(head: str, body: Sequence[str]) -> str:
    m = re.match(r'BUG: KAS(?:AN|an): (.+?) (?:in|on address) (\S*)', head)
    if not m:
        return 'KASAN: ' + _scrub(head.split(':', 2)[-1])
    what = m.group(1).replace(' ', '-')
    sym = re.match(_SYM, m.group(2))
    access = next((a.group(1) for a in (re.match(r'(Read|Write) (?:of size|at addr)', ln)
                                        for ln in body[:12]) if a), '')
    if what in ('double-free-or-invalid-free', 'double-free', 'invalid-free'):
        return _in('KASAN: invalid-free', _stack(body, ('slab_', 'kfree', 'vunmap', 'vfree'),
                                                rip=False) or (sym and _fn(sym.group(1))) or '')
    func = _fn(sym.group(1)) if sym else ''
    return _in(' '.join(w for w in ('KASAN:', what, access) if w), func)


def _ubsan(head: str, body: Sequence[str]) -> str:
    m = re.match(r'UBSAN: (Undefined behaviour|[\w /-]+?) (?:in|at) (\S+)', head)
    if not m:
        return _scrub(head)
    what = m.group(1).lower().replace(' ', '-')
    func = _stack(body, ('overflow',), rip=False)
    if not func:
        sym = re.match(_SYM, m.group(2))
        func = _fn(sym.group(1)) if sym else _src(m.group(2))
    return _in(f'UBSAN: {what}', func)


def _panic(head: str, body: Sequence[str]) -> str:
    msg = head.split('not syncing: ', 1)[-1].strip()
    m = re.match(r'stack-protector: Kernel stack is corrupted in: (\S+)', msg)
    if m:
        sym = re.match(_SYM, m.group(1))
        return _in('kernel panic: stack is corrupted',
                   _fn(sym.group(1)) if sym else _stack(body, ('stack_chk',), rip=False))
    if msg.startswith('corrupted stack end'):
        return _in('kernel panic: corrupted stack end', _stall(body))
    if msg.startswith('kernel stack overflow'):
        return _in('kernel stack overflow', _stall(body))
    if msg.startswith("Couldn't open N_TTY ldisc"):
        return "kernel panic: Couldn't open N_TTY ldisc"
    return 'kernel panic: ' + _scrub(msg)


def _slab(head: str, body: Sequence[str]) -> str:
    m = re.match(r'BUG ([\w.:-]+?)(?: \([^)]*\))?: (.*)', head)
    if m:
        what = _scrub(m.group(2))
        if what.startswith('Object already free'):
            return 'BUG: Object already free'
        return f'SLUB: {what} in {m.group(1)}'
    m = re.match(r'INFO: (Allocated|Freed) in ' + _SYM, head)
    if m:
        return f'INFO: {m.group(1)} in {_fn(m.group(2))}'
    return 'SLUB: object report (its head line lost)'


def _bug(head: str, body: Sequence[str]) -> str:
    if head.startswith(('kernel BUG at', 'Kernel BUG at')):
        where = head.split(' at ', 1)[1]
        if where.startswith('mm/usercopy.c'):
            return _in('BUG: bad usercopy', _stack(body, ('usercopy', '__check'), rip=False))
        if where.startswith('lib/list_debug.c'):
            return _in('BUG: corrupted list', _stack(body, ('list_',)))
        sym = re.match(_SYM, where)
        return _in('kernel BUG', _stack(body, ('skb_',)) or (_fn(sym.group(1)) if sym else
                                                             _src(where.rstrip('!'))))
    m = re.match(r'BUG: Dentry .* still in use \(\d+\) \[(unmount) of (\S+)', head)
    if m:
        return f'BUG: Dentry still in use [{m.group(1)} of {m.group(2)}]'
    return _scrub(head.split(' in process ')[0].split(' on CPU#')[0])


def _sleep(head: str, body: Sequence[str]) -> str:
    if 'leaked' in head:
        last = next((m.group(1) for m in (re.search(r'last function: ' + r'([\w.]+)', ln)
                                          for ln in body[:4]) if m), '')
        return _in('BUG: workqueue leaked lock or atomic', _fn(last) if last else '')
    if 'scheduling while atomic' in head:
        return _in('BUG: scheduling while atomic', _stack(body, ('schedule',), rip=False))
    return _in('BUG: sleeping function called from invalid context',
               _stack(body, ('might_sleep', 'might_fault'), rip=False))


def _preemptible(head: str, body: Sequence[str]) -> str:
    m = re.match(r'BUG: using (\w+\(\)) in preemptible', head)
    what = f'BUG: using {m.group(1) if m else "?"} in preemptible code'
    caller = next((c.group(1) for c in (re.match(r'caller is ' + _SYM, ln) for ln in body[:4])
                   if c), '')
    return _in(what, _fn(caller) if caller else _stack(
        body, ('preempt', 'debug_', 'processor_id', 'this_cpu'), rip=False))


def _kmemleak(head: str, body: Sequence[str]) -> str:
    body = [ln[len('kmemleak:'):] if ln.startswith('kmemleak:') else ln for ln in body]
    start = _index(body, CALL_TRACE)
    if start < 0:
        return 'memory leak'
    return _in('memory leak', _first(_frames(body, start), (
        'kmemleak', 'mmap', 'kmem', 'slab', 'alloc', 'create_object', 'idr_get',
        'list_lru_init', 'kasprintf', 'kvasprintf', 'pcpu_create', 'strdup', 'strndup',
        'memdup')))


def _page_fault(head: str, body: Sequence[str]) -> str:
    func = _stack(body)
    if 'NULL pointer' in head:
        return _in('BUG: unable to handle kernel NULL pointer dereference', func)
    if 'access to user memory' in head:
        return _in('BUG: unable to handle kernel access to user memory', func)
    return _in('BUG: unable to handle kernel paging request', func)


Titler = Callable[[str, Sequence[str]], str]


def _fixed(text: str) -> Titler:
    return lambda head, body: text


def _with_func(text: str, skip: Sequence[str] = (), rip: bool = True) -> Titler:
    return lambda head, body: _in(text, _stack(body, skip, rip))


def _rust(head: str, body: Sequence[str]) -> str:
    msg = next((ln.strip() for ln in body[1:3] if ln.strip()), 'panicked')
    return _in(_scrub(msg), _stack(body, ('rust_begin_unwind', 'panic'), rip=False))


def _bad_page(head: str, body: Sequence[str]) -> str:
    m = re.match(r'BUG: (Bad [\w-]+ \w+|non-zero \w+ on freeing mm)', head)
    return f'BUG: {m.group(1)}' if m else _scrub(head)


_TITLERS: Dict[str, Titler] = {
    'panic': _panic,
    'kasan': _kasan,
    'kfence': lambda head, body: _scrub(head[len('BUG: '):]),
    'kcsan': lambda head, body: _scrub(head[len('BUG: '):]),
    'kmsan': lambda head, body: _scrub(head[len('BUG: '):]),
    'ubsan': _ubsan,
    'soft-lockup': lambda head, body: _in('BUG: soft lockup', _stall(body)),
    'hard-lockup': lambda head, body: _in('watchdog: hard LOCKUP', _stall(body)),
    'workqueue-lockup': _fixed('BUG: workqueue lockup'),
    'hung-task': lambda head, body: (
        _in("INFO: task can't die", _stack(body, ('schedule',), rip=False))
        if "can't die" in head else _in('INFO: task hung', _hang(body))),
    'rcu-stall': lambda head, body: _in('INFO: rcu detected stall', _stall(body)),
    'lockdep': _lockdep,
    'rcu-usage': _with_func('WARNING: suspicious RCU usage', ('rcu', 'kmem', 'slab'), False),
    'sleep-in-atomic': _sleep,
    'preemptible': _preemptible,
    'spinlock': lambda head, body: _in(
        ' '.join(head.split(' on CPU#')[0].split()[:4]).rstrip(','),
        _stack(body, ('spin_', '_lock', '_unlock'), rip=False)),
    'refcount': _with_func('WARNING: refcount bug', ('refcount', 'kobject_')),
    'list-corruption': _with_func('BUG: corrupted list', ('list_',)),
    'odebug': _with_func('WARNING: ODEBUG bug', _WARN_FILES[0][2]),
    'kmemleak': _kmemleak,
    'bad-page': _bad_page,
    'page-fault': _page_fault,
    'stack-overflow': lambda head, body: _in(
        'kernel stack overflow' if 'stack overflow' in head or 'Insufficient' in head
        else 'BUG: stack guard page was hit', _stack(body)),
    'gpf': _with_func('general protection fault'),
    'divide-error': _with_func('divide error'),
    'invalid-opcode': _with_func('invalid opcode'),
    'double-fault': lambda head, body: _in(
        'stack segment fault' if 'stack segment' in head else 'PANIC: double fault',
        _stack(body)),
    'bug': _bug,
    'rust-panic': _rust,
    'oops': lambda head, body: _in('Internal error' if head.startswith('Internal error')
                                   else 'Oops', _stack(body)),
    'slab': _slab,
    'netdev-refcount': _fixed('unregister_netdevice: waiting for DEV to become free'),
    'vfs': lambda head, body: ('VFS: Busy inodes after unmount' if 'Busy inodes' in head
                               else 'VFS: Close: file count is zero'),
    'stack-unwind': lambda head, body: (
        "WARNING: kernel stack regs has bad 'bp' value" if 'regs' in head
        else 'WARNING: kernel stack frame pointer has bad value'),
    'warning': _warning,
}


def title(kind: str, head: str, body: Sequence[str]) -> str:
    """The title of a report of @kind (reports.KINDS) whose first head line is
    @head; @body: its text, from that line on."""
    head = head.strip()
    titler = _TITLERS.get(kind)
    try:
        text = titler(head, body) if titler else ''
    except (IndexError, AttributeError):
        text = ''
    return text or _scrub(head)
