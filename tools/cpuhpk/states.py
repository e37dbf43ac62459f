"""states.html: the hotplug state table of a run, coloured by what cpuhp_sweep saw.

The cpuhp_sweep suite prints the table it swept on the console
('cpuhp_sweep: table <n> <name> <section> <startup|-> <teardown|-> <cant_stop|->')
and reports one KTAP result per state and direction (cpuhp_sweep_rollback:
'up|down <n> <name>') and per target (cpuhp_sweep_target). This draws one
self-contained HTML page (no JavaScript): a row per state with its section
and callbacks, and a cell per direction and for the target, coloured by the
outcome: rolled back clean, refused by the rules (with the rule), finding
(known failure), failed, not reached.
"""

from __future__ import annotations

import dataclasses
import html
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from cpuhpk import ktap
from cpuhpk.verdict import Verdict

TABLE = re.compile(r'cpuhp_sweep: table (\d+) (\S+) (\S+) (\S+) (\S+) (\S+)')
PARAM = re.compile(r'^(up|down) (\d+) ')
SUITE = 'cpuhp_sweep'
COLOURS = {'clean': '#2e7d32', 'refused': '#9e9e9e', 'finding': '#ef6c00',
           'failed': '#c62828', 'not reached': '#ffffff'}


@dataclasses.dataclass
class State:
    number: int
    name: str
    section: str
    startup: bool
    teardown: bool
    cant_stop: bool
    cells: Dict[str, str] = dataclasses.field(default_factory=dict)     # column -> outcome
    notes: Dict[str, str] = dataclasses.field(default_factory=dict)     # column -> why


def table(console: Sequence[str]) -> List[State]:
    states: Dict[int, State] = {}
    for line in console:
        m = TABLE.search(line)
        if m:
            n = int(m.group(1))
            states[n] = State(n, m.group(2), m.group(3), m.group(4) == 'startup',
                              m.group(5) == 'teardown', m.group(6) == 'cant_stop')
    return [states[n] for n in sorted(states)]


def outcomes(states: List[State], root: ktap.Test, v: Verdict) -> None:
    """Fill each state's cells from the KTAP results and the verdict."""
    by_number = {s.number: s for s in states}
    known = {p.name: p for p in v.known}
    bad = {p.name: p for p in v.problems}
    columns = {'cpuhp_sweep_rollback': None, 'cpuhp_sweep_target': 'target',
               'cpuhp_sweep_fail_fires': None}
    for name, t in ktap.cases(root):
        suite, _, rest = name.partition('.')
        case, _, param = rest.partition('.')
        if suite != SUITE or case not in columns:
            continue
        m = PARAM.match(param)
        if not m or int(m.group(2)) not in by_number:
            continue
        column = columns[case] or m.group(1)
        state = by_number[int(m.group(2))]
        if case == 'cpuhp_sweep_fail_fires' and name not in bad and name not in known:
            continue    # the rules refused it or it fired: the rollback cell says enough
        if name in bad:
            state.cells[column], state.notes[column] = 'failed', bad[name].message
        elif name in known:
            # The why of the kunit/known-failures-<KVER> row, not the assertion.
            why = known[name].message.rpartition('[known failure: ')[2].rstrip(']')
            state.cells[column], state.notes[column] = 'finding', why
        elif t.status is ktap.Status.PASS:
            state.cells[column] = 'clean'
        elif t.status is ktap.Status.SKIP:
            # A skip that names a finding is one (a target that wedges the CPU).
            outcome = 'finding' if 'Findings' in t.reason else 'refused'
            state.cells[column], state.notes[column] = outcome, t.reason
        else:
            state.cells[column], state.notes[column] = 'failed', t.reason or t.status.value


def render(states: List[State], title: str) -> str:
    def cell(s: State, column: str) -> str:
        outcome = s.cells.get(column, 'not reached')
        note = s.notes.get(column, '')
        return (f'<td style="background:{COLOURS[outcome]}" title="{html.escape(note)}">'
                f'{html.escape(outcome)}<br><small>{html.escape(note[:90])}</small></td>')

    rows = []
    for s in states:
        callbacks = ' '.join(c for c, present in (('startup', s.startup),
                                                  ('teardown', s.teardown)) if present)
        rows.append(f'<tr class="{s.section}"><td>{s.number}</td><td>{html.escape(s.name)}</td>'
                    f'<td>{s.section}</td><td>{callbacks or "-"}</td>'
                    f'<td>{"cant_stop" if s.cant_stop else ""}</td>'
                    + cell(s, 'up') + cell(s, 'down') + cell(s, 'target') + '</tr>')
    counts: Dict[str, int] = {}
    for s in states:
        for outcome in s.cells.values():
            counts[outcome] = counts.get(outcome, 0) + 1
    legend = ' '.join(f'<span style="background:{c};padding:2px 8px;border:1px solid #999">'
                      f'{k} ({counts.get(k, 0)})</span>' for k, c in COLOURS.items())
    return f'''<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 1em; }}
table {{ border-collapse: collapse; font-size: 12px; }}
td, th {{ border: 1px solid #bbb; padding: 2px 6px; vertical-align: top; }}
td small {{ color: #222; }}
tr.bp td:nth-child(3) {{ background: #e3f2fd; }}
tr.atomic td:nth-child(3) {{ background: #fff3e0; }}
tr.ap td:nth-child(3) {{ background: #e8f5e9; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>One row per named state of the hotplug table, in order. Section: bp (run by the
control CPU), atomic (STARTING/DYING, on the CPU with interrupts off), ap (the CPU's
hotplug thread). Up/down: a failure of the state injected while the CPU comes up or
goes down. Target: the CPU driven to the state and back.</p>
<p>{legend}</p>
<table><tr><th>#</th><th>name</th><th>section</th><th>callbacks</th><th></th>
<th>up</th><th>down</th><th>target</th></tr>
{chr(10).join(rows)}
</table></body></html>
'''


def counts_line(states: Sequence[State]) -> str:
    """How many states, per section, and how each direction came out."""
    sections = {sec: sum(1 for s in states if s.section == sec) for sec in ('bp', 'atomic', 'ap')}
    parts = [f'{len(states)} named states (' + ', '.join(f'{k} {n}' for k, n in sections.items())
             + ')']
    for column in ('up', 'down', 'target'):
        got: Dict[str, int] = {}
        for s in states:
            outcome = s.cells.get(column, 'not reached')
            got[outcome] = got.get(outcome, 0) + 1
        parts.append(f'{column}: ' + ', '.join(f'{got[k]} {k}' for k in COLOURS if k in got))
        if column == 'up':
            parts[-1] = 'rolled back ' + parts[-1]
    return '; '.join(parts)


def text(states: Sequence[State]) -> str:
    """states.txt: the counts, then a line per state (diffable between kernels)."""
    lines = [counts_line(states)]
    for s in states:
        lines.append(f'{s.number} {s.name} {s.section} '
                     + ' '.join(f'{c}={s.cells.get(c, "not reached").replace(" ", "-")}'
                                for c in ('up', 'down', 'target')))
    return '\n'.join(lines) + '\n'


def write(out: Path, console: Sequence[str], root: ktap.Test, v: Verdict,
          title: str) -> Optional[Path]:
    """out/states.html and states.txt, when the console holds the sweep's table."""
    states = table(console)
    if not states:
        return None
    outcomes(states, root, v)
    path = out / 'states.html'
    path.write_text(render(states, title))
    (out / 'states.txt').write_text(text(states))
    return path
