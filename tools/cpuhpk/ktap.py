"""KTAP from a kernel console: bounded reading, extraction and a small parser.

kunit.py parses KTAP for its own summary and JSON, but 6.12's kunit_parser
drops skip reasons and the names of crashed cases; this parser keeps both,
keeps the kernel messages printed while a case ran with that case, and
records which console lines each case spans, so a kernel report can be
pinned on the case during which it was printed (verdict.py).

The console is untrusted input from the guest: read_console() reads at most
MAX_CONSOLE bytes, cuts lines at MAX_LINE characters and decodes anything,
so garbage gives a failing verdict in bounded time and memory, never a
traceback. The console's prefixes before each kernel message (timestamps,
caller ids, dmesg -T, journalctl and syslog: reports.strip_prefix()) are
removed as it is read, so a console captured on a real machine parses as
one from QEMU does.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

from cpuhpk import reports

# A KTAP header; KTAP_TOP: one at the start of the line (a top-level document).
KTAP_TOP = re.compile(r'K?TAP version \d+$')
KTAP_START = re.compile(r'\s*' + KTAP_TOP.pattern)
# Where kunit.py stops reading (tools/testing/kunit/kunit_parser.py, KTAP_END).
KTAP_END = re.compile(r'\s*(List of all partitions:|Kernel panic - not syncing: VFS:|'
                      r'reboot: System halted)')
RESULT = re.compile(r'^(not ok|ok) (\d+)(?: -)?(?: (.*?))?(?: # (SKIP|TODO)(?: (.*))?)?$')
PLAN = re.compile(r'^1\.\.(\d+)')
# The name is the first word: KUnit names have no spaces, and a console
# may append to the line (6.1 prints ' #3' there with pr_cont() when it
# brings CPU 3 up, in the middle of a KTAP line).
SUBTEST = re.compile(r'^# Subtest: (\S*)')
# KUnit's count line after a case's parameters and after a suite's cases.
STATS = re.compile(r'^# (\S+): pass:(\d+) fail:(\d+) skip:(\d+) total:(\d+)$')

MAX_CONSOLE = 32 << 20      # bytes of a console judged at most
MAX_LINE = 4096             # characters kept of one console line
MAX_DIAGNOSTICS = 400       # diagnostic lines kept per test


@dataclasses.dataclass
class Console:
    """A console log as read: its lines and what had to be cut."""
    lines: List[str]
    truncated: bool = False     # more than MAX_CONSOLE bytes: the rest was not read
    long_lines: int = 0         # lines cut at MAX_LINE characters


def read_console(path: Path, max_bytes: int = MAX_CONSOLE,
                 max_line: int = MAX_LINE) -> Console:
    """Read a console log without trusting it: bounded bytes, bounded lines."""
    out = Console(lines=[])
    total = 0
    with open(path, 'rb') as f:
        while total < max_bytes:
            chunk = f.readline(min(max_line * 4, max_bytes - total))
            if not chunk:
                break
            total += len(chunk)
            cut = False
            # No newline: an overlong line; skip its rest within the budget.
            while not chunk.endswith(b'\n') and total < max_bytes:
                more = f.readline(min(1 << 20, max_bytes - total))
                if not more:
                    break
                cut, total = True, total + len(more)
                if more.endswith(b'\n'):
                    break
            text = chunk.decode('utf-8', 'replace').rstrip('\r\n')
            if len(text) > max_line:
                text, cut = text[:max_line], True
            out.long_lines += cut
            out.lines.append(reports.strip_prefix(text))
        else:
            out.truncated = bool(f.read(1))
    return out


def extract_at(console: Iterable[str]) -> Tuple[int, List[str]]:
    """The KTAP lines of a console, prefix removed, and the index of the first.

    Like kunit.py: everything from the first 'KTAP version' line up to where
    kunit.py stops, with as many characters cut from each line as stood
    before 'KTAP version' there. KTAP line i is console line start + i.
    """
    out: List[str] = []
    prefix: Optional[int] = None
    start = -1
    for n, line in enumerate(console):
        line = line.rstrip('\r\n')
        if prefix is None:
            if KTAP_START.search(line):
                prefix = len(line.split('TAP version')[0].removesuffix('K'))
                start = n
                out.append(line[prefix:])
            continue
        if KTAP_END.search(line) or rebooted(line[prefix:]):
            break
        out.append(line[prefix:])
    return start, out


def rebooted(line: str) -> bool:
    """@line (inside a KTAP document) starts another boot or another document.

    A second boot banner, the firmware's banner, or a second top-level
    'KTAP version' header: the results of the first document end there, and
    whatever it left without a result line is crashed (the reboot itself is
    hygiene.REBOOT).
    """
    return bool(reports.BOOT_BANNER.match(line) or KTAP_TOP.match(line)
                or reports.FIRMWARE_BANNER.match(line))



def extract(console: Iterable[str]) -> List[str]:
    return extract_at(console)[1]


class Status(enum.Enum):
    PASS = 'pass'
    FAIL = 'fail'
    SKIP = 'skip'
    CRASHED = 'crashed'     # the output ended before the result line
    EMPTY = 'no results'    # 'ok' after a subtest header with no results under it


@dataclasses.dataclass
class Test:
    name: str
    status: Status = Status.CRASHED
    reason: str = ''                    # SKIP reason, or why it counts as crashed
    diagnostics: List[str] = dataclasses.field(default_factory=list)
    subtests: List['Test'] = dataclasses.field(default_factory=list)
    plan: Optional[int] = None
    # KTAP line indices this test ran over (inclusive), -1 when unknown.
    first: int = -1
    last: int = -1
    cut: int = 0                        # diagnostic lines dropped past MAX_DIAGNOSTICS
    # KUnit's count lines ('# name: pass:.. total:N'), kept past the cap:
    # the verdict compares them with the results printed.
    counted: List[str] = dataclasses.field(default_factory=list)

    def add_diagnostics(self, lines: Sequence[str]) -> None:
        room = MAX_DIAGNOSTICS - len(self.diagnostics)
        self.diagnostics.extend(lines[:max(room, 0)])
        self.counted.extend(ln for ln in lines if STATS.match(ln) and len(self.counted) < 8)
        self.cut += max(len(lines) - max(room, 0), 0)


def _width(line: str) -> Tuple[int, str]:
    """Indentation width in columns (a tab counts four) and the line without it.

    Nesting is decided by comparing widths, not by counting fixed steps, so
    KTAP indented by two spaces (kunit_tool's own test data), four spaces
    (KUnit today) or tabs (old TAP output) all parse.
    """
    width, i = 0, 0
    while i < len(line) and line[i] in ' \t':
        width += 4 if line[i] == '\t' else 1
        i += 1
    return width, line[i:]


@dataclasses.dataclass
class _Frame:
    width: int
    block: Test
    diagnostics: List[str] = dataclasses.field(default_factory=list)
    closed: Optional[Test] = None   # a deeper block that ended: the next result's subtests
    since: int = 0                  # first line after this block's last structural line


def parse(lines: Sequence[str]) -> Test:
    """Parse KTAP into a tree: the root's subtests are the suites.

    A block (a 'KTAP version' header or a '# Subtest:' line, then a plan and
    results) at indentation W collects the results printed at W; a block
    indented deeper that ends before a result at W holds that result's
    parameters. Only structural lines (header, subtest, plan, result) end
    the blocks deeper than them. Any other line is a diagnostic of the
    innermost open block: KUnit prints a parameter's failure one level above
    the parameter's result, and the kernel's own messages are not indented at
    all, so a warning printed while a case runs lands in that case's
    diagnostics. A case spans the lines after the previous structural line up
    to its own result line.
    """
    stack: List[_Frame] = []

    def close_deeper(width: int, at: int, at_end: bool = False) -> None:
        while len(stack) > 1 and stack[-1].width > width:
            frame = stack.pop()
            # Only a suite's cases can be named after '# case: ...' lines;
            # a parameter that crashed is named by its number.
            _flush_in_flight(frame, at, at_end, by_diagnostics=len(stack) == 1)
            stack[-1].closed = frame.block

    def open_block(width: int, name: str, at: int) -> None:
        stack.append(_Frame(width, Test(name=name, first=at), since=at + 1))

    for n, raw in enumerate(lines):
        if not raw.strip():
            continue
        width, text = _width(raw)
        if not stack:
            if KTAP_START.match(text):
                stack.append(_Frame(width, Test(name='', status=Status.PASS, first=n),
                                    since=n + 1))
            continue
        if KTAP_START.match(text):
            if width > stack[0].width:
                close_deeper(width - 1, n)
                open_block(width, '', n)
            continue
        m = SUBTEST.match(text)
        if m:
            close_deeper(width, n)
            top = stack[-1]
            if top.width == width and top is not stack[0] and not top.block.name \
                    and not top.block.subtests:
                top.block.name = m.group(1).strip()
                top.since = n + 1
            elif width > stack[0].width:
                close_deeper(width - 1, n)
                open_block(width, m.group(1).strip(), n)
            continue
        is_plan, is_result = PLAN.match(text), RESULT.match(text)
        if not (is_plan or is_result):
            stack[-1].diagnostics.append(text)
            continue
        close_deeper(width, n)
        frame = stack[-1]
        if is_plan:
            if frame.block.plan is None:
                frame.block.plan = int(is_plan.group(1))
            frame.since = n + 1
            continue
        assert is_result is not None
        name = (is_result.group(3) or '').strip()
        test = frame.closed if frame.closed is not None and \
            frame.closed.name in ('', name) else Test(name=name, first=frame.since)
        test.name = name
        test.last = n
        if is_result.group(4) == 'SKIP':
            test.status, test.reason = Status.SKIP, (is_result.group(5) or '').strip()
        elif is_result.group(1) == 'ok':
            # A parameter block that reported nothing has not passed (kunit_parser: NO_TESTS).
            test.status = Status.EMPTY if test is frame.closed and not test.subtests \
                else Status.PASS
        else:
            test.status = Status.FAIL
        test.add_diagnostics(frame.diagnostics)
        frame.block.subtests.append(test)
        frame.diagnostics, frame.closed, frame.since = [], None, n + 1

    if not stack:
        return Test(name='', status=Status.PASS)
    end = len(lines) - 1
    close_deeper(-1, end, at_end=True)
    _flush_in_flight(stack[0], end, at_end=True)
    root = _finish(stack[0].block, end)
    root.last = end
    return root


CASE_DIAG = re.compile(r'^# ([A-Za-z0-9_]+): ')


def _flush_in_flight(frame: _Frame, at: int, at_end: bool, by_diagnostics: bool = False) -> None:
    """A block ends without the result its last output was leading up to.

    If more results were due (its plan says so, or, for a block without a
    plan such as a case's parameters, the kernel output ended), that output
    belongs to the case that was running: it becomes a crashed case carrying
    that output, named after its parameter block or its '# case: ...' lines.
    """
    block = frame.block
    due = at_end if block.plan is None else len(block.subtests) < block.plan
    # A block that started (a '# Subtest:' line) has a result line to come,
    # whether or not its parent's plan counted it: the user-space suite runs
    # after the KUnit suites' plan was complete.
    due = due or (at_end and frame.closed is not None and bool(frame.closed.name))
    if due and (frame.closed is not None or frame.diagnostics):
        test = frame.closed or Test(name='', first=frame.since)
        if not test.name:
            named = (CASE_DIAG.match(d) for d in frame.diagnostics if by_diagnostics)
            test.name = next((m.group(1) for m in named if m), f'#{len(block.subtests) + 1}')
        test.status = Status.CRASHED
        test.reason = 'the kernel output ended while it ran'
        test.add_diagnostics(frame.diagnostics)
        test.last = at
        block.subtests.append(test)
    else:
        block.add_diagnostics(frame.diagnostics)
    frame.diagnostics, frame.closed = [], None


def _finish(block: Test, end: int) -> Test:
    """Blocks whose result never came are crashed; so are planned, unseen results."""
    for t in block.subtests:
        _finish(t, end)
        if t.status is Status.CRASHED:
            if not t.reason:
                t.reason = 'the kernel output ended before its result'
            if t.last < 0:
                t.last = end
    if block.plan is not None and len(block.subtests) < block.plan:
        for n in range(len(block.subtests) + 1, block.plan + 1):
            block.subtests.append(Test(name=f'#{n}', status=Status.CRASHED,
                                       reason='planned, but the kernel output ended first'))
    return block


def cases(root: Test) -> List[Tuple[str, Test]]:
    """(full name, test) for every KUnit case, one per parameter if any.

    Full names are suite.case or suite.case.param; a suite without cases
    (it failed to initialise) stands for itself.
    """
    out: List[Tuple[str, Test]] = []
    for suite in root.subtests:
        if not suite.subtests:
            out.append((suite.name, suite))
        for case in suite.subtests:
            base = f'{suite.name}.{case.name}'
            if case.subtests:
                out.extend((f'{base}.{p.name}', p) for p in case.subtests)
            else:
                out.append((base, case))
    return out


def nodes(root: Test) -> List[Tuple[str, Test]]:
    """(full name, test) for every suite and every case with parameters."""
    out: List[Tuple[str, Test]] = []
    for suite in root.subtests:
        out.append((suite.name, suite))
        out.extend((f'{suite.name}.{c.name}', c) for c in suite.subtests if c.subtests)
    return out


def case_at(root: Test, index: int) -> Optional[Tuple[str, Test]]:
    """The case (or parameter) that was running when KTAP line @index was printed.

    Between a parameterised case's last parameter and its own result only
    KUnit's count line is printed: a line there goes to the last parameter.
    """
    for suite in root.subtests:
        for case in suite.subtests:
            base = f'{suite.name}.{case.name}'
            for p in case.subtests:
                if p.first <= index <= p.last:
                    return f'{base}.{p.name}', p
            if case.first <= index <= case.last:
                if case.subtests:
                    p = case.subtests[-1]
                    return f'{base}.{p.name}', p
                return base, case
    return None


class CaseIndex:
    """case_at() for many lines of one tree: the same answers, each in
    constant time (a console with thousands of kernel reports asks for each)."""

    def __init__(self, root: Test) -> None:
        self.root = root
        spans: List[Tuple[int, int, str, Test]] = []
        for suite in root.subtests:
            for case in suite.subtests:
                base = f'{suite.name}.{case.name}'
                spans += [(p.first, p.last, f'{base}.{p.name}', p) for p in case.subtests]
                if case.subtests:
                    spans.append((case.first, case.last, f'{base}.{case.subtests[-1].name}',
                                  case.subtests[-1]))
                else:
                    spans.append((case.first, case.last, base, case))
        end = max((last for _, last, _, _ in spans), default=-1)
        self.owner: List[Optional[Tuple[str, Test]]] = [None] * (end + 1)
        # The first span (in case_at()'s order) that holds a line wins.
        for first, last, name, test in reversed(spans):
            for i in range(max(first, 0), last + 1):
                self.owner[i] = (name, test)
        # A span of unknown start (-1) holds lines before the KTAP: case_at() then.
        self.unknown = any(first < 0 for first, _, _, _ in spans)

    def at(self, index: int) -> Optional[Tuple[str, Test]]:
        if index < 0 and self.unknown:
            return case_at(self.root, index)
        return self.owner[index] if 0 <= index < len(self.owner) else None


def suite_at(root: Test, index: int) -> Optional[Test]:
    return next((s for s in root.subtests if s.first <= index <= s.last), None)
