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
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

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
    for n, line in enumerate(lines, 1):
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


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print('usage: hygiene.py CONSOLE_LOG', file=sys.stderr)
        return 2
    findings = check(Path(argv[0]).read_text(errors='replace').splitlines())
    for f in findings:
        print(f)
    return 1 if findings else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
