"""KUnit's test attributes (FILTER_ATTR=, FILTER_ACTION=): the cases a filter leaves out.

kunit.py --filter hands the filter to the kernel (kunit.filter=), which
leaves out the cases whose attributes do not pass it (with
--filter_action=skip: runs them as skipped, without a reason), and a
suite left without a case altogether. The kernel prints nothing of the
cases it leaves out, so what the run asks for is worked out here, as
lib/kunit/attributes.c (6.12) does it, from what the kunit/ sources give
each case and suite: speed (KUNIT_CASE_SLOW(), a .speed in
KUNIT_CASE_ATTR()'s or the suite's attributes; unset: normal) and
is_init (kunit_test_init_section_suites()). module (KBUILD_MODNAME, from
the kernel's Makefiles) is not worked out: a filter on it is refused.

apply_attribute_filter() narrows what a run asks for to what the filter
leaves in; accept_attribute_skips() expects the cases FILTER_ACTION=skip
runs as skipped. A kernel without KUnit attributes (6.1) is refused
before it is built (kunitcmd.tree_errors()).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from cpuhpk import kunitspec, verdict
from cpuhpk.paths import REPO
from cpuhpk.runspec import RunSpec

SPEEDS = ('unset', 'very_slow', 'slow', 'normal')     # enum kunit_speed, in order
ATTR_OPS = ('<=', '>=', '!=', '<', '>', '=')
CASE_CALL = re.compile(r'\b(KUNIT_CASE\w*)\(\s*(\w+)')
SPEED_SET = re.compile(r'\.speed\s*=\s*KUNIT_SPEED_(\w+)')
INIT_SUITES = re.compile(r'\bkunit_test_init_section_suites?\s*\(([^;]*)\)\s*;')


def parse_attr_filter(text: str) -> List[Tuple[str, str, str]]:
    """FILTER_ATTR as the kernel reads it: (attribute, operation, value) per
    ','-separated filter, all of which a case must pass. ValueError for what
    the kernel would refuse (it then runs no case at all) or this harness
    cannot work out (module)."""
    out: List[Tuple[str, str, str]] = []
    for part in (p.strip() for p in text.split(',')):
        if not part:
            continue
        at = next((i for i, c in enumerate(part) if c in '<>!='), -1)
        if at <= 0:
            raise ValueError(f'{part!r}: no attribute and operation (e.g. speed>slow)')
        name = part[:at]
        op = next(o for o in ATTR_OPS if part[at:].startswith(o)) \
            if any(part[at:].startswith(o) for o in ATTR_OPS) else ''
        value = part[at + len(op):]
        if not op or not value or any(c in '<>!=' for c in value) or ' ' in part:
            raise ValueError(f'{part!r}: expected <attribute><op><value>, op one of '
                             + ' '.join(ATTR_OPS))
        if name == 'speed':
            if value not in SPEEDS:
                raise ValueError(f'{part!r}: speed is one of {", ".join(SPEEDS)}')
        elif name == 'is_init':
            if value not in ('true', 'false'):
                raise ValueError(f'{part!r}: is_init is true or false')
        elif name == 'module':
            raise ValueError(f'{part!r}: the harness does not work out the cases a module '
                             'filter leaves out; choose suites with FILTER=')
        else:
            raise ValueError(f'{part!r}: KUnit has no attribute {name!r} '
                             '(speed, module, is_init)')
        out.append((name, op, value))
    if not out:
        raise ValueError('no filter')
    return out


def _int_filter(val: int, op: str, want: int) -> bool:
    """lib/kunit/attributes.c's int_filter()."""
    return {'<=': val <= want, '>=': val >= want, '!=': val != want, '<': val < want,
            '>': val > want, '=': val == want}[op]


def declared_attributes(kunit_dir: Path) -> Dict[str, Tuple[int, bool, Dict[str, int]]]:
    """suite -> (its speed, is_init, case -> its speed), speeds as indices of
    SPEEDS (0: unset), from the kunit/*_kunit.c sources (kunitspec.declared_cases()'s
    suites and cases)."""
    out: Dict[str, Tuple[int, bool, Dict[str, int]]] = {}
    for src in sorted(kunit_dir.glob('*_kunit.c')):
        text = src.read_text(errors='replace')
        arrays: Dict[str, Dict[str, int]] = {}
        for m in kunitspec.CASE_ARRAY.finditer(text):
            body = m.group(2)
            cases: Dict[str, int] = {}
            calls = list(CASE_CALL.finditer(body))
            for i, call in enumerate(calls):
                args_text = body[call.end():calls[i + 1].start() if i + 1 < len(calls) else None]
                speed = SPEED_SET.search(args_text) if 'ATTR' in call.group(1) else None
                cases[call.group(2)] = (SPEEDS.index('slow') if call.group(1).endswith('_SLOW')
                                        else _speed(speed.group(1)) if speed else 0)
            arrays[m.group(1)] = cases
        init_vars = {v.strip().lstrip('&') for m in INIT_SUITES.finditer(text)
                     for v in m.group(1).split(',')}
        for m in re.finditer(r'struct\s+kunit_suite\s+(\w+)\s*=\s*\{(.*?)\};', text, re.S):
            name = kunitspec.SUITE_NAME.search(m.group(2))
            cases_of = kunitspec.SUITE_CASES.search(m.group(2))
            if name and cases_of and cases_of.group(1) in arrays:
                speed = SPEED_SET.search(m.group(2))
                out[name.group(1)] = (_speed(speed.group(1)) if speed else 0,
                                      m.group(1) in init_vars, arrays[cases_of.group(1)])
    return out


def _speed(enum_suffix: str) -> int:
    """The index in SPEEDS of KUNIT_SPEED_<@enum_suffix> (NORMAL: normal)."""
    name = enum_suffix.lower()
    return SPEEDS.index(name) if name in SPEEDS else 0


def attribute_passes(filters: Sequence[Tuple[str, str, str]], suite_speed: int,
                     is_init: bool, case_speed: int) -> bool:
    """Whether a case passes every filter, as kunit_filter_attr_tests() decides:
    the case's value when set, else its suite's, else the attribute's default
    (speed: normal; is_init: false)."""
    for name, op, value in filters:
        if name == 'speed':
            val = case_speed or suite_speed or SPEEDS.index('normal')
            ok = _int_filter(val, op, SPEEDS.index(value))
        else:
            ok = _int_filter(int(is_init), op, int(value == 'true'))
        if not ok:
            return False
    return True


def attribute_left_out(cases: Dict[str, List[str]], filter_attr: str,
                       kunit_dir: Optional[Path] = None) -> Dict[str, List[str]]:
    """The cases of @cases (suite -> cases) that FILTER_ATTR=@filter_attr
    leaves out. A suite kunit/ does not declare (the user-space suite) has
    no attributes: the filter does not apply to it."""
    if not filter_attr:
        return {}
    filters = parse_attr_filter(filter_attr)
    declared = declared_attributes(kunit_dir or REPO / 'kunit')
    out: Dict[str, List[str]] = {}
    for suite, names in cases.items():
        if suite not in declared:
            continue
        speed, is_init, case_speeds = declared[suite]
        gone = [c for c in names if not attribute_passes(filters, speed, is_init,
                                                         case_speeds.get(c, 0))]
        if gone:
            out[suite] = gone
    return out


def apply_attribute_filter(exp: kunitspec.Expectations, spec: RunSpec) -> List[str]:
    """Narrow @exp to what FILTER_ATTR leaves in; the suite.case names it
    leaves out. Without FILTER_ACTION=skip those are not asked for (the
    kernel never runs them, nor a suite it leaves without a case); with it
    they are, as skipped without a reason (accept_attribute_skips())."""
    if exp.cases is None or not spec.filter_attr:
        return []
    gone = attribute_left_out(exp.cases, spec.filter_attr)
    if spec.filter_action != 'skip':
        kept = {s: [c for c in cs if c not in gone.get(s, ())] for s, cs in exp.cases.items()}
        exp.cases = {s: cs for s, cs in kept.items() if cs}
    return [f'{s}.{c}' for s, cs in gone.items() for c in cs]


def accept_attribute_skips(v: verdict.Verdict, left_out: Sequence[str],
                           context: Dict[str, str]) -> None:
    """FILTER_ACTION=skip: the cases FILTER_ATTR leaves out, printed as
    skipped without a reason (6.12's KUnit gives them none), are expected."""
    if not left_out:
        return
    names = set(left_out)
    why = (f'left out by FILTER_ATTR={context.get("filter_attr", "")} '
           '(FILTER_ACTION=skip)')
    for s in v.skips:
        if s.name in names and not s.reason:
            s.expected, s.why = True, why
    v.problems = [p for p in v.problems if not (
        p.category == 'unexpected-skip' and p.name in names
        and p.message == 'skipped without a stated reason')]
