"""The verdict of a run: what makes it red, in categories, and verdict.json.

One verdict feeds every output: the exit status, the summary printed,
junit.xml (junit.py) and verdict.json, so a red run can never be green in a
file CI reads. A run is red when:

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
               the run itself went wrong (run.py, coverage.py)

Every problem has a title and a key: a kernel report's title is the one
titles.title() gives it ('WARNING in cpuhp_thread_fun'), a failed case's
is its first failure without the parameter ('suite.case: Expected ...'); the
key is what two problems are the same finding by, in one run (the same
report in many cases or parameters, index.html lists it once) or across
runs and jobs (make merge-results counts it once).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import re
from pathlib import Path
from typing import Any, Callable, Collection, Dict, List, Optional, Sequence, Tuple

from cpuhpk import hygiene, ktap

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
    # suite.case[.param] of a failed case -> its failures (failure_blocks()).
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


# --- what the run asked for -------------------------------------------------

CASE_ARRAY = re.compile(r'struct\s+kunit_case\s+(\w+)\s*\[\s*\]\s*=\s*\{(.*?)\};', re.S)
CASE_ENTRY = re.compile(r'\bKUNIT_CASE\w*\(\s*(\w+)')
SUITE = re.compile(r'struct\s+kunit_suite\s+\w+\s*=\s*\{(.*?)\};', re.S)
SUITE_NAME = re.compile(r'\.name\s*=\s*"([^"]+)"')
SUITE_CASES = re.compile(r'\.test_cases\s*=\s*(\w+)')


SH_SUITE = re.compile(r'^SUITE=(\w+)$', re.M)
SH_CASES = re.compile(r'^CASES="([\w ]+)"$', re.M)


def declared_cases(kunit_dir: Path, userspace: bool = False,
                   only: Optional[Collection[str]] = None,
                   view: Optional[Callable[[str], str]] = None) -> Dict[str, List[str]]:
    """suite -> its cases, as the kunit/*_kunit.c sources declare them.

    With @userspace, also the user-space tests kunit/*_test.sh (SUITE= and
    CASES= lines), which run from an initramfs after the KUnit suites.
    @only: these sources alone; @view: the form of a source that is built
    (the posted series': tree.harness_view(text, False)).
    """
    suites: Dict[str, List[str]] = {}
    for sh in sorted(kunit_dir.glob('*_test.sh')) if userspace else []:
        text = sh.read_text(errors='replace')
        name, cases = SH_SUITE.search(text), SH_CASES.search(text)
        if name and cases:
            suites[name.group(1)] = cases.group(1).split()
    for src in sorted(kunit_dir.glob('*_kunit.c')):
        if only is not None and src.name not in only:
            continue
        text = src.read_text(errors='replace')
        if view is not None:
            text = view(text)
        arrays = {m.group(1): CASE_ENTRY.findall(m.group(2)) for m in CASE_ARRAY.finditer(text)}
        for m in SUITE.finditer(text):
            name, cases = SUITE_NAME.search(m.group(1)), SUITE_CASES.search(m.group(1))
            if name and cases and cases.group(1) in arrays:
                suites[name.group(1)] = arrays[cases.group(1)]
    return suites


def filtered(declared: Dict[str, List[str]], filter_glob: str) -> Dict[str, List[str]]:
    """What a kunit.py filter_glob ('suite_glob[.case_glob]') selects."""
    if not filter_glob:
        return dict(declared)
    suite_glob, _, case_glob = filter_glob.partition('.')
    out: Dict[str, List[str]] = {}
    for suite, cases in declared.items():
        if fnmatch.fnmatchcase(suite, suite_glob):
            chosen = [c for c in cases if not case_glob or fnmatch.fnmatchcase(c, case_glob)]
            if chosen:
                out[suite] = chosen
    return out


@dataclasses.dataclass
class ExpectedSkip:
    case: str                   # glob over suite.case[.param]
    when: Dict[str, str]        # knob -> glob (kver, config, smp); empty: always
    reason: str                 # the skip reason as printed
    why: str


WHEN_KEYS = ('kver', 'arch', 'config', 'smp', 'fixes', 'topology')


def _read_table(path: Path, columns: Sequence[str]) -> List[List[str]]:
    """Rows of a '|'-separated table of kunit/; '#' starts a comment line."""
    rows: List[List[str]] = []
    if not path.is_file():
        return rows
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        fields = [f.strip() for f in line.split('|')]
        if len(fields) != len(columns) or not all(fields):
            raise ValueError(f'{path.name}:{n}: expected "' + ' | '.join(
                f'<{c}>' for c in columns) + '"')
        rows.append(fields + [f'{path.name}:{n}'])
    return rows


def _when(text: str, where: str, keys: Sequence[str] = WHEN_KEYS) -> Dict[str, str]:
    when: Dict[str, str] = {}
    for cond in text.split():
        if cond == '*':
            continue
        key, sep, val = cond.partition('=')
        if not sep or key not in keys:
            raise ValueError(f'{where}: "when" takes ' + ', '.join(f'{k}=' for k in keys)
                             + ' or *')
        when[key] = val
    return when


def _applies(case_glob: str, when: Dict[str, str], name: str, context: Dict[str, str]) -> bool:
    return fnmatch.fnmatchcase(name, case_glob) and all(
        fnmatch.fnmatchcase(context.get(k, ''), v) for k, v in when.items())


def read_expected_skips(path: Path) -> List[ExpectedSkip]:
    """kunit/expected-skips: '<case glob> | <when> | <reason> | <why>' per line."""
    return [ExpectedSkip(case, _when(when, where), reason, why)
            for case, when, reason, why, where in
            _read_table(path, ('case glob', 'when', 'reason', 'why'))]


@dataclasses.dataclass
class KnownFailure:
    """One entry of kunit/known-failures-<KVER>: what fails, where, and why.

    An entry names the failure it expects, not only the case: either a
    failed expectation (failed: a glob over the text of one of the case's
    failures, its 'EXPECTATION FAILED at file:line' line and message) or a
    kernel report (report: a glob over a line of the report's head). A case
    is a known failure only when every failure and every report in it is
    named by an entry that applies; anything else in it is red.
    """
    case: str                   # glob over suite.case[.param]
    when: Dict[str, str]
    why: str                    # the finding, as Documentation/findings/ tells it
    failed: str = ''            # glob over one failure's text (failure_blocks())
    # Glob over a line of the report's head: a race that may hit any of many
    # cases is known by what the kernel said, not by where it landed.
    report: str = ''
    race: bool = False          # may or may not happen in a run: no 'did not occur'
    where: str = ''             # file:line of the entry, for messages

    @property
    def what(self) -> str:
        return f'failed: {self.failed}' if self.failed else f'report: {self.report}'


WHAT = re.compile(r'^(failed|report):\s*(\S.*)$')


def read_known_failures(path: Path) -> List[KnownFailure]:
    """kunit/known-failures-<KVER>: '<case glob> | <when> | <what> | <why>' per line.

    <what> is 'failed: <glob>' or 'report: <glob>'; <when> may say 'race'
    (with report:) for a failure that a run may or may not hit.
    """
    known = []
    for case, text, what, why, where in _read_table(path, ('case glob', 'when', 'what', 'why')):
        race = 'race' in text.split()
        when = _when(' '.join(w for w in text.split() if w != 'race'), where)
        m = WHAT.match(what)
        if not m:
            raise ValueError(f'{where}: <what> is "failed: <glob of the failed expectation>" '
                             'or "report: <glob of a line of the kernel report\'s head>"')
        if race and m.group(1) != 'report':
            raise ValueError(f'{where}: "race" is for report: entries (a failed expectation '
                             'either happens or is not known)')
        kind, glob = m.group(1), m.group(2).strip()
        known.append(KnownFailure(case, when, why, glob if kind == 'failed' else '',
                                  glob if kind == 'report' else '', race, where))
    return known


def report_head(detail: str) -> List[str]:
    """A kernel report's lines up to its call trace: what it is and who called."""
    head: List[str] = []
    for line in detail.splitlines():
        head.append(line)
        if 'Call Trace:' in line:
            break
    return head


FAILED_AT = re.compile(r'^# \S+: (?:EXPECTATION|ASSERTION) FAILED at ')


def failure_blocks(diagnostics: Sequence[str]) -> List[str]:
    """The failures a failed case printed, each as one text.

    KUnit's: an 'EXPECTATION FAILED at file:line' (or ASSERTION) line with
    the lines that follow it up to the next '# ' line. A case without such
    lines (the user-space suite): each '# ' line with the lines after it.
    """
    lines = [d.strip() for d in diagnostics]
    kunit = any(FAILED_AT.match(d) for d in lines)
    starts = FAILED_AT if kunit else re.compile(r'^# ')
    blocks: List[List[str]] = []
    inside = False
    for d in lines:
        if starts.match(d):
            blocks.append([d])
            inside = True
        elif d.startswith('# '):
            inside = False
        elif inside:
            blocks[-1].append(d)
    return ['\n'.join(b) for b in blocks]


def glob_search(glob: str, text: str) -> bool:
    """@text contains a match of @glob: '*' any characters (newlines too),
    '?' one; every other character stands for itself ('calls[i]' is not a
    character class, as it would be for fnmatch).
    """
    regex = ''.join('.*' if c == '*' else '.' if c == '?' else re.escape(c) for c in glob)
    return re.search(regex, text, re.S) is not None


def _names(k: KnownFailure, text: str) -> bool:
    return bool(k.failed) and glob_search(k.failed, text)


def _names_report(k: KnownFailure, p: Problem) -> bool:
    return bool(k.report) and p.category == 'kernel-log' and any(
        glob_search(k.report, line) for line in report_head(p.detail))


def expected_skip(table: Sequence[ExpectedSkip], name: str, reason: str,
                  context: Dict[str, str]) -> Optional[ExpectedSkip]:
    return next((e for e in table if e.reason == reason and
                 _applies(e.case, e.when, name, context)), None)


@dataclasses.dataclass
class Expectations:
    """What a run asked for, and which of its skips are fine."""
    cases: Optional[Dict[str, List[str]]] = None    # None: not checked
    skips: Sequence[ExpectedSkip] = ()
    known: Sequence[KnownFailure] = ()
    strict: bool = False        # known failures are red too
    context: Dict[str, str] = dataclasses.field(default_factory=dict)


# --- judging -----------------------------------------------------------------

def _quote(t: ktap.Test, limit: int = 40) -> str:
    """A test's diagnostics for a problem's detail, saying what was left out."""
    more = max(len(t.diagnostics) - limit, 0) + t.cut
    return '\n'.join(t.diagnostics[:limit]) + (f'\n... ({more} more lines)' if more else '')


def judge_ktap(root: ktap.Test, exp: Expectations) -> Verdict:
    """Results, crashes, counts and skips of a parsed KTAP tree."""
    v = Verdict()
    for name, t in ktap.cases(root):
        v.statuses[name] = t.status.value
        if t.status is ktap.Status.PASS:
            v.passed += 1
        elif t.status is ktap.Status.FAIL:
            v.failed += 1
            first = next((d for d in t.diagnostics if 'FAILED' in d), 'not ok')
            v.failures[name] = failure_blocks(t.diagnostics)
            if t.cut:
                # Failures past the cap cannot be named: never a known failure.
                v.failures[name].append(f'({t.cut} diagnostic lines not kept)')
            v.add('failed', name, f'failed: {first.strip()}', _quote(t),
                  title=failure_title(name, v.failures[name][0]) if v.failures[name] else '')
        elif t.status is ktap.Status.CRASHED:
            v.crashed += 1
            v.add('crashed', name, f'crashed: {t.reason}', _quote(t))
        elif t.status is ktap.Status.EMPTY:
            v.missing += 1
            v.add('missing', name, 'reported ok, but its parameter block holds no result')
        else:
            v.skipped += 1
            e = expected_skip(exp.skips, name, t.reason, exp.context) if t.reason else None
            v.skips.append(Skip(name, t.reason, e is not None, e.why if e else ''))
            if not t.reason:
                v.add('unexpected-skip', name, 'skipped without a stated reason')
            elif e is None:
                v.add('unexpected-skip', name, f'skipped, not expected here: {t.reason} '
                      '(expected skips: kunit/expected-skips)')
    for name, node in ktap.nodes(root):
        if node.status is ktap.Status.CRASHED:
            v.crashed += 1
            v.add('crashed', name, f'no result line: {node.reason}', _quote(node))
        stats = next((m for m in map(ktap.STATS.match, node.counted)
                      if m and m.group(1) == node.name), None)
        if stats and int(stats.group(5)) > len(node.subtests):
            v.missing += int(stats.group(5)) - len(node.subtests)
            v.add('missing', name, f'KUnit counted {stats.group(5)} results, '
                  f'{len(node.subtests)} were printed')
        if stats:
            _check_counted(v, name, node, int(stats.group(3)), int(stats.group(4)))
    if exp.cases is not None:
        _check_expected(root, exp.cases, v)
    if not ktap.cases(root) and not any(p.category == 'missing' for p in v.problems):
        v.add('missing', '', 'no KUnit case ran (no KTAP results in the console log)')
    return v


def _check_counted(v: 'Verdict', name: str, node: ktap.Test, failed: int, skipped: int) -> None:
    """KUnit's own count of failed and skipped results against the printed ones.

    6.1's KUnit prints a skipped parameter as a plain 'ok', without its
    SKIP directive and reason, while its count line says skip:N: such a
    skip would pass for a pass and could not be checked against
    kunit/expected-skips. A hidden failure would be worse still.
    """
    printed_skip = sum(1 for t in node.subtests if t.status is ktap.Status.SKIP)
    printed_fail = sum(1 for t in node.subtests if t.status is ktap.Status.FAIL)
    if skipped > printed_skip:
        v.add('unexpected-skip', name, f'KUnit counted {skipped} skipped results, '
              f'{printed_skip} were printed as skipped: the others were printed as ok '
              'without a reason (as 6.1\'s KUnit prints skipped parameters)')
    if failed > printed_fail:
        v.add('failed', name, f'KUnit counted {failed} failed results, {printed_fail} '
              'were printed as failed')


def _check_expected(root: ktap.Test, want: Dict[str, List[str]], v: Verdict) -> None:
    if not want:
        v.add('missing', '', 'the filter selects no case of the kunit/ suites')
        return
    ran = {s.name: {c.name for c in s.subtests} for s in root.subtests}
    for suite, cases in want.items():
        if suite not in ran:
            v.missing += len(cases)
            v.add('missing', suite, f'suite did not run ({len(cases)} cases expected)')
            continue
        for case in cases:
            if case not in ran[suite]:
                v.missing += 1
                v.add('missing', f'{suite}.{case}', 'case did not run')


def attribute(root: ktap.Test, ktap_start: int, finding: hygiene.Finding,
              index: Optional[ktap.CaseIndex] = None) -> str:
    """suite.case[.param] during which a console line was printed, or ''."""
    if ktap_start < 0:
        return ''
    at = finding.lineno - 1 - ktap_start
    hit = index.at(at) if index is not None else ktap.case_at(root, at)
    return hit[0] if hit else ''


def where(root: ktap.Test, ktap_start: int, lineno: int) -> str:
    """Where a line outside every case was printed, for the message."""
    index = lineno - 1 - ktap_start
    if ktap_start < 0 or index < 0:
        return 'before the suites (boot)'
    suite = ktap.suite_at(root, index)
    if suite is not None:
        return f'in suite {suite.name}, outside its cases (suite init/exit)'
    return 'between or after the suites'


def judge_console(console: ktap.Console, exp: Expectations) -> Tuple[int, ktap.Test, Verdict]:
    """The whole verdict of one console: KTAP, expectations, kernel log."""
    start, lines = ktap.extract_at(console.lines)
    root = ktap.parse(lines)
    v = judge_ktap(root, exp)
    index = ktap.CaseIndex(root)
    for f in hygiene.check(console.lines):
        if f.why == hygiene.REBOOT:
            v.add('reboot', '', f'console line {f.lineno}: the kernel booted again '
                  '(a panic, a watchdog reset, a guest without -no-reboot): the results of '
                  'the first boot are judged, whatever it left without a result line is '
                  'crashed, and the second boot is not counted', f.line)
            continue
        if f.why == hygiene.LOCKDEP_OFF:
            v.add('lockdep-off', '', f'console line {f.lineno}: lockdep switched itself off: '
                  f'the kernel checked locking only up to there: {f.line.strip()}',
                  hygiene.context(console.lines, f.lineno))
            continue
        name = attribute(root, start, f, index)
        place = '' if name else f' ({where(root, start, f.lineno)})'
        what = f'{f.why} ({f.kind})' if f.kind else f.why
        v.add('kernel-log', name, f'{what}{place}: {f.line.strip()}',
              hygiene.context(console.lines, f.lineno), f.kind, f.title)
    if console.truncated:
        v.add('console', '', f'the console log is larger than {ktap.MAX_CONSOLE >> 20} MiB: '
              'only its beginning was judged')
    apply_known(v, exp)
    quote_once(v.problems)
    quote_once(v.known)
    return start, root, v


# Kernel reports of one key quoted in full; the others name the first.
QUOTED_ALIKE = 20


def quote_once(problems: Sequence[Problem]) -> None:
    """Past the first QUOTED_ALIKE reports of one key, quote none: a console
    that printed the same report many thousand times (a WARN in a loop) would
    make outputs many times its size. Done after apply_known(), which reads
    each report's own text; each report is still listed, with its case."""
    seen: Dict[str, Problem] = {}
    count: Dict[str, int] = {}
    for p in problems:
        if p.category != 'kernel-log' or not p.key:
            continue
        count[p.key] = count.get(p.key, 0) + 1
        first = seen.setdefault(p.key, p)
        if count[p.key] > QUOTED_ALIKE and p.detail:
            p.detail = (f'(the same report as in {first.name or "the run"}, quoted there: '
                        f'{p.title})')


def apply_known(v: Verdict, exp: Expectations) -> None:
    """Move what known failures name out of the way, unless strict.

    A known failure is a finding about the kernel (Documentation/findings/): the
    case stays and keeps failing, listed with why; STRICT=1 makes it red.
    Only what an entry names is known: a failure or a kernel report in the
    same case that no entry names stays red (the known ones still listed),
    and so does a crash or a timeout. An entry (not a race) that applied to
    a case that ran, and named nothing there, is listed as 'did not occur'.
    """
    used: List[KnownFailure] = []
    for p in list(v.problems):
        if not p.name or p.category not in ('failed', 'kernel-log'):
            continue
        entries = [k for k in exp.known if _applies(k.case, k.when, p.name, exp.context)]
        if not entries:
            continue
        if p.category == 'kernel-log':
            k = next((k for k in entries if _names_report(k, p)), None)
            if k is None:
                specific = [e for e in entries if not e.race]
                if specific:
                    p.message += (' [not named by the known failures of this case: '
                                  + '; '.join(f'{e.where} {e.what}' for e in specific) + ']')
                continue
            used.append(k)
            _known(v, exp, p, k)
            continue
        blocks = v.failures.get(p.name)
        if not blocks:
            continue        # not a case's own failure (counts), or nothing printed
        named = [(b, next((k for k in entries if _names(k, b)), None)) for b in blocks]
        known = [(b, k) for b, k in named if k is not None]
        unnamed = [b for b, k in named if k is None]
        used += [k for _, k in known]
        if not known:
            continue
        if not unnamed:
            _known(v, exp, p, known[0][1])
            continue
        # The named failures stay listed as known; the case is red for the rest.
        title = failure_title(p.name, known[0][0])
        _known(v, exp, Problem('failed', p.name, 'failed: ' + known[0][0].splitlines()[0],
                               '\n\n'.join(b for b, _ in known), title=title,
                               key=key_of('failed', p.name, '', title)),
               known[0][1], listed=False)
        p.message = (f'failed: {unnamed[0].splitlines()[0]} [{len(unnamed)} of {len(blocks)} '
                     'failures named by no known failure of this case]')
        p.detail = '\n\n'.join(unnamed)
        p.title = failure_title(p.name, unnamed[0])
        p.key = key_of('failed', p.name, p.message, p.title)
    for k in exp.known:
        if k.race or k in used:
            continue
        # A case that was skipped (an expected skip: arm64 has no suspend
        # to RAM) says nothing of whether its known failure still occurs.
        if any(_applies(k.case, k.when, n, exp.context) and st != ktap.Status.SKIP.value
               for n, st in v.statuses.items()):
            # TREE=: the news a maintainer wants, said as such.
            why = ('fixed in this tree' if exp.context.get('tree')
                   else 'fixed, or the test changed')
            v.not_seen.append(Problem('known-not-seen', k.case, f'known failure did not occur '
                                      f'({k.where}: {k.what}): {why}', k.why))

def _known(v: Verdict, exp: Expectations, p: Problem, k: KnownFailure,
           listed: bool = True) -> None:
    p.message += f' [known failure: {k.why}]'
    if exp.strict:
        if not listed:
            v.problems.append(p)
        return
    if listed:
        v.problems.remove(p)
    v.known.append(p)
