"""Log hygiene: a console log with a kernel report fails the run even when
every KUnit case passed; so does a debug kernel that switched lockdep off,
and a console in which the kernel booted twice.

What a report is, and its kind, is tools/cpuhpk/reports.py's table of the
kernel's own report formats: one finding per report, not per line.

A console in which the firmware speaks again after the kernel did (SeaBIOS's
or OVMF's banner, the EFI stub's or the x86 decompressor's 'Booting'
line: reports.FIRMWARE_BANNER) rebooted too, even when the second kernel
banner was lost.

A case that provokes a report on purpose declares it around the operation,
by printing (kunit/cpuhp_recorder.c, cpuhp_rec_expect_report_begin()):

    cpuhp_kunit: expect report: <text>
    ... the operation ...
    cpuhp_kunit: expect end

Inside such a window a report whose head lines contain <text> is allowed;
one that does not is still an error, and so is a window in which no report
containing <text> appeared (the declaration doubles as an assertion that
the kernel still reports what it reported when the case was written).

A run's guest prints its gcov data as base64 between 'cpuhp-kunit: gcov
begin' and 'cpuhp-kunit: gcov end' (guest.py, read by gcov.py); random base64 contains
'Oops' about once in 250,000 lines, so the base64 lines of that window are
not read. Any other line inside it (a kernel message) still is.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import Iterable, List, Sequence, Tuple

from cpuhpk import ktap, reports

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
    kind: str = ''      # the report's kind (reports.KINDS); '' for the others
    title: str = ''     # the report's title (titles.title()): the same bug, the same title

    def __str__(self) -> str:
        why = f'{self.why} ({self.kind})' if self.kind else self.why
        return f'console.log:{self.lineno}: {why}: {self.line.strip()}'


# Finding.why of the three things check() finds besides a window's errors.
KERNEL_REPORT = 'kernel report'
LOCKDEP_OFF = 'lockdep turned off'
REBOOT = 'the kernel booted again'


def check(lines: Iterable[str]) -> List[Finding]:
    """Kernel reports, lockdep switched off and second boots in a console.

    Every report (reports.scan(): one per report, however many head lines
    it has) is a finding unless a declared window allows it: inside a window
    a report whose head lines contain the window's text is allowed.
    """
    messages = [reports.strip_prefix(line) for line in lines]
    skip = set()
    gcov = False
    windows: List[Tuple[int, int, str]] = []    # (begin, end or 0, text)
    findings: List[Finding] = []
    booted = False
    documents = 0
    lockdep_off = False
    for n, msg in enumerate(messages, 1):
        if GCOV_BEGIN in msg:
            gcov = True
        elif GCOV_END in msg:
            gcov = False
        elif gcov and BASE64_LINE.match(msg.strip()):
            skip.add(n)
            continue
        m = EXPECT_BEGIN.search(msg)
        if m:
            if windows and not windows[-1][1]:
                windows[-1] = (windows[-1][0], n, windows[-1][2])
            windows.append((n, 0, m.group(1)))
        elif EXPECT_END.search(msg) and windows and not windows[-1][1]:
            windows[-1] = (windows[-1][0], n, windows[-1][2])
        if reports.BOOT_BANNER.match(msg):
            if booted:
                findings.append(Finding(n, msg, REBOOT))
            booted, documents = True, 0
        elif (booted or documents) and reports.FIRMWARE_BANNER.match(msg):
            # The firmware (or the kernel's loader) speaking after the kernel
            # did: the machine reset. Its banner that follows is the same boot.
            findings.append(Finding(n, msg, REBOOT))
            booted, documents = False, 0
        elif ktap.KTAP_TOP.match(msg):
            # A second top-level KTAP document of one boot: booted again
            # without a banner on this console (or a test module loaded).
            documents += 1
            if documents == 2:
                findings.append(Finding(n, msg, REBOOT))
        if not lockdep_off and reports.LOCKDEP_OFF.match(msg):
            lockdep_off = True
            findings.append(Finding(n, msg, LOCKDEP_OFF))
    seen = [False] * len(windows)
    for r in reports.scan(messages, skip):
        w = next((i for i, (b, e, _) in enumerate(windows) if b < r.lineno and
                  (not e or r.lineno < e)), None)
        if w is not None and any(windows[w][2] in h for _, h in r.heads):
            seen[w] = True
            continue
        findings.append(Finding(r.lineno, r.line, KERNEL_REPORT, r.kind.name, r.title))
    for (begin, end, text), ok in zip(windows, seen):
        if not end:
            findings.append(Finding(begin, f'expect report: {text}',
                                    'a declared report window never ended'))
        elif not ok:
            findings.append(Finding(begin, f'expect report: {text}',
                                    'a declared report did not appear'))
    return sorted(findings, key=lambda f: f.lineno)


def context(lines: Sequence[str], lineno: int) -> str:
    """The report starting at console line @lineno, up to its end-of-trace marker."""
    chunk = lines[lineno - 1:lineno - 1 + CONTEXT_LINES]
    for i, line in enumerate(chunk):
        if '---[ end ' in line and END_TRACE.search(line):
            return '\n'.join(chunk[:i + 1])
    return '\n'.join(chunk)


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
