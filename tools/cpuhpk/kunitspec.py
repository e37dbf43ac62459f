"""What a run asked for, and what it may see: the kunit/ tables a verdict reads.

- the suites and cases the kunit/ sources declare (declared_cases()), and
  what a FILTER selects of them (filtered());
- kunit/expected-skips: the skips that are fine, where (ExpectedSkip);
- kunit/known-failures-<KVER>: the failures and kernel reports that are
  findings about the kernel, not red (KnownFailure).

judging.py judges a console against them (Expectations).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from pathlib import Path
from typing import Callable, Collection, Dict, List, Optional, Sequence

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


def applies(case_glob: str, when: Dict[str, str], name: str, context: Dict[str, str]) -> bool:
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
    failed: str = ''            # glob over one failure's text (judging.failure_blocks())
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

def glob_search(glob: str, text: str) -> bool:
    """@text contains a match of @glob: '*' any characters (newlines too),
    '?' one; every other character stands for itself ('calls[i]' is not a
    character class, as it would be for fnmatch).
    """
    regex = ''.join('.*' if c == '*' else '.' if c == '?' else re.escape(c) for c in glob)
    return re.search(regex, text, re.S) is not None


def expected_skip(table: Sequence[ExpectedSkip], name: str, reason: str,
                  context: Dict[str, str]) -> Optional[ExpectedSkip]:
    return next((e for e in table if e.reason == reason and
                 applies(e.case, e.when, name, context)), None)


@dataclasses.dataclass
class Expectations:
    """What a run asked for, and which of its skips are fine."""
    cases: Optional[Dict[str, List[str]]] = None    # None: not checked
    skips: Sequence[ExpectedSkip] = ()
    known: Sequence[KnownFailure] = ()
    strict: bool = False        # known failures are red too
    context: Dict[str, str] = dataclasses.field(default_factory=dict)
