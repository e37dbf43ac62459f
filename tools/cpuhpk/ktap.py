"""KTAP from a kernel console: extraction, a small parser, and JUnit XML.

kunit.py parses KTAP for its own summary and JSON; CI wants JUnit, with one
<testcase> per KUnit case (``suite.case``, or ``suite.case.param`` for each
parameter) carrying the case's diagnostic lines, and a run that stopped
half-way reported as such rather than as a shorter, green run.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

KTAP_START = re.compile(r'\s*K?TAP version \d+$')
# Where kunit.py stops reading (tools/testing/kunit/kunit_parser.py, KTAP_END).
KTAP_END = re.compile(r'\s*(List of all partitions:|Kernel panic - not syncing: VFS:|'
                      r'reboot: System halted)')
RESULT = re.compile(r'^(not ok|ok) (\d+)(?: -)?(?: (.*?))?(?: # (SKIP|TODO)(?: (.*))?)?$')
PLAN = re.compile(r'^1\.\.(\d+)')
SUBTEST = re.compile(r'^# Subtest: (.*)$')


def extract(console: Iterable[str]) -> List[str]:
    """The KTAP lines of a console log, with the console's line prefix removed.

    Like kunit.py: everything from the first 'KTAP version' line, with as many
    characters cut from each line as stood before it there.
    """
    out: List[str] = []
    prefix: Optional[int] = None
    for line in console:
        line = line.rstrip('\r\n')
        if prefix is None:
            m = KTAP_START.search(line)
            if m:
                prefix = len(line.split('TAP version')[0].removesuffix('K'))
                out.append(line[prefix:])
            continue
        if KTAP_END.search(line):
            break
        out.append(line[prefix:])
    return out


class Status(enum.Enum):
    PASS = 'pass'
    FAIL = 'fail'
    SKIP = 'skip'
    CRASHED = 'crashed'     # the output ended before the result line


@dataclasses.dataclass
class Test:
    name: str
    status: Status = Status.CRASHED
    reason: str = ''                    # SKIP reason, or why it counts as crashed
    diagnostics: List[str] = dataclasses.field(default_factory=list)
    subtests: List['Test'] = dataclasses.field(default_factory=list)
    plan: Optional[int] = None


def _level(line: str) -> Tuple[int, str]:
    """Nesting level (a tab or four spaces each) and the line without it."""
    level, i = 0, 0
    while i < len(line):
        if line[i] == '\t':
            level, i = level + 1, i + 1
        elif line.startswith('    ', i):
            level, i = level + 1, i + 4
        else:
            break
    return level, line[i:]


@dataclasses.dataclass
class _Frame:
    level: int
    block: Test
    diagnostics: List[str] = dataclasses.field(default_factory=list)
    closed: Optional[Test] = None   # a deeper block that ended: the next result's subtests


def parse(lines: Sequence[str]) -> Test:
    """Parse KTAP into a tree: the root's subtests are the suites.

    A block (a 'KTAP version' header or a '# Subtest:' line, then a plan and
    results) at level L collects the results printed at level L; a block at
    L+1 that ends before a result at L holds that result's parameters.
    Only structural lines (header, subtest, plan, result) at level L end the
    blocks deeper than L. Any other line is a diagnostic of the innermost open
    block: KUnit prints a parameter's failure one level above the parameter's
    result, and the kernel's own messages are not indented at all, so a
    warning printed while a case runs lands in that case's diagnostics.
    """
    stack: List[_Frame] = []

    def close_deeper(level: int, at_end: bool = False) -> None:
        while len(stack) > 1 and stack[-1].level > level:
            frame = stack.pop()
            _flush_in_flight(frame, at_end)
            stack[-1].closed = frame.block

    for raw in lines:
        if not raw.strip():
            continue
        level, text = _level(raw)
        if not stack:
            if KTAP_START.match(text):
                stack.append(_Frame(level, Test(name='', status=Status.PASS)))
            continue
        if KTAP_START.match(text):
            if level > stack[0].level:
                close_deeper(level - 1)
                stack.append(_Frame(level, Test(name='')))
            continue
        m = SUBTEST.match(text)
        if m:
            close_deeper(level)
            top = stack[-1]
            if top.level == level and top is not stack[0] and not top.block.name \
                    and not top.block.subtests:
                top.block.name = m.group(1).strip()
            elif level > stack[0].level:
                close_deeper(level - 1)
                stack.append(_Frame(level, Test(name=m.group(1).strip())))
            continue
        is_plan, is_result = PLAN.match(text), RESULT.match(text)
        if not (is_plan or is_result):
            stack[-1].diagnostics.append(text)
            continue
        close_deeper(level)
        frame = stack[-1]
        if is_plan:
            if frame.block.plan is None:
                frame.block.plan = int(is_plan.group(1))
            continue
        assert is_result is not None
        name = (is_result.group(3) or '').strip()
        test = frame.closed if frame.closed is not None and \
            frame.closed.name in ('', name) else Test(name=name)
        test.name = name
        if is_result.group(4) == 'SKIP':
            test.status, test.reason = Status.SKIP, (is_result.group(5) or '').strip()
        else:
            test.status = Status.PASS if is_result.group(1) == 'ok' else Status.FAIL
        test.diagnostics.extend(frame.diagnostics)
        frame.block.subtests.append(test)
        frame.diagnostics, frame.closed = [], None

    if not stack:
        return Test(name='', status=Status.PASS)
    close_deeper(-1, at_end=True)
    _flush_in_flight(stack[0], at_end=True)
    return _finish(stack[0].block)


CASE_DIAG = re.compile(r'^# ([A-Za-z0-9_]+): ')


def _flush_in_flight(frame: _Frame, at_end: bool) -> None:
    """A block ends without the result its last output was leading up to.

    If more results were due (its plan says so, or, for a block without a
    plan such as a case's parameters, the kernel output ended), that output
    belongs to the case that was running: it becomes a crashed case carrying
    that output, named after its parameter block or its '# case: ...' lines.
    """
    block = frame.block
    due = at_end if block.plan is None else len(block.subtests) < block.plan
    if due and (frame.closed is not None or frame.diagnostics):
        test = frame.closed or Test(name='')
        if not test.name:
            named = (CASE_DIAG.match(d) for d in frame.diagnostics)
            test.name = next((m.group(1) for m in named if m), f'#{len(block.subtests) + 1}')
        test.status = Status.CRASHED
        test.reason = 'the kernel output ended while it ran'
        test.diagnostics.extend(frame.diagnostics)
        block.subtests.append(test)
    else:
        block.diagnostics.extend(frame.diagnostics)
    frame.diagnostics, frame.closed = [], None


def _finish(block: Test) -> Test:
    """Blocks whose result never came are crashed; so are planned, unseen results."""
    for t in block.subtests:
        _finish(t)
        if t.status is Status.CRASHED and not t.reason:
            t.reason = 'the kernel output ended before its result'
    if block.plan is not None and len(block.subtests) < block.plan:
        for n in range(len(block.subtests) + 1, block.plan + 1):
            block.subtests.append(Test(name=f'#{n}', status=Status.CRASHED,
                                       reason='planned, but the kernel output ended first'))
    return block


def cases(root: Test) -> List[Tuple[str, Test]]:
    """(junit name, test) for every KUnit case, one per parameter if any."""
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


def junit(root: Test) -> ET.ElementTree:
    top = ET.Element('testsuites')
    totals = {'tests': 0, 'failures': 0, 'errors': 0, 'skipped': 0}
    for suite in root.subtests:
        el = ET.SubElement(top, 'testsuite', name=suite.name)
        counts = {'tests': 0, 'failures': 0, 'errors': 0, 'skipped': 0}
        for name, t in cases(Test(name='', subtests=[suite])):
            tc = ET.SubElement(el, 'testcase', name=name, classname=suite.name)
            counts['tests'] += 1
            text = '\n'.join(t.diagnostics)
            if t.status is Status.FAIL:
                counts['failures'] += 1
                first = next((d for d in t.diagnostics if 'FAILED' in d), 'failed')
                ET.SubElement(tc, 'failure', message=first).text = text
            elif t.status is Status.CRASHED:
                counts['errors'] += 1
                ET.SubElement(tc, 'error', message=f'crashed: {t.reason}').text = text
            elif t.status is Status.SKIP:
                counts['skipped'] += 1
                ET.SubElement(tc, 'skipped', message=t.reason)
            if text:
                ET.SubElement(tc, 'system-out').text = text
        for k, v in counts.items():
            el.set(k, str(v))
            totals[k] += v
    for k, v in totals.items():
        top.set(k, str(v))
    ET.indent(top)
    return ET.ElementTree(top)


@dataclasses.dataclass
class Verdict:
    passed: int
    failed: int
    skipped: int
    crashed: int
    problems: List[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def verdict(root: Test) -> Verdict:
    """Counts, and what makes the run red: failures, crashes, unexplained skips."""
    all_cases = cases(root)
    v = Verdict(0, 0, 0, 0, [])
    for name, t in all_cases:
        if t.status is Status.PASS:
            v.passed += 1
        elif t.status is Status.SKIP:
            v.skipped += 1
            if not t.reason:
                v.problems.append(f'{name}: skipped without a stated reason')
        elif t.status is Status.FAIL:
            v.failed += 1
            v.problems.append(f'{name}: failed')
        else:
            v.crashed += 1
            v.problems.append(f'{name}: crashed ({t.reason})')
    if not all_cases:
        v.problems.append('no KUnit case ran (no KTAP results in the console log)')
    return v


def main(argv: Sequence[str]) -> int:
    import argparse
    ap = argparse.ArgumentParser(description='KTAP (or a console log) to JUnit XML.')
    ap.add_argument('input', type=Path)
    ap.add_argument('-o', '--output', type=Path, required=True)
    args = ap.parse_args(argv)
    root = parse(extract(args.input.read_text(errors='replace').splitlines()))
    junit(root).write(args.output, encoding='utf-8', xml_declaration=True)
    v = verdict(root)
    for p in v.problems:
        print(p)
    return 0 if v.ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
