"""The verdict of a run: what makes it red, in categories, and verdict.json.

One verdict (judging.py judges a console into it) feeds every output: the
exit status, the summary printed, junit.xml (junit.py) and verdict.json,
so a red run can never be green in a file CI reads. A run is red when:

- failed       a case or parameter reported 'not ok'
- crashed      a case, parameter, case with parameters or suite has no result
               line (the console stopped) or a planned result never came
- missing      a suite or case the run asked for (kunit/ sources, FILTER) did
               not run, or fewer results than KUnit's plan or count line says
- unexpected-skip  a skip without a reason, or not in kunit/expected-skips
- kernel-log   a kernel report on the console (hygiene.py, its kind from
               reports.py, its title from titles.py): pinned on the case
               during which it was printed, or on the run if outside any
- reboot       the console holds a second boot (banner or top-level KTAP
               header): only the first boot's results count
- lockdep-off  a debug kernel switched lockdep off: it checked less than the
               run says
- console      the console was too large to judge whole
- timeout, build, prepare, kunit.py, interrupted, coverage, selftest:
               the run itself went wrong (execute.py, coverage.py)

Every problem has a title and a key: a kernel report's title is the one
titles.title() gives it ('WARNING in cpuhp_thread_fun'), a failed case's
is its first failure without the parameter ('suite.case: Expected ...'); the
key is what two problems are the same finding by, in one run (the same
report in many cases or parameters, index.html lists it once) or across
runs and jobs (make merge-results counts it once).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any, Dict, List, Tuple

CATEGORIES = ('failed', 'crashed', 'missing', 'unexpected-skip', 'kernel-log', 'reboot',
              'lockdep-off', 'console', 'timeout', 'build', 'prepare', 'kunit.py', 'interrupted',
              'coverage', 'selftest')


@dataclasses.dataclass
class Problem:
    category: str
    name: str           # suite.case[.param] it belongs to, '' for the run as a whole
    message: str        # one line
    detail: str = ''    # quoted output (diagnostics, kernel report, compiler error)
    kind: str = ''      # kernel-log: the report's kind (reports.KINDS)
    title: str = ''     # what it is, without where: the report's or failure's title
    key: str = ''       # the same finding, the same key (in this run and across runs)
    # kernel-log: the report with its frames decoded against the kernel's
    # vmlinux (decode.py: file:line, inlined frames); '' when not decoded.
    decoded: str = ''

    def __str__(self) -> str:
        return f'{self.name}: {self.message}' if self.name else self.message

    def ident(self) -> str:
        """The key, or for a problem read from an older verdict.json without
        one, its category, case and message."""
        return self.key or f'{self.category} {self.name}: {self.message}'


def case_of(name: str) -> str:
    """suite.case of a suite.case.param: the parameter left out."""
    return '.'.join(name.split('.', 2)[:2])


FAILED_LINE = re.compile(r'^# \S+: (?:EXPECTATION|ASSERTION) FAILED at (\S+)$')


def failure_title(name: str, block: str) -> str:
    """The title of a failure block of case @name: its case (no parameter) and
    its first line of message, with where it failed ('suite.case: Expected a ==
    b, but (file.c:12)')."""
    lines = [ln.strip() for ln in block.splitlines() if ln.strip()]
    if not lines:
        return case_of(name)
    m = FAILED_LINE.match(lines[0])
    if m and len(lines) > 1:
        return f'{case_of(name)}: {lines[1]} ({m.group(1)})'
    return f'{case_of(name)}: {lines[0].removeprefix("# ")}'


def key_of(category: str, name: str, message: str, title: str) -> str:
    """The key of a problem: a kernel report's or failure's title (the same
    report in any case is one finding), anything else's case and message."""
    if title and category in ('kernel-log', 'failed'):
        return f'{category}: {title}'
    return f'{category} {name}: {message}'


@dataclasses.dataclass
class Skip:
    name: str
    reason: str
    expected: bool
    why: str = ''       # from kunit/expected-skips


@dataclasses.dataclass
class Verdict:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    crashed: int = 0
    missing: int = 0
    problems: List[Problem] = dataclasses.field(default_factory=list)
    skips: List[Skip] = dataclasses.field(default_factory=list)
    # Problems of cases listed in kunit/known-failures-<KVER>: findings, not red.
    known: List[Problem] = dataclasses.field(default_factory=list)
    # suite.case[.param] -> its KTAP status (pass, fail, skip, crashed, ...).
    statuses: Dict[str, str] = dataclasses.field(default_factory=dict)
    # Known failures that applied to cases that ran and named nothing there.
    not_seen: List[Problem] = dataclasses.field(default_factory=list)
    # suite.case[.param] of a failed case -> its failures (judging.failure_blocks()).
    failures: Dict[str, List[str]] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, category: str, name: str, message: str, detail: str = '',
            kind: str = '', title: str = '') -> None:
        assert category in CATEGORIES, category
        self.problems.append(Problem(category, name, message, detail, kind, title or message,
                                     key_of(category, name, message, title)))

    def counts(self) -> Dict[str, int]:
        return {'passed': self.passed, 'failed': self.failed, 'skipped': self.skipped,
                'crashed': self.crashed, 'missing': self.missing}

    def closing_counts(self) -> Tuple[int, int, int, int]:
        """(passed, failed, skipped, known failures) as the closing line says them.

        Every case the verdict holds something against counts as failed, once,
        and so does every problem of the run as a whole: a red run never closes
        on '0 failed', a green one always does.
        """
        bad = {p.name for p in self.problems if p.name}
        known = {p.name for p in self.known} - bad
        failed = len(bad) + sum(not p.name for p in self.problems)
        ok = [s for n, s in self.statuses.items() if n not in bad and n not in known]
        return ok.count('pass'), failed, ok.count('skip'), len(known)

    def to_json(self, context: Dict[str, str]) -> Dict[str, Any]:
        by_category: Dict[str, int] = {}
        for p in self.problems:
            by_category[p.category] = by_category.get(p.category, 0) + 1
        return {'verdict': 'pass' if self.ok else 'fail', 'context': context,
                'counts': self.counts(), 'problems_by_category': by_category,
                'problems': [_fields(p) for p in self.problems],
                'known_failures': [_fields(p) for p in self.known],
                'known_not_seen': [_fields(p) for p in self.not_seen],
                'skips': [_fields(s) for s in self.skips],
                'statuses': self.statuses}

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> 'Verdict':
        counts = data.get('counts', {})
        n = {k: int(counts.get(k, 0)) for k in ('passed', 'failed', 'skipped', 'crashed',
                                                 'missing')}
        return cls(passed=n['passed'], failed=n['failed'], skipped=n['skipped'],
                   crashed=n['crashed'], missing=n['missing'],
                   problems=[Problem(**p) for p in data.get('problems', [])],
                   known=[Problem(**p) for p in data.get('known_failures', [])],
                   not_seen=[Problem(**p) for p in data.get('known_not_seen', [])],
                   skips=[Skip(**s) for s in data.get('skips', [])],
                   statuses=dict(data.get('statuses', {})))


def _fields(obj: Any) -> Dict[str, Any]:
    """A flat dataclass as a dict (dataclasses.asdict() copies deeply: slow on
    a console of many thousand reports)."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def dumps(data: Dict[str, Any]) -> str:
    """verdict.json's text: indented, but each problem, skip or status on one
    line, so that it is written (with json's C encoder) and read quickly
    whatever the number of problems."""
    out = ['{']
    items = list(data.items())
    for i, (key, value) in enumerate(items):
        comma = ',' if i < len(items) - 1 else ''
        if isinstance(value, list) and value:
            out.append(f' {json.dumps(key)}: [')
            out.append(',\n'.join(f'  {json.dumps(v)}' for v in value))
            out.append(f' ]{comma}')
        elif isinstance(value, dict) and value:
            out.append(f' {json.dumps(key)}: {{')
            out.append(',\n'.join(f'  {json.dumps(k)}: {json.dumps(v)}' for k, v in value.items()))
            out.append(f' }}{comma}')
        else:
            out.append(f' {json.dumps(key)}: {json.dumps(value)}{comma}')
    return '\n'.join(out + ['}']) + '\n'


def write_json(path: Path, v: Verdict, context: Dict[str, str]) -> None:
    path.write_text(dumps(v.to_json(context)))


def read_json(path: Path) -> Tuple[Verdict, Dict[str, str]]:
    data = json.loads(path.read_text())
    return Verdict.from_json(data), dict(data.get('context', {}))
