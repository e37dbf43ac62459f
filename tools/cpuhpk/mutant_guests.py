"""The guests a mutant runs on in `make mutate`, chosen by coverage.

make coverage boots the same kernel once per guest topology (flat, smt,
hotplug, nosmt, nosmt-force, maxcpus: arch.Arch.topologies, in that order) and each
boot leaves an lcov tracefile, out/<KVER>[-<CONFIG>][-<topology>]/coverage.info
(RunSpec.output_dir()). A mutant's changed lines are the pre-image lines of its
hunks (hunks()); its guests are those whose tracefile records one of them
as executed (route()), flat first, then make coverage's order. The first
of them is the mutant's road. A mutant no guest reaches is not covered: no
run could kill it, and make mutate counts it red.

A tracefile counts only while the tree digests as it did when the
tracefile was made (buildstamp.coverage_sources(), written by execute.py):
its line numbers describe those sources and no others. A guest whose
tracefile is missing or was made from other sources is run first as make
coverage runs it, unmutated (fresh_coverage()).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from cpuhpk import arch, buildstamp, coverage, gcov, tree, usertree
from cpuhpk.gcov import FileCov
from cpuhpk.runspec import RunSpec

HUNK = re.compile(r'^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@')
# The road of a mutant that no guest reaches.
NO_ROAD = 'none'


@dataclasses.dataclass(frozen=True)
class Hunk:
    path: str               # the file it edits, relative to the tree
    lines: Tuple[int, ...]  # its changed lines, numbered as before the patch
    end: int                # its last line before the patch


def hunks(patch_text: str) -> List[Hunk]:
    """The hunks of a -p1 patch, each with its changed lines.

    A removed or replaced line counts by its own number; an insertion with
    no removal next to it by the line it is inserted after (the first line
    of the file when it goes before that). The file is the one before the
    patch ('--- a/<path>'); a new file has no lines to count.
    """
    out: List[Hunk] = []
    path = ''
    old = end = old_left = new_left = 0
    lines: List[int] = []
    removed = False      # the run of -/+ lines so far removed a line
    for text in patch_text.splitlines():
        if old_left > 0 or new_left > 0:
            kind = text[:1] or ' '
            if kind == '\\':            # '\ No newline at end of file'
                continue
            if kind == '-':
                lines.append(old)
                old, old_left, removed = old + 1, old_left - 1, True
            elif kind == '+':
                if not removed:
                    lines.append(max(old - 1, 1))
                new_left -= 1
            else:
                old, old_left, new_left, removed = old + 1, old_left - 1, new_left - 1, False
            if old_left <= 0 and new_left <= 0 and path and lines:
                out.append(Hunk(path, tuple(sorted(set(lines))), end))
            continue
        m = HUNK.match(text)
        if text.startswith('--- '):
            name = text[4:].split('\t')[0].strip()
            path = '' if name == '/dev/null' else name[2:] if name.startswith('a/') else name
        elif m:
            start = int(m.group(1))
            old_left = int(m.group(2) if m.group(2) is not None else '1')
            new_left = int(m.group(3) if m.group(3) is not None else '1')
            # A hunk of no old lines (diff -U0's insertion) names the line before it.
            old = start if old_left else start + 1
            end, lines, removed = start + max(old_left, 1) - 1, [], False
    return out


def changed_lines(patch_text: str) -> Dict[str, List[int]]:
    """Per file a patch edits, its changed lines (hunks())."""
    out: Dict[str, List[int]] = {}
    for h in hunks(patch_text):
        out.setdefault(h.path, [])
        out[h.path] = sorted(set(out[h.path]) | set(h.lines))
    return out


def describe(hs: Sequence[Hunk]) -> str:
    """'kernel/cpu.c:2269,2270': the changed lines, for the report."""
    per: Dict[str, List[int]] = {}
    for h in hs:
        per.setdefault(h.path, []).extend(h.lines)
    return '; '.join(f'{p}:{",".join(str(n) for n in sorted(set(ls)))}'
                     for p, ls in per.items())


def source_of(cov: Dict[str, FileCov], rel: str, root: Path) -> Optional[FileCov]:
    """The record of @cov (a tracefile's, by its SF: paths) for the file
    @rel of the tree at @root: SF: is that path in the tree, or, from a
    tree somewhere else (another cache, a CI machine), ends in /@rel."""
    exact = str(root / rel)
    if exact in cov:
        return cov[exact]
    return next((c for sf, c in cov.items() if sf.endswith('/' + rel)), None)


def reaches(cov: Dict[str, FileCov], hs: Sequence[Hunk], root: Path) -> bool:
    """Does the tracefile @cov record a changed line of @hs as executed?

    A changed line lcov instruments nothing on (a blank line, a brace, a
    declaration, a statement's continuation line) stands for the next line
    below it in the same hunk that lcov does instrument: the code that
    runs right after the change.
    """
    for h in hs:
        f = source_of(cov, h.path, root)
        if f is None:
            continue
        for line in h.lines:
            if line not in f.line_hits:
                line = min((n for n in f.line_hits if line < n <= h.end), default=0)
            if f.line_hits.get(line, 0) > 0:
                return True
    return False


def function_of(f: FileCov, line: int) -> Optional[str]:
    """The function of @f whose first line is the last at or before @line."""
    starts = [(start, name) for name, start in f.fn_start.items() if start <= line]
    return max(starts)[1] if starts else None


def runs_function(cov: Dict[str, FileCov], hs: Sequence[Hunk], root: Path) -> bool:
    """Does the tracefile @cov record a function holding a changed line of
    @hs as called?"""
    for h in hs:
        f = source_of(cov, h.path, root)
        if f is None:
            continue
        for line in h.lines:
            name = function_of(f, line)
            if name is not None and f.fn_calls.get(name, 0) > 0:
                return True
    return False


def route(hs: Sequence[Hunk], covs: Dict[str, Dict[str, FileCov]], root: Path,
          order: Sequence[str]) -> List[str]:
    """The guests of @order whose tracefile (@covs, by topology) reaches a
    changed line of @hs; empty: not covered.

    When no guest's line counts reach it, the guests where the function
    holding a changed line ran: gcc gives an inlined call's counts to the
    callee's lines, so the line of the call can read 0 where it ran
    (6.12.118's cpu.c:2634, cpuhp_store_callbacks() at the end of
    __cpuhp_remove_state_cpuslocked(): 0 in every guest, the line after
    it 2,254 times).
    """
    by_line = [g for g in order if g in covs and reaches(covs[g], hs, root)]
    return by_line or [g for g in order if g in covs and runs_function(covs[g], hs, root)]


def staleness(info: Path, sources: Optional[str]) -> str:
    """Why the tracefile @info cannot route a mutant in a tree whose
    sources digest to @sources; '' when it can."""
    if not info.is_file():
        return 'none yet'
    made_from = buildstamp.coverage_sources(info.parent)
    if made_from is None:
        return 'no record of the sources it was made from'
    if sources is None:
        return 'the tree has no digest to hold it against'
    if made_from != sources:
        return 'made from other sources than the tree holds now'
    return ''


def tracefiles(spec: RunSpec, user: Optional[usertree.Resolved]) -> Dict[str, Path]:
    """Where make coverage leaves each guest's tracefile for @spec's kernel."""
    return {g: coverage_spec(spec, g, spec.timeout).output_dir(user) / 'coverage.info'
            for g in arch.get(spec.arch).topologies}


def guest_filter(user_filter: str, topology: str) -> str:
    """The FILTER a guest runs: make mutate's, else what make coverage runs there;
    the maxcpus guest's own always (kunitcmd.knob_errors() refuses another)."""
    if topology == 'maxcpus':
        return coverage.TOPOLOGY_FILTERS[topology]
    return user_filter or coverage.TOPOLOGY_FILTERS.get(topology, '')


def coverage_spec(spec: RunSpec, topology: str, timeout: int) -> RunSpec:
    """make coverage's run of @topology with @spec's kernel, CPUs and stress walk."""
    return dataclasses.replace(spec, topology=topology, timeout=timeout,
                               filter=coverage.TOPOLOGY_FILTERS.get(topology, ''),
                               strict=False, coverage_report=True, out=None)


def fresh_coverage(infos: Dict[str, Path], sources: Optional[str],
                   run_guest: Callable[[str], int]
                   ) -> Tuple[Dict[str, Dict[str, FileCov]], str]:
    """Each guest's coverage (by topology), from its tracefile in @infos
    when it describes the sources @sources; the others run first with
    @run_guest (make coverage's run of that guest, unmutated: its exit
    status), said in one line. ({}, why) when such a run fails."""
    stale = {g: why for g, info in infos.items() for why in [staleness(info, sources)] if why}
    if stale:
        print('cpuhp-kunit: no tracefile of the current sources for the guest(s) '
              + ', '.join(f'{g} ({why})' for g, why in stale.items())
              + ": running make coverage's run of each first, unmutated, into "
              + ', '.join(str(infos[g].parent) for g in stale), flush=True)
    for g in stale:
        rc = run_guest(g)
        if rc != 0 or not infos[g].is_file():
            return {}, (f'make coverage\'s run of the {g} guest, unmutated, is red (exit {rc}; '
                        f'{infos[g].parent}): no coverage to choose the guests by, and every '
                        'mutant run there would count as killed')
    return {g: gcov.parse_info(info.read_text()) for g, info in infos.items()}, ''


def routes(patches: Sequence[Path], t: tree.Tree, spec: RunSpec,
           user: Optional[usertree.Resolved], run_guest: Callable[[str], int]
           ) -> Tuple[Optional[Dict[Path, List[str]]], str]:
    """Each mutant's guests (route()), by the tracefiles of @spec's kernel
    (tracefiles(), @user: its TREE=) of the sources @t holds now: those
    missing or stale are made first with @run_guest (fresh_coverage()).
    (None, why) when that fails."""
    infos = tracefiles(spec, user)
    covs, why = fresh_coverage(infos, buildstamp.source_digest(t), run_guest)
    if why:
        return None, why
    order = arch.get(spec.arch).topologies
    return {p: route(hunks(p.read_text(errors='replace')), covs, t.path, order)
            for p in patches}, ''


def road(guests: Sequence[str]) -> str:
    """The guest that first reaches a mutant, NO_ROAD for none."""
    return guests[0] if guests else NO_ROAD
