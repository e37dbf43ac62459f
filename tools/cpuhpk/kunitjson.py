"""results.json: kunit.py's own parse of a console, held against ours.

make run has kunit.py write its parse of the console (--json, KernelCI's
format): a CI that reads kunit.py's summary must see the run the verdict
judged. kunit_py_disagreements() lists the results kunit.py reads
otherwise than we do (a problem of the run); kunit_py_derailed() tells a
parse derailed by kernel lines printed inside the KTAP (kunit.py parses
the KTAP lines alone again, and when that parse agrees with ours, the run
is judged on it); amend_kunit_json() writes our verdict into results.json
(kernel reports, missing cases, the problems of the run as a whole).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from cpuhpk import guest, junit, ktap, say, verdict

# kunit.py's status names (kunit_json.py) for ours.
KUNIT_PY_STATUS = {'pass': 'PASS', 'fail': 'FAIL', 'skip': 'SKIP', 'crashed': 'ERROR',
                   'no results': 'FAIL'}


def kunit_py_results(path: Path) -> Dict[str, str]:
    """suite.case[.param] -> status, from kunit.py's --json (KernelCI format)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    out: Dict[str, str] = {}

    def walk(group: Dict[str, Any], prefix: str) -> None:
        for case in group.get('test_cases') or []:
            if isinstance(case, dict):
                out[prefix + str(case.get('name', ''))] = str(case.get('status', ''))
        for sub in group.get('sub_groups') or []:
            if isinstance(sub, dict):
                walk(sub, prefix + str(sub.get('name', '')) + '.')
    if isinstance(data, dict):
        walk(data, '')
    return out


def kunit_py_disagreements(path: Path, v: verdict.Verdict) -> List[str]:
    """Where kunit.py's parse of the console (results.json) and ours differ.

    The user-space suite comes after the KUnit document's plan is complete:
    kunit.py does not read it, and it is left out here. Read before
    amend_kunit_json() writes our verdict into the same file.
    """
    theirs = {n: s for n, s in kunit_py_results(path).items()
              if n.split('.')[0] != guest.SYSFS_SUITE}
    if not theirs:
        return []
    ours = {n: s for n, s in v.statuses.items() if n.split('.')[0] != guest.SYSFS_SUITE}
    out = [f'{n}: kunit.py {theirs.get(n, "(absent)")}, ours {KUNIT_PY_STATUS.get(s, s)}'
           for n, s in ours.items() if theirs.get(n) != KUNIT_PY_STATUS.get(s, s)]
    out += [f'{n}: kunit.py {st}, ours (absent)' for n, st in theirs.items() if n not in ours]
    return out


# A line kunit.py's parser reads as KTAP (kunit_parser.py: the header,
# result, plan and diagnostic lines) or as the end of the document.
KTAP_LIKE = re.compile(r'\s*(K?TAP version \d+$|(not )?ok \d+|1\.\.\d+|#)')
# Seconds kunit.py gets to parse a console again (it takes about one).
REPARSE_TIMEOUT = 120


def kernel_lines_in_ktap(console: Sequence[str]) -> Tuple[List[str],
                                                          List[Tuple[int, str, bool]]]:
    """(the KTAP as kunit.py extracts it, the kernel's own lines in it).

    Each kernel line with its console line number and whether it stands
    right after a subtest's 'KTAP version' line, where kunit.py's parser
    cannot read past it. Messages printed by other CPUs and by drivers
    probing in the background (an i8042 keyboard, a TSC recalibration)
    land anywhere in the KTAP.
    """
    start, lines = ktap.extract_at(console)
    foreign = [(start + i + 1, ln, i > 0 and lines[i - 1][:1].isspace()
                and bool(ktap.KTAP_START.match(lines[i - 1])))
               for i, ln in enumerate(lines) if not KTAP_LIKE.match(ln)]
    return lines, foreign


def kunit_py_derailed(kunit_py: Path, out: Path, console_path: Path, kunit_json: Path,
                      v: verdict.Verdict, differ: List[str]) -> List[str]:
    """What is left of @differ once the kernel lines inside the KTAP are taken out.

    6.12's kunit_parser takes no other line between a subtest's 'KTAP
    version' and its '# Subtest:' line: one kernel message printed there
    and it reads the rest of the document one level off (hundreds of
    results renamed). That is kunit.py's weakness, not the run's: kunit.py
    parses the console again without the kernel's lines, and when that
    parse agrees with ours, the run is judged on it and its JSON replaces
    the derailed one (kept as results-derailed.json). When it still
    disagrees, or cannot be had, the differences stand.
    """
    console = ktap.read_console(console_path).lines
    lines, foreign = kernel_lines_in_ktap(console)
    if not foreign:
        return differ
    kept = len(lines) - len(foreign)
    only = out / 'results-ktap-only.ktap'
    only.write_text(''.join(f'{ln}\n' for ln in lines if KTAP_LIKE.match(ln)))
    reparsed = out / 'results-ktap-only.json'
    try:
        subprocess.run([sys.executable, str(kunit_py), 'parse', f'--json={reparsed}', str(only)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=REPARSE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        say.log(f'kunit.py could not parse the KTAP lines alone again: {e}')
        return differ
    if not reparsed.is_file():
        return differ
    left = kunit_py_disagreements(reparsed, v)
    if left:
        return left
    derailing = [f for f in foreign if f[2]] or foreign
    where = '; '.join(f'console line {n}: {ln[:80]!r}' for n, ln, _ in derailing[:3])
    say.log(f'kunit.py\'s parser was derailed by kernel line(s) printed inside the KTAP '
            f'({where}) and read {len(differ)} result(s) differently; on the {kept} KTAP '
            f'lines alone, without the {len(foreign)} kernel lines ({only.name}), it agrees '
            f'with ours: {kunit_json.name} is that parse now, the derailed one is '
            'results-derailed.json')
    shutil.copyfile(kunit_json, out / 'results-derailed.json')
    shutil.copyfile(reparsed, kunit_json)
    return []


def amend_kunit_json(path: Path, v: verdict.Verdict) -> None:
    """Make kunit.py's results.json (KernelCI format) carry our verdict too.

    kunit.py knows nothing of kernel reports, missing cases or the coverage
    gate: a case the verdict holds something against becomes FAIL (ERROR when
    it crashed or never ran), and problems of the run as a whole are added as
    ERROR test cases named cpuhp-kunit.<category>.
    """
    try:
        data = json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    data.setdefault('name', 'KUnit Test Group')
    data.setdefault('sub_groups', [])
    data.setdefault('test_cases', [])
    rank = {'PASS': 0, 'SKIP': 1, 'FAIL': 2, 'ERROR': 3}
    for p in v.known + v.problems:
        status = 'ERROR' if p.category not in junit.FAILURE_CATEGORIES else 'FAIL'
        if not p.name:
            name = f'cpuhp-kunit.{p.category}'
            if not any(c.get('name') == name for c in data['test_cases']):
                data['test_cases'].append({'name': name, 'status': status})
            continue
        group, parts = data, p.name.split('.', 2)
        for part in parts[:-1]:
            found = next((g for g in group['sub_groups'] if g.get('name') == part), None)
            if found is None:
                found = {'name': part, 'sub_groups': [], 'test_cases': []}
                group['sub_groups'].append(found)
            group = found
        case = next((c for c in group['test_cases'] if c.get('name') == parts[-1]), None)
        if case is None:
            sub = next((g for g in group['sub_groups'] if g.get('name') == parts[-1]), None)
            case = {'name': parts[-1]}
            (sub['test_cases'] if sub is not None else group['test_cases']).append(case)
        if p in v.known:
            # A finding in kunit/known-failures-<KVER>: what kunit.py calls FAIL is not red.
            if case.get('status', 'FAIL') == 'FAIL':
                case['status'] = 'SKIP'
        elif rank[status] > rank.get(case.get('status', 'PASS'), 0):
            case['status'] = status
    path.write_text(json.dumps(data, indent=4) + '\n')
