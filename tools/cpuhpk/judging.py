"""A console judged: its verdict from the KTAP results, the kernel's reports
and the known failures.

judge_console() reads the KTAP of the console (ktap.py) and its kernel
reports (hygiene.py), checks them against what the run asked for
(kunitspec.py) and returns the verdict (verdict.py): each problem in
its category, pinned on the case during which it was printed, with the
known failures moved out of the way unless STRICT=1.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

from cpuhpk import hygiene, ktap
from cpuhpk.kunitspec import (Expectations, KnownFailure, applies, expected_skip,
                                   glob_search)
from cpuhpk.verdict import Problem, Skip, Verdict, failure_title, key_of

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


def _names(k: KnownFailure, text: str) -> bool:
    return bool(k.failed) and glob_search(k.failed, text)


def _names_report(k: KnownFailure, p: Problem) -> bool:
    return bool(k.report) and p.category == 'kernel-log' and any(
        glob_search(k.report, line) for line in report_head(p.detail))


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
        entries = [k for k in exp.known if applies(k.case, k.when, p.name, exp.context)]
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
        if any(applies(k.case, k.when, n, exp.context) and st != ktap.Status.SKIP.value
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
