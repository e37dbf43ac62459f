"""Log hygiene: a console log with a kernel warning, oops, lockdep report or RCU
stall fails the run even when every KUnit case passed.

A case that provokes a report on purpose declares it around the operation,
by printing (see kunit/cpuhp_kunit_expect.h):

    cpuhp_kunit: expect report: <text>
    ... the operation ...
    cpuhp_kunit: expect end

Inside such a window a report line that contains <text> is allowed; one
that does not is still an error, and so is a window in which no report
containing <text> appeared (the declaration doubles as an assertion that
the kernel still reports what it reported when the case was written).

The coverage run prints its gcov data as base64 between 'cpuhp-kunit: gcov
begin' and 'cpuhp-kunit: gcov end' (coverage.py); random base64 contains
'Oops' about once in 250,000 lines, so the base64 lines of that window are
not read. Any other line inside it (a kernel message) still is.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

if __package__ in (None, ''):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = 'cpuhpk'  # noqa: A001  (run as a script)

from cpuhpk import ktap  # noqa: E402

# Lockdep reports start with 'WARNING:' in current kernels; their own titles
# are listed too, for kernels and report kinds that print them alone. Not the
# bare word 'lockdep': a debug kernel says 'RCU lockdep checking is enabled'.
REPORT = re.compile(
    r'WARNING:|BUG:|Oops|general protection fault|Kernel panic'
    r'|possible (?:recursive|circular) locking|inconsistent lock state'
    r'|possible irq lock inversion|bad unlock balance|held lock freed'
    r'|lockdep is turned off|suspicious RCU usage'
    r'|rcu: INFO: .*stall|self-detected stall|detected stalls? on CPU|RCU stall')
EXPECT_BEGIN = re.compile(r'cpuhp_kunit: expect report: (.+?)\s*$')
EXPECT_END = re.compile(r'cpuhp_kunit: expect end\b')
GCOV_BEGIN = 'cpuhp-kunit: gcov begin'
GCOV_END = 'cpuhp-kunit: gcov end'
BASE64_LINE = re.compile(r'^[A-Za-z0-9+/]+=*$')
# A report's quote ends at the end-of-trace marker or after this many lines.
CONTEXT_LINES = 40
END_TRACE = re.compile(r'---\[ end (?:trace|Kernel panic)')


@dataclasses.dataclass
class Finding:
    lineno: int
    line: str
    why: str

    def __str__(self) -> str:
        return f'console.log:{self.lineno}: {self.why}: {self.line.strip()}'


def check(lines: Iterable[str]) -> List[Finding]:
    findings: List[Finding] = []
    expect: Optional[str] = None
    expect_line = 0
    seen = False
    gcov = False
    for n, line in enumerate(lines, 1):
        if GCOV_BEGIN in line:
            gcov = True
        elif GCOV_END in line:
            gcov = False
        elif gcov and BASE64_LINE.match(line.strip()):
            continue
        m = EXPECT_BEGIN.search(line)
        if m:
            expect, expect_line, seen = m.group(1), n, False
            continue
        if EXPECT_END.search(line):
            if expect is not None and not seen:
                findings.append(Finding(expect_line, f'expect report: {expect}',
                                        'a declared report did not appear'))
            expect = None
            continue
        if not REPORT.search(line):
            continue
        if expect is not None and expect in line:
            seen = True
            continue
        findings.append(Finding(n, line, 'kernel report'))
    if expect is not None:
        findings.append(Finding(expect_line, f'expect report: {expect}',
                                'a declared report window never ended'))
    return findings


def context(lines: Sequence[str], lineno: int) -> str:
    """The report starting at console line @lineno, up to its end-of-trace marker."""
    out: List[str] = []
    for line in lines[lineno - 1:lineno - 1 + CONTEXT_LINES]:
        out.append(line)
        if END_TRACE.search(line):
            break
    return '\n'.join(out)


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print('usage: hygiene.py CONSOLE_LOG', file=sys.stderr)
        return 2
    findings = check(ktap.read_console(Path(argv[0])).lines)
    for f in findings:
        print(f)
    return 1 if findings else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
