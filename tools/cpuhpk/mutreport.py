"""What became of a mutant, from its runs' verdicts, and make mutate's report.

A run kills a mutant when it is red for a reason a test gives (KILLING),
and also when a known failure that the unmutated kernel shows on the same
guest did not occur: the mutant changed what a case sees, and the known
failure's entry says so by going unmet (judging.py's known-not-seen). A
known failure the unmutated run did not show either, or one marked a race,
kills nothing; a kill that rests on such entries alone holds only when a
second run of the same guest shows it again (make mutate reruns it): a
single run that missed a known failure is a sample, not a verdict.
"""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, FrozenSet, List, Sequence

from cpuhpk import junit, mutant_guests, runspec, verdict

# What a test gives: these categories kill a mutant. 'build' makes it invalid;
# the others (prepare, console, interrupted, ...) say the run itself failed.
KILLING = ('timeout', 'crashed', 'failed', 'kernel-log', 'unexpected-skip', 'missing')


@dataclasses.dataclass
class GuestRun:
    guest: str          # the topology the mutant's kernel booted with
    verdict: str        # killed, survived, invalid, error
    by: str
    seconds: float


@dataclasses.dataclass
class Outcome:
    mutant: str
    verdict: str        # killed, survived, invalid, not-covered, not-applicable, error
    by: str             # which cases (or what else) killed it, or why it did not count
    seconds: float
    promise: str
    detail: str = ''    # compiler error of an invalid mutant
    road: str = ''      # the guest that first reaches it (mutant_guests.NO_ROAD: none)
    lines: str = ''     # its changed lines, 'kernel/cpu.c:850'
    runs: List[GuestRun] = dataclasses.field(default_factory=list)   # in order
    # killed by known failures that did not occur, and by nothing else
    unmet_only: bool = False

    @property
    def guest(self) -> str:
        """The guest whose run decided the verdict ('' when none ran)."""
        return self.runs[-1].guest if self.runs else ''


def killers(v: verdict.Verdict) -> List[str]:
    """What made a mutant's run red, as names: cases, 'kernel log', 'timeout', ..."""
    names: List[str] = []
    for p in sorted(v.problems, key=lambda p: KILLING.index(p.category)
                    if p.category in KILLING else len(KILLING)):
        if p.category not in KILLING:
            continue
        name = p.name or {'kernel-log': 'kernel log'}.get(p.category, p.category)
        if p.category == 'kernel-log' and p.name:
            name = f'{p.name} (kernel log)'
        if name not in names:
            names.append(name)
    return names


def gone(v: verdict.Verdict, unmet: FrozenSet[str] = frozenset()) -> List[str]:
    """The known failures of @v that did not occur, by their cases, but for
    @unmet: the entries the unmutated run on the same guest did not meet
    either. An entry is its cases' glob with where and what it names
    (str() of judging.py's known-not-seen problem): two entries of one
    case count apart."""
    names = [p.name for p in v.not_seen if str(p) not in unmet]
    return [f'{n} (known failure did not occur)' for n in dict.fromkeys(names)]


def unmet_known(out: Path) -> FrozenSet[str]:
    """The known failures the run in @out did not meet (an unmutated run's:
    what gone() leaves out). Its verdict.json must be there: without it
    every unmet entry of a mutant's run would kill."""
    path = out / 'verdict.json'
    if not path.is_file():
        raise FileNotFoundError(f'{path}: the unmutated run wrote no verdict')
    return frozenset(str(p) for p in verdict.read_json(path)[0].not_seen)


def classify(name: str, out: Path, rc: int, seconds: float, text: str,
             unmet: FrozenSet[str] = frozenset()) -> Outcome:
    """The outcome of a mutant from its run's verdict.json; @unmet: the
    known failures the unmutated run on that guest did not meet (unmet_known())."""
    path = out / 'verdict.json'
    if not path.is_file():
        return Outcome(name, 'error', f'its run wrote no verdict (exit {rc})', seconds, text)
    v, _ = verdict.read_json(path)
    if v.ok and rc == 0:
        vanished = gone(v, unmet)
        if not vanished:
            return Outcome(name, 'survived', '', seconds, text)
        by = ', '.join(vanished[:4]) + (f' (+{len(vanished) - 4})' if len(vanished) > 4 else '')
        return Outcome(name, 'killed', by, seconds, text, unmet_only=True)
    build = [p for p in v.problems if p.category == 'build']
    if build:
        return Outcome(name, 'invalid', build[0].message, seconds, text, build[0].detail)
    names = killers(v)
    if not names:
        other = ', '.join(sorted({p.category for p in v.problems})) or f'exit {rc}'
        return Outcome(name, 'error', f'its run failed for no test reason: {other}',
                       seconds, text)
    by = ', '.join(names[:4]) + (f' (+{len(names) - 4})' if len(names) > 4 else '')
    return Outcome(name, 'killed', by, seconds, text)


def guests_run(o: Outcome) -> str:
    """'flat survived 41 s, smt killed 55 s': the guests that ran @o, in order."""
    return ', '.join(f'{r.guest} {r.verdict} {r.seconds:.0f} s' for r in o.runs)


def note(o: Outcome) -> str:
    """What killed @o and on which guest, or why it did not count."""
    if o.verdict == 'survived':
        return 'green on ' + ', '.join(r.guest for r in o.runs)
    return (f'on {o.guest}: ' if o.runs else '') + o.by


def report_junit(outcomes: Sequence[Outcome]) -> ET.ElementTree:
    """One testcase per mutant: killed passes, survived and not covered
    fail, the rest are errors."""
    checks = []
    for o in outcomes:
        ran = f' (guests run: {guests_run(o)})' if o.runs else ''
        if o.verdict == 'survived':
            status, message, text = 'failed', f'survived: {o.promise}{ran}', ''
        elif o.verdict == 'not-covered':
            status, message, text = 'failed', f'not covered: {o.by}', ''
        elif o.verdict != 'killed':
            status, message, text = 'error', f'{o.verdict}: {o.by}{ran}', o.detail
        else:
            status, message, text = 'passed', '', f'killed on the {o.guest} guest by {o.by}{ran}'
        checks.append(junit.Check(o.mutant, status, message, text,
                                  classname=f'mutants.{o.road or "none"}', seconds=o.seconds))
    return junit.document([junit.checks_suite('mutants', checks)],
                          totals=('tests', 'failures', 'errors'))


# The columns of the per-road counts; 'other': not applicable, run errors.
ROAD_COLUMNS = ('killed', 'survived', 'not-covered', 'invalid', 'other')


def road_counts(outcomes: Sequence[Outcome]) -> Dict[str, Dict[str, int]]:
    """Per road (the guest that first reaches a mutant, in make coverage's
    order, then mutant_guests.NO_ROAD), how many mutants of each verdict."""
    order = [*runspec.TOPOLOGIES, mutant_guests.NO_ROAD]
    counts: Dict[str, Dict[str, int]] = {}
    for o in sorted(outcomes, key=lambda o: order.index(o.road) if o.road in order
                    else len(order)):
        row = counts.setdefault(o.road or mutant_guests.NO_ROAD, dict.fromkeys(ROAD_COLUMNS, 0))
        row[o.verdict if o.verdict in ROAD_COLUMNS else 'other'] += 1
    return counts


def report(outcomes: Sequence[Outcome], base: Path, context: Dict[str, object]) -> int:
    """report.md, report.json, junit.xml and the last lines; make mutate's exit status.

    report.json is what make merge-results reads: @context (kver, config,
    strict, shard and total: the number of mutants before sharding), the
    counts per road and every outcome.
    """
    table = ['| mutant | promise broken | road | guests run | verdict | killed by / why not '
             '| seconds |', '|---|---|---|---|---|---|---|']
    table += [f'| {o.mutant} | {o.promise} | {o.road} | {guests_run(o) or "-"} | {o.verdict} | '
              f'{note(o)} | {o.seconds:.0f} |' for o in outcomes]
    roads = road_counts(outcomes)
    table += ['', '| road | ' + ' | '.join(c.replace('-', ' ') for c in ROAD_COLUMNS) + ' |',
              '|---|' + '---|' * len(ROAD_COLUMNS)]
    table += [f'| {r} | ' + ' | '.join(str(row[c]) for c in ROAD_COLUMNS) + ' |'
              for r, row in roads.items()]
    base.mkdir(parents=True, exist_ok=True)
    (base / 'report.md').write_text('\n'.join(table) + '\n')
    (base / 'report.json').write_text(json.dumps(
        {**context, 'roads': roads, 'outcomes': [dataclasses.asdict(o) for o in outcomes]},
        indent=1) + '\n')
    report_junit(outcomes).write(base / 'junit.xml', encoding='utf-8', xml_declaration=True)
    for r, row in roads.items():
        print(f'cpuhp-kunit: road {r}: {row["killed"]} killed, {row["survived"]} survived, '
              f'{row["not-covered"]} not covered, {row["invalid"]} invalid, '
              f'{row["other"]} other')
    counts = {k: sum(o.verdict == k for o in outcomes)
              for k in ('killed', 'survived', 'not-covered', 'invalid', 'not-applicable', 'error')}
    uncovered = [o.mutant for o in outcomes if o.verdict == 'not-covered']
    print(f'cpuhp-kunit: mutants: {counts["killed"]}/{len(outcomes)} killed, '
          f'{counts["survived"]} survived, {counts["not-covered"]} not covered'
          + (f' ({", ".join(uncovered)})' if uncovered else '')
          + f', {counts["invalid"]} invalid (do not build), '
          f'{counts["not-applicable"]} not applicable, {counts["error"]} run errors; '
          f'table in {base / "report.md"}')
    return 0 if counts['killed'] == len(outcomes) else 1
