"""out/<run>/index.html: the run at a glance, one self-contained page.

Written from what the run left in its directory, every time its verdict is
written (outputs.write_outputs()) and once more when the run ends (coverage):
the verdict and counts at the top, every problem with its case and quoted
output (one row per finding: the same report or failure in many cases or
parameters, one key, is one row listing them; a kernel report's frames
decoded against the run's vmlinux when they were, decode.py), the known
failures (and those that did not occur), the skips with
their reasons, coverage per file and per gated function (summary.txt, with
a link to genhtml's report), the state map (states.html, embedded), and the
run's context: kernel, config, SMP, filter, seed, commit. make merge-results
writes one for the merge (merge_page()). No script, no external resource:
it is what a CI artefact link should open.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from cpuhpk import verdict

STYLE = '''
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 72em; color: #222; }
h1 { margin: 0 0 .2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ccc; }
.verdict { font-size: 2em; font-weight: bold; padding: .2em .6em; border-radius: .2em; }
.pass { background: #d8f5d0; color: #1d5e12; } .fail { background: #fbd6d3; color: #8a1208; }
.counts { font-size: 1.2em; margin: .4em 0 1em; }
table { border-collapse: collapse; width: 100%; } td, th { border: 1px solid #ddd;
padding: .25em .5em; vertical-align: top; text-align: left; } th { background: #f3f3f3; }
pre { background: #f7f7f7; padding: .5em; overflow-x: auto; font-size: 12px; }
code, .case { font-family: ui-monospace, monospace; } .muted { color: #777; }
iframe { width: 100%; height: 40em; border: 1px solid #ccc; }
'''
SEED = re.compile(r'# cpuhp_stress_walk: seed (\d+)')
FINDINGS = '../../Documentation/findings/README.md'


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """@rows are HTML already (escape what goes in); no header row without @head."""
    out = ['<table>' + ('<tr>' + ''.join(f'<th>{esc(h)}</th>' for h in head) + '</tr>'
                        if head else '')]
    out += ['<tr>' + ''.join(f'<td>{c}</td>' for c in row) + '</tr>' for row in rows]
    return '\n'.join(out) + '</table>'


def findings(problems: Sequence[verdict.Problem]) -> List[List[verdict.Problem]]:
    """@problems grouped by key (verdict.Problem.ident()), in first-seen order."""
    groups: Dict[str, List[verdict.Problem]] = {}
    for p in problems:
        groups.setdefault(p.ident(), []).append(p)
    return list(groups.values())


# Cases listed in a row before the rest are folded away.
CASES_SHOWN = 8


def _cases(group: Sequence[verdict.Problem]) -> str:
    names = list(dict.fromkeys(p.name or '(run)' for p in group))
    shown = '<br>'.join(f'<span class="case">{esc(n)}</span>' for n in names[:CASES_SHOWN])
    if len(names) > CASES_SHOWN:
        rest = '<br>'.join(f'<span class="case">{esc(n)}</span>' for n in names[CASES_SHOWN:])
        shown += (f'<details><summary>and {len(names) - CASES_SHOWN} more</summary>{rest}'
                  '</details>')
    return shown


def _problem_rows(problems: Sequence[verdict.Problem]) -> List[List[str]]:
    rows = []
    for group in findings(problems):
        p = group[0]
        detail = (f'<details><summary>quoted output</summary><pre>{esc(p.detail)}</pre>'
                  '</details>') if p.detail else ''
        decoded = next((q.decoded for q in group if q.decoded), '')
        if decoded:
            detail += ('<details open><summary>stack decoded against the vmlinux (file:line, '
                       f'inlined frames)</summary><pre>{esc(decoded)}</pre></details>')
        kind = f' <span class="muted">({esc(p.kind)})</span>' if p.kind else ''
        times = f' <b>&times;{len(group)}</b>' if len(group) > 1 else ''
        title = f'<b>{esc(p.title)}</b><br>' if p.title and p.title != p.message else ''
        more = (f' <span class="muted">(and {len(group) - 1} more alike)</span>'
                if len(group) > 1 else '')
        rows.append([esc(p.category) + kind + times, _cases(group),
                     title + esc(p.message) + more + detail])
    return rows


def _distinct(problems: Sequence[verdict.Problem]) -> str:
    n = len(findings(problems))
    return f' <span class="muted">{n} distinct</span>' if n < len(problems) else ''


def _document(title: str, body: List[str]) -> str:
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<title>{esc(title)}</title><style>{STYLE}</style></head><body>\n'
            + '\n'.join(body) + '\n</body></html>\n')


def context_rows(context: Dict[str, str], out: Path) -> List[List[str]]:
    ktap = out / 'results.ktap'
    seed = SEED.search(ktap.read_text(errors='replace')) if ktap.is_file() else None
    fields: List[Tuple[str, str]] = [
        ('kernel', context.get('version', '') or context.get('kver', '')),
        ('config', context.get('config', '')), ('SMP', context.get('smp', '')),
        ('FILTER', context.get('filter') or '*'), ('FIXES', context.get('fixes', '')),
        ('STRICT', context.get('strict', '')), ('stress seed', seed.group(1) if seed else ''),
        ('commit', context.get('commit', '')), ('console', context.get('console', '')),
        ('stack traces', context.get('decoded', '')),
        ('user-space suite expected', context.get('userspace', ''))]
    return [[esc(k), f'<code>{esc(v)}</code>'] for k, v in fields if v]


def run_page(out: Path) -> str:
    """The page of the run whose outputs are in @out (verdict.json at least)."""
    v, context = verdict.read_json(out / 'verdict.json')
    passed, failed, skipped, known = v.closing_counts()
    state = 'PASS' if v.ok else 'FAIL'
    title = f"cpuhp-kunit {state}: {context.get('kver', '')} {context.get('config', '')}"
    body = [f'<h1>cpuhp-kunit <span class="verdict {state.lower()}">{state}</span></h1>',
            f'<div class="counts">kunit: {passed} passed, {failed} failed, {skipped} skipped'
            f'{f", {known} known failures" if known else ""}</div>',
            _table((), context_rows(context, out))]
    body.append(f'<h2>Problems ({len(v.problems)}){_distinct(v.problems)}</h2>')
    body.append(_table(('category', 'case', 'what'), _problem_rows(v.problems))
                if v.problems else '<p>None: every case the run asked for passed or was '
                'skipped for a listed reason, and the console is clean.</p>')
    if v.known or v.not_seen:
        body.append(f'<h2>Known failures ({len(v.known)}){_distinct(v.known)}</h2><p>Kernel '
                    'findings listed in '
                    f'<code>kunit/known-failures-&lt;KVER&gt;</code>, written up in '
                    f'<a href="{FINDINGS}">Documentation/findings/</a>; not red unless '
                    'STRICT=1.</p>')
        body.append(_table(('category', 'case', 'what'), _problem_rows(v.known)))
    if v.not_seen:
        body.append('<h3>Known failures that did not occur</h3>')
        body.append(_table(('entry', 'what', 'finding'), [
            [f'<span class="case">{esc(p.name)}</span>', esc(p.message), esc(p.detail)]
            for p in v.not_seen]))
    if v.skips:
        unexpected = sum(not s.expected for s in v.skips)
        body.append(f'<h2>Skips ({len(v.skips)}, {unexpected} not expected)</h2><details>'
                    '<summary>each skip with its reason</summary>')
        body.append(_table(('case', 'reason', 'expected', 'why'), [
            [f'<span class="case">{esc(s.name)}</span>', esc(s.reason),
             'yes' if s.expected else '<b>no</b>', esc(s.why)] for s in v.skips]))
        body.append('</details>')
    summary = out / 'summary.txt'
    if summary.is_file():
        link = ' (<a href="html/index.html">line by line</a>)' \
            if (out / 'html' / 'index.html').is_file() else ''
        body.append(f'<h2>Coverage{link}</h2><pre>{esc(summary.read_text())}</pre>')
    if (out / 'states.html').is_file():
        body.append('<h2>The state table (<a href="states.html">open</a>)</h2>'
                    '<iframe src="states.html" title="hotplug states"></iframe>')
    files = [f for f in ('console.log', 'results.ktap', 'verdict.json', 'junit.xml',
                         'results.json', 'kunit.log', 'coverage.info') if (out / f).is_file()]
    body.append('<h2>Files</h2><p>' + ' · '.join(f'<a href="{f}">{f}</a>' for f in files)
                + '</p>')
    return _document(title, body)


def write_run(out: Path) -> Path:
    page = out / 'index.html'
    page.write_text(run_page(out))
    return page


def merge_page(ok: bool, jobs: Sequence[Dict[str, Any]], problems: Sequence[str],
               mutants: Sequence[str], found: Sequence[Dict[str, Any]] = ()) -> str:
    """The page of make merge-results: one row per job, linking its own page;
    the findings of all jobs (@found: merge.findings()), each once."""
    state = 'PASS' if ok else 'FAIL'
    body = [f'<h1>cpuhp-kunit merge <span class="verdict {state.lower()}">{state}</span></h1>',
            f'<div class="counts">{len(jobs)} job(s)</div>', '<h2>Jobs</h2>',
            _table(('verdict', 'job', 'counts', 'directory'), [
                [('PASS' if j['ok'] else '<b>FAIL</b>'), esc(j['label']), esc(j['counts']),
                 f'<a href="{esc(j["page"])}">{esc(j["path"])}</a>' if j.get('page')
                 else esc(j['path'])] for j in jobs])]
    if found:
        body.append(f'<h2>Findings ({len(found)} distinct, {sum(f["count"] for f in found)} '
                    'in all)</h2><p>The problems and known failures of every job, each '
                    'finding once: the same kernel report or failure in many jobs, cases '
                    'or parameters has one title.</p>')
        body.append(_table(('finding', 'seen', 'jobs', 'cases'), [
            [f'<b>{esc(f["title"])}</b> <span class="muted">({esc(f["category"])}'
             + (f', {esc(f["kind"])}' if f['kind'] else '') + ')'
             + (', known failure' if f['known'] else '') + '</span>',
             f'{f["count"]}&times;', '<br>'.join(esc(j) for j in f['jobs']),
             '<br>'.join(f'<span class="case">{esc(c or "(run)")}</span>'
                         for c in f['cases'][:CASES_SHOWN])
             + (f' <span class="muted">and {len(f["cases"]) - CASES_SHOWN} more</span>'
                if len(f['cases']) > CASES_SHOWN else '')] for f in found]))
    if problems:
        body.append('<h2>Problems of the merge</h2><ul>'
                    + ''.join(f'<li>{esc(p)}</li>' for p in problems) + '</ul>')
    if mutants:
        body.append(f'<h2>Mutants</h2><pre>{esc(chr(10).join(mutants))}</pre>')
    return _document(f'cpuhp-kunit merge {state}', body)

