"""ISOLATE=: kunit.py --run_isolated's boots, one per suite or per case, judged as one run.

kunit.py --run_isolated boots the kernel once to list the cases
(kunit.action=list; the initramfs then powers off at once, guest.INIT),
then once per suite or case with kunit.filter_glob naming it. Each boot
opens test.log anew and --json is written anew after each boot: both hold
the last boot alone. With --raw_output=all kunit.py prints each boot's
console whole on its standard output, after its 'Starting KUnit Kernel
(i/n)...' line and the QEMU command line: this run takes console.log from
there (kunit.log), each boot after a line of its own (BOOT_MARK). Each
boot is judged as a console of its own (its kernel reports on its own
cases), their KTAP trees are joined into one (merge_suites()) and that is
judged against what the run asked for, as a single boot's tree is;
kunit.py's parse of each boot is joined the same way into results.json,
and the coverage of the boots is added up (gcov.merge_boots()). The
user-space suite runs in one boot only (guest.write(anchor=)).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from cpuhpk import guest, judging, ktap, kunitjson, kunitspec, reports, say, verdict

# kunit.py's own lines: print_with_timestamp()'s '[HH:MM:SS] '.
KUNIT_PY_STAMPED = re.compile(r'^\[\d\d:\d\d:\d\d\] ')
KUNIT_PY_BOOT = re.compile(r'^\[\d\d:\d\d:\d\d\] Starting KUnit Kernel \((\d+)/(\d+)\)\.\.\.$')
BOOT_MARK = re.compile(r'^cpuhp-kunit: boot (\d+)/(\d+) of kunit\.py --run_isolated=(\w+)$')
# 6.1's kunit.py runs stty after each boot, which complains on its standard
# error (kunit.py's output here) when that is not a terminal: not the console's.
KUNIT_PY_STTY = re.compile(r"^stty: 'standard input': ")
# A suite's (top-level) result line in a boot's console.
SUITE_RESULT = re.compile(r'^(not )?ok \d+ \S')
# The problems judge_ktap() finds in a KTAP tree: recomputed on the joined one.
KTAP_CATEGORIES = ('failed', 'crashed', 'missing', 'unexpected-skip')


def boot_mark(n: int, total: int, isolate: str) -> str:
    return f'cpuhp-kunit: boot {n}/{total} of kunit.py --run_isolated={isolate}'


class IsolatedEcho:
    """What of kunit.py --raw_output=all reaches the terminal: kunit.py's own
    lines (the build, 'Starting KUnit Kernel (i/n)...', the time) and each
    boot's suite results; the consoles go to kunit.log (and console.log)."""

    def __init__(self) -> None:
        self.booting = False

    def __call__(self, line: str) -> bool:
        if KUNIT_PY_BOOT.match(line):
            self.booting = True
            return True
        return not self.booting or bool(KUNIT_PY_STAMPED.match(line)
                                        or SUITE_RESULT.match(line))


def isolated_console(kunit_log: str, isolate: str) -> List[str]:
    """console.log of an ISOLATE= run: each boot's console as kunit.py
    --raw_output=all printed it in @kunit_log, after its BOOT_MARK line; ends
    at kunit.py's next own line. The QEMU command line kunit.py prints first
    ('Running tests with:', '$ qemu-system-...') is left out, and so is
    stty's complaint (KUNIT_PY_STTY); the listing boot before 'Starting
    KUnit Kernel (1/n)' printed nothing. [] when no boot started (the build
    failed)."""
    out: List[str] = []
    inside, head = False, 0
    for line in kunit_log.splitlines():
        m = KUNIT_PY_BOOT.match(line)
        if m:
            out.append(boot_mark(int(m.group(1)), int(m.group(2)), isolate))
            inside, head = True, 2
            continue
        if not inside:
            continue
        if KUNIT_PY_STAMPED.match(line):
            inside = False
            continue
        if head == 2 and line == 'Running tests with:':
            head = 1
            continue
        if head == 1 and line.startswith('$ '):
            head = 0
            continue
        head = 0
        if not KUNIT_PY_STTY.match(line):
            out.append(line)
    return out


def boots(lines: Sequence[str]) -> List[Tuple[int, int]]:
    """(first, end) line indices of each boot of an ISOLATE= console: after
    each BOOT_MARK line; in a console without them (joined elsewhere), from
    each kernel boot banner on (the first boot from the first line)."""
    marks = [i for i, ln in enumerate(lines) if BOOT_MARK.match(ln)]
    if marks:
        return [(m + 1, end) for m, end in zip(marks, marks[1:] + [len(lines)])]
    starts = [i for i, ln in enumerate(lines) if reports.BOOT_BANNER.match(ln)] or [0]
    starts[0] = 0
    return list(zip(starts, starts[1:] + [len(lines)]))


def boot_lines(lines: Sequence[str]) -> List[List[str]]:
    """The lines of each boot of an ISOLATE= console (boots())."""
    return [list(lines[a:b]) for a, b in boots(lines)]


def _merged_status(a: ktap.Status, b: ktap.Status) -> ktap.Status:
    """The result of a suite run in two boots: crashed or failed if either
    was, skipped if both were, passed otherwise."""
    for worst in (ktap.Status.CRASHED, ktap.Status.FAIL, ktap.Status.EMPTY):
        if worst in (a, b):
            return worst
    return ktap.Status.SKIP if a is b is ktap.Status.SKIP else ktap.Status.PASS


def merge_suites(roots: Sequence[ktap.Test]) -> ktap.Test:
    """One KTAP tree of the trees of several boots: their suites in order,
    those of one name (ISOLATE=test: a boot per case) joined into one, with
    their cases in order and KUnit's count lines added up. The cases' line
    indices stay those of their own boot's KTAP (attribution is done per
    boot)."""
    merged = ktap.Test(name='', status=ktap.Status.PASS)
    seen: Dict[str, ktap.Test] = {}
    sums: Dict[str, List[int]] = {}
    for root in roots:
        merged.add_diagnostics(root.diagnostics)
        for suite in root.subtests:
            stats = next((m for m in map(ktap.STATS.match, suite.counted)
                          if m and m.group(1) == suite.name), None)
            if stats:
                add = [int(stats.group(k)) for k in (2, 3, 4, 5)]
                old = sums.get(suite.name, [0, 0, 0, 0])
                sums[suite.name] = [x + y for x, y in zip(old, add)]
            prev = seen.get(suite.name) if suite.name and not suite.name.startswith('#') \
                else None
            if prev is None:
                copy = dataclasses.replace(suite, subtests=list(suite.subtests),
                                           diagnostics=list(suite.diagnostics),
                                           counted=list(suite.counted))
                merged.subtests.append(copy)
                if suite.name:
                    seen[suite.name] = copy
                continue
            prev.subtests += suite.subtests
            prev.status = _merged_status(prev.status, suite.status)
            prev.reason = prev.reason or suite.reason
            if suite.plan is not None:
                prev.plan = (prev.plan or 0) + suite.plan
            prev.add_diagnostics(suite.diagnostics)
            prev.cut += suite.cut
    for name, suite in seen.items():
        if name in sums:
            p, f, sk, total = sums[name]
            line = f'# {name}: pass:{p} fail:{f} skip:{sk} total:{total}'
            rest = [c for c in suite.counted
                    if not ((m := ktap.STATS.match(c)) and m.group(1) == name)]
            suite.counted = [line, *rest]
    merged.plan = len(merged.subtests)
    return merged


def _shift_console_line(p: verdict.Problem, offset: int) -> None:
    """A problem of one boot that names its console line ('console line N:'
    ...) names it in the whole console.log."""
    m = re.match(r'console line (\d+)(:.*)', p.message, re.S)
    if not m or not offset:
        return
    old = p.message
    p.message = f'console line {int(m.group(1)) + offset}{m.group(2)}'
    if p.title == old:
        p.title = p.message
    p.key = verdict.key_of(p.category, p.name, p.message, p.title)


def judge_isolated(console: ktap.Console,
                   exp: kunitspec.Expectations) -> Tuple[ktap.Test, verdict.Verdict, List[str]]:
    """The verdict of an ISOLATE= console, as of a single boot's: (the joined
    KTAP tree, the verdict, the KTAP lines of every boot one after the other).

    Each boot is judged as a console of its own (judging.judge_console():
    its kernel reports pinned on its own cases, a reboot within it); of
    that, the kernel's reports, reboots and lockdep are kept. The results
    are judged on the joined tree (merge_suites()) against @exp, with the
    known failures, as judge_console() judges one boot's.
    """
    per_boot = dataclasses.replace(exp, cases=None, known=())
    roots: List[ktap.Test] = []
    found: List[verdict.Problem] = []
    lines: List[str] = []
    for first, end in boots(console.lines):
        segment = console.lines[first:end]
        _, root, bv = judging.judge_console(ktap.Console(lines=segment), per_boot)
        roots.append(root)
        lines += ktap.extract(segment)
        for p in bv.problems:
            if p.category not in KTAP_CATEGORIES:
                _shift_console_line(p, first)
                found.append(p)
    root = merge_suites(roots)
    v = judging.judge_ktap(root, exp)
    v.problems += found
    if console.truncated:
        v.add('console', '', f'the console log is larger than {ktap.MAX_CONSOLE >> 20} MiB: '
              'only its beginning was judged')
    judging.apply_known(v, exp)
    judging.quote_once(v.problems)
    judging.quote_once(v.known)
    return root, v, lines


def run_root(out: Path, context: Dict[str, str]) -> ktap.Test:
    """The KTAP tree of the run in @out as outputs.judge() made it (its junit.xml's)."""
    console = out / 'console.log'
    if context.get('isolate') and console.is_file():
        lines = ktap.read_console(console).lines
        return merge_suites([ktap.parse(ktap.extract(b)) for b in boot_lines(lines)])
    ktap_path = out / 'results.ktap'
    return ktap.parse(ktap.read_console(ktap_path).lines) if ktap_path.is_file() \
        else ktap.Test(name='', status=ktap.Status.PASS)


def isolated_boots(exp: kunitspec.Expectations, isolate: str) -> int:
    """How many boots kunit.py --run_isolated=@isolate makes for @exp, the
    listing boot left out: one per KUnit suite, or per KUnit case."""
    kunit = {s: c for s, c in (exp.cases or {}).items() if s != guest.SYSFS_SUITE}
    return len(kunit) if isolate == 'suite' else sum(map(len, kunit.values()))


def isolation_anchor(exp: kunitspec.Expectations, isolate: str) -> str:
    """The kunit.filter_glob of the boot the user-space suite runs in
    (guest.write(anchor=)): the first KUnit suite by name, or its first case."""
    kunit = sorted(s for s in (exp.cases or {}) if s != guest.SYSFS_SUITE)
    if not isolate or not kunit or exp.cases is None:
        return ''
    suite = kunit[0]
    return suite if isolate == 'suite' else f'{suite}.{exp.cases[suite][0]}'


def merge_kunit_json(groups: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """kunit.py's --json of several boots as one: the first's fields, the
    suites of all, those of one name joined (ISOLATE=test)."""
    if not groups:
        return {}
    out = dict(groups[0])
    out['sub_groups'], out['test_cases'] = [], []
    by_name: Dict[str, Dict[str, Any]] = {}
    for g in groups:
        out['test_cases'] += [c for c in g.get('test_cases') or [] if isinstance(c, dict)]
        for sub in g.get('sub_groups') or []:
            if not isinstance(sub, dict):
                continue
            prev = by_name.get(str(sub.get('name', '')))
            if prev is None:
                copy = dict(sub, sub_groups=list(sub.get('sub_groups') or []),
                            test_cases=list(sub.get('test_cases') or []))
                out['sub_groups'].append(copy)
                by_name[str(sub.get('name', ''))] = copy
            else:
                prev['sub_groups'] += list(sub.get('sub_groups') or [])
                prev['test_cases'] += list(sub.get('test_cases') or [])
    return out


def kunit_py_parse_boots(kunit_py: Path, out: Path, segments: Sequence[Sequence[str]],
                         dest: Path, ktap_only: bool = False) -> bool:
    """kunit.py parse --json of each boot's console (@ktap_only: of its KTAP
    lines alone, as kunitjson.kunit_py_derailed()), joined into @dest
    (merge_kunit_json()). False when kunit.py gave no JSON for a boot."""
    groups: List[Dict[str, Any]] = []
    work = out / 'kunit-py-boots'
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        for n, segment in enumerate(segments, 1):
            lines = list(segment)
            if ktap_only:
                lines = [ln for ln in kunitjson.kernel_lines_in_ktap(lines)[0]
                         if kunitjson.KTAP_LIKE.match(ln)]
            console, parsed = work / f'boot{n}.log', work / f'boot{n}.json'
            console.write_text(''.join(f'{ln}\n' for ln in lines))
            try:
                subprocess.run([sys.executable, str(kunit_py), 'parse', f'--json={parsed}',
                                str(console)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=kunitjson.REPARSE_TIMEOUT,
                               check=False)
                data = json.loads(parsed.read_text())
            except (OSError, ValueError, subprocess.TimeoutExpired) as e:
                say.log(f'kunit.py gave no JSON of boot {n}: {e}')
                return False
            if isinstance(data, dict):
                groups.append(data)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    dest.write_text(json.dumps(merge_kunit_json(groups), indent=4) + '\n')
    return True


def kunit_py_isolated(kunit_py: Path, out: Path, console: Sequence[str], kunit_json: Path,
                      v: verdict.Verdict) -> Tuple[List[str], bool]:
    """results.json of an ISOLATE= run (kunit.py wrote none: --raw_output)
    from kunit.py's parse of each boot, and where it differs from ours:
    (the differences, whether a parse derailed by kernel lines in the KTAP
    was replaced by that of the KTAP lines alone, as
    kunitjson.kunit_py_derailed())."""
    segments = boot_lines(console)
    if not kunit_py_parse_boots(kunit_py, out, segments, kunit_json):
        return [], False
    differ = kunitjson.kunit_py_disagreements(kunit_json, v)
    if not differ or not any(kunitjson.kernel_lines_in_ktap(seg)[1] for seg in segments):
        return differ, False
    only = out / 'results-ktap-only.json'
    if not kunit_py_parse_boots(kunit_py, out, segments, only, ktap_only=True):
        return differ, False
    left = kunitjson.kunit_py_disagreements(only, v)
    if left:
        return left, False
    say.log(f'kunit.py\'s parser was derailed by kernel line(s) printed inside the KTAP of '
            f'a boot and read {len(differ)} result(s) differently; on the KTAP lines alone '
            f'it agrees with ours: {kunit_json.name} is that parse now, the derailed one is '
            'results-derailed.json')
    shutil.copyfile(kunit_json, out / 'results-derailed.json')
    shutil.copyfile(only, kunit_json)
    return [], True
