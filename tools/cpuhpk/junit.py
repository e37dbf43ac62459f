"""JUnit XML of a run, written from its verdict so that both always agree.

One <testsuite> per KUnit suite with one <testcase> per case, or per
parameter (classname = the suite, name = case or case.param, so a viewer
shows suite.case.param once). What the verdict holds against a case decides
its element: a failure, an unexpected skip or a kernel report printed while
it ran is a <failure>, a crash an <error>. Cases the run asked for that never
ran are <error> testcases in their suite; problems of the run as a whole
(kernel reports outside every case, timeout, build, the coverage gate, ...)
are <error> testcases named after their category in a 'cpuhp-kunit' suite.
Every problem of the verdict lands in exactly one testcase, so a run whose
verdict is red has at least one failure or error here.

Every problem's title and key (verdict.py: 'WARNING in cpuhp_thread_fun')
are in its testcase: as <property name="title"> and <property name="key">
(the same report in two jobs has the same key), and as the first line of
its entry in the text, with its frames decoded when they were.

Text is stripped of what XML 1.0 cannot carry (ESC, NUL, ...).

The other reports of the tools are lists of checks (make mutate's mutants,
make series*'s checks, make tree-test's): checks_suite() makes each a
<testsuite>, document() puts testsuites in one <testsuites> with their
totals, count() counts a testsuite's testcases (make merge-results
recounts the suites it gathers), save() writes the file.
"""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from cpuhpk import ktap
from cpuhpk.verdict import Problem, Verdict

RUN_SUITE = 'cpuhp-kunit'
# Characters XML 1.0 does not allow, even escaped.
NOT_XML = re.compile('[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')
FAILURE_CATEGORIES = ('failed', 'unexpected-skip', 'kernel-log')
# A testsuite's count attributes, and the testcases each counts.
COUNTS = {'tests': 'testcase', 'failures': 'testcase/failure', 'errors': 'testcase/error',
          'skipped': 'testcase/skipped'}


def clean(text: str) -> str:
    return NOT_XML.sub('\ufffd', text)


def _el(parent: ET.Element, tag: str, text: str = '', **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, tag, {k: clean(v) for k, v in attrs.items()})
    if text:
        el.text = clean(text)
    return el


@dataclasses.dataclass(frozen=True)
class Check:
    """One check as a testcase: passed, or failed (a <failure>) or an error
    (an <error>) with its @message. @text: what a failure or an error says
    beyond its message, or a passed check's <system-out>; none when empty."""
    name: str
    status: str = 'passed'          # passed, failed, error
    message: str = ''
    text: str = ''
    classname: str = ''
    seconds: Optional[float] = None     # its time attribute, when it was timed


def count(suite: ET.Element, names: Sequence[str] = tuple(COUNTS)) -> None:
    """Set the count attributes @names of @suite from its testcases."""
    for name in names:
        suite.set(name, str(len(suite.findall(COUNTS[name]))))


def checks_suite(name: str, checks: Sequence[Check],
                 counted: Sequence[str] = ('tests', 'failures', 'errors')) -> ET.Element:
    """@checks as the <testsuite> @name, with the count attributes @counted."""
    suite = ET.Element('testsuite', name=clean(name))
    for c in checks:
        attrs = {'classname': c.classname, 'name': c.name}
        if c.seconds is not None:
            attrs['time'] = f'{c.seconds:.1f}'
        tc = _el(suite, 'testcase', **attrs)
        if c.status == 'passed':
            if c.text:
                _el(tc, 'system-out', c.text)
        else:
            _el(tc, 'failure' if c.status == 'failed' else 'error', c.text, message=c.message)
    count(suite, counted)
    return suite


def document(suites: Iterable[ET.Element], totals: Sequence[str] = ()) -> ET.ElementTree:
    """<testsuites> of @suites, with the sums of their count attributes @totals."""
    top = ET.Element('testsuites')
    top.extend(suites)
    for name in totals:
        top.set(name, str(sum(int(s.get(name, '0')) for s in top.iter('testsuite'))))
    ET.indent(top)
    return ET.ElementTree(top)


def save(path: Path, doc: ET.ElementTree) -> None:
    doc.write(path, encoding='utf-8', xml_declaration=True)


def _problem_text(problems: List[Problem]) -> str:
    return '\n\n'.join(f'[{p.category}] {p.message}'
                       + (f'\ntitle: {p.title}' if p.title and p.title != p.message else '')
                       + (f'\n{p.detail}' if p.detail else '')
                       + (f'\ndecoded:\n{p.decoded}' if p.decoded else '')
                       for p in problems)


def _properties(tc: ET.Element, problems: List[Problem]) -> None:
    """The titles and keys of @problems, once each, as the testcase's properties."""
    seen: List[Tuple[str, str]] = []
    for p in problems:
        for name, value in (('title', p.title), ('key', p.key)):
            if value and (name, value) not in seen:
                seen.append((name, value))
    if seen:
        props = _el(tc, 'properties')
        for name, value in seen:
            _el(props, 'property', name=name, value=value)


def _testcase(suite_el: ET.Element, classname: str, name: str, problems: List[Problem],
              test: Optional[ktap.Test] = None, known: Optional[List[Problem]] = None) -> None:
    tc = _el(suite_el, 'testcase', name=name, classname=classname)
    _properties(tc, problems or known or [])
    diagnostics = '\n'.join(test.diagnostics) if test is not None else ''
    if known and not problems:
        # A finding listed in kunit/known-failures-<KVER>: not red unless STRICT=1.
        _el(tc, 'skipped', _problem_text(known), message=f'known failure: {known[0].message}')
    elif problems:
        errors = [p for p in problems if p.category not in FAILURE_CATEGORIES]
        tag = 'error' if errors else 'failure'
        first = (errors or problems)[0]
        _el(tc, tag, _problem_text(problems), message=first.message,
            type=f'{first.category}:{first.kind}' if first.kind else first.category)
    elif test is not None and test.status is ktap.Status.SKIP:
        _el(tc, 'skipped', message=test.reason)
    if diagnostics:
        _el(tc, 'system-out', diagnostics)


def junit(root: ktap.Test, v: Verdict) -> ET.ElementTree:
    by_name: Dict[str, List[Problem]] = {}
    for p in v.problems:
        by_name.setdefault(p.name, []).append(p)
    known: Dict[str, List[Problem]] = {}
    for p in v.known:
        known.setdefault(p.name, []).append(p)
    used: set[str] = set()
    suites: Dict[str, ET.Element] = {}

    def suite_el(name: str) -> ET.Element:
        if name not in suites:
            suites[name] = ET.Element('testsuite', name=clean(name))
        return suites[name]

    for suite in root.subtests:
        el = suite_el(suite.name)
        for name, t in ktap.cases(ktap.Test(name='', subtests=[suite])):
            short = name[len(suite.name) + 1:] if name != suite.name else 'suite result'
            _testcase(el, suite.name, short, by_name.get(name, []), t, known.get(name))
            used.add(name)
        for name, node in ktap.nodes(ktap.Test(name='', subtests=[suite])):
            if name in by_name and name not in used:
                short = name[len(suite.name) + 1:] if name != suite.name else 'suite result'
                _testcase(el, suite.name, short, by_name[name], node)
                used.add(name)
    # Problems of cases that never printed anything, then of the run.
    run_level: List[Problem] = []
    for name, problems in by_name.items():
        if name in used:
            continue
        if name:
            suite_name, _, case = name.partition('.')
            _testcase(suite_el(suite_name), suite_name, case or 'suite result', problems)
        else:
            run_level += problems
    # One testcase per category, and per report kind for kernel reports
    # ('kernel-log:hung-task'), so that every kind is red under its name.
    by_category: Dict[str, List[Problem]] = {}
    for p in run_level:
        by_category.setdefault(f'{p.category}:{p.kind}' if p.kind else p.category,
                               []).append(p)
    for category, problems in by_category.items():
        _testcase(suite_el(RUN_SUITE), RUN_SUITE, category, problems)
        # Every run-level problem is an error, whatever its category.
        tc = suites[RUN_SUITE][-1]
        for child in tc:
            if child.tag == 'failure':
                child.tag = 'error'

    for el in suites.values():
        count(el)
    return document(suites.values(), tuple(COUNTS))


def write(path: Path, root: ktap.Test, v: Verdict) -> None:
    save(path, junit(root, v))
