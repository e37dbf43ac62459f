"""`make mutate`: apply each mutant to the cached tree, run the suites, restore.

A mutant is a -p1 patch against the prepared tree whose first line is a
'# ' comment naming the promise it breaks. It runs on the guests whose
coverage reaches a line it changes (tools/cpuhpk/mutant_guests.py: flat,
then smt, hotplug, nosmt, nosmt-force, maxcpus, as make coverage boots them), one
after the other until one kills it; the first of them is its road. Its
runs' verdicts (verdict.json) say what became of it:

- killed          a run was red for a reason a test gives: a case failed or
                  crashed or went missing, a kernel report, the kernel hung;
                  or a known failure the unmutated kernel shows on that guest
                  did not occur (mutreport.py)
- invalid         the mutant does not build: it proved nothing (compiler error quoted)
- survived        the run on every guest was green, its known failures met
- not-covered     no guest's coverage reaches a line it changes: no run could kill it
- not-applicable  the patch does not apply to this tree: it never ran

`make mutate` exits 0 only when every mutant was killed. The cache is locked
for the whole set; a mutant is reversed only after its runs (and everything
they started) have ended, also when make mutate is interrupted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

from cpuhpk import (arch, cache, execute, mutant_guests, proc, runspec, say, tree,
                    usertree, verdict)
from cpuhpk.mutreport import GuestRun, Outcome, classify, note, report, unmet_known
from cpuhpk.paths import REPO
from cpuhpk.runspec import RunSpec

RUN_PY = REPO / 'tools' / 'cpuhpk' / 'run.py'
CHILD_GRACE = 60


def promise(patch: Path) -> str:
    first = patch.read_text(errors='replace').splitlines()[:1]
    return first[0].lstrip('# ').strip() if first and first[0].startswith('#') else ''


Runner = Callable[[RunSpec, Dict[str, str]], int]


def run_child(spec: RunSpec, env: Dict[str, str]) -> int:
    """run.py of @spec in a process group of its own, under the cache's lock
    we hold; its exit status. Ended on any exception here: run.py ends
    kunit.py, make and QEMU on SIGTERM, and only then may the tree change
    under them."""
    with subprocess.Popen([sys.executable, str(RUN_PY), *spec.argv()], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          pass_fds=cache.lock_fds(), start_new_session=True) as child:
        return proc.wait_group(child, CHILD_GRACE)


def run_one(patch: Path, t: tree.Tree, guests: Dict[str, RunSpec], out: Path,
            runner: Runner = run_child,
            unmet: Optional[Dict[str, FrozenSet[str]]] = None) -> Outcome:
    """@patch applied, run on each of @guests in turn (topology: its run)
    until one run does not survive it, into @out/<topology>/; @unmet: per
    guest, the known failures its unmutated run did not meet (classify())."""
    hs = mutant_guests.hunks(patch.read_text(errors='replace'))
    lines, road = mutant_guests.describe(hs), mutant_guests.road(list(guests))
    check = tree.git(t.path, 'apply', '--check', str(patch.resolve()), check=False)
    if check.returncode != 0:
        return Outcome(patch.stem, 'not-applicable', check.stderr.strip().splitlines()[0]
                       if check.stderr.strip() else 'git apply --check failed', 0.0,
                       promise(patch), road=road, lines=lines)
    if not guests:
        return Outcome(patch.stem, 'not-covered', f'no guest reaches {lines or "a changed line"}',
                       0.0, promise(patch), road=road, lines=lines)
    runs: List[GuestRun] = []
    shutil.rmtree(out, ignore_errors=True)      # no guest's run of an earlier set
    tree.git(t.path, 'apply', str(patch.resolve()))
    try:
        for guest, spec in guests.items():
            started = time.monotonic()
            rc = runner(dataclasses.replace(spec, out=out / guest),
                        dict(os.environ, CPUHP_KUNIT_DIRTY='1'))
            known = (unmet or {}).get(guest, frozenset())
            o = classify(patch.stem, out / guest, rc, time.monotonic() - started,
                         promise(patch), known)
            if o.unmet_only:
                # A known failure missed once is a sample: the kill must
                # show again on a second run of the guest.
                again = out / f'{guest}-again'
                rc = runner(dataclasses.replace(spec, out=again),
                            dict(os.environ, CPUHP_KUNIT_DIRTY='1'))
                o = classify(patch.stem, again, rc, time.monotonic() - started,
                             promise(patch), known)
            runs.append(GuestRun(guest, o.verdict, o.by, o.seconds))
            if o.verdict != 'survived':
                break
    finally:
        tree.git(t.path, 'apply', '-R', str(patch.resolve()))
    return dataclasses.replace(o, seconds=sum(r.seconds for r in runs), road=road,
                               lines=lines, runs=runs)


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description='Mutation testing of the suites.')
    ap.add_argument('--mutants', type=Path, default=REPO / 'mutants')
    ap.add_argument('--kver', default='6.12')
    ap.add_argument('--arch', choices=tuple(arch.ARCHES), default=arch.HOST)
    ap.add_argument('--smp', type=int, default=4)
    ap.add_argument('--filter', default='')
    ap.add_argument('--timeout', default='',
                    help="seconds a mutant's kernel run may take (default: derived from the "
                    "unmutated run's, see derived_timeout())")
    ap.add_argument('--config', default='default',
                    help='kconfigs/CONFIG.config: e.g. debug, for lockdep under the stress case')
    ap.add_argument('--strict', default='0', choices=('0', '1'),
                    help='1: known failures kill a mutant too (make run STRICT=1); FIXES is not '
                    'passed on: the mutants are written against the test series')
    ap.add_argument('--shard', default='', metavar='I/N',
                    help='run only the I-th of N shards of the sorted mutants (1-based)')
    ap.add_argument('--guests', default='', metavar='G[,G...]',
                    help='the guests every mutant runs on, in this order, instead of those its '
                    'coverage reaches (no tracefiles made or read): flat alone is make mutate as '
                    'it ran before it chose guests by coverage')
    ap.add_argument('--seed', type=int, default=0, help='cpuhp_stress seed for every mutant run')
    ap.add_argument('--stress-ops', type=int, default=0, help='cpuhp_stress operations per run')
    runspec.add_tree_arguments(ap)
    args = ap.parse_args(argv)
    if args.smp % 2 and any(runspec.two_threads(x) for x in arch.get(args.arch).topologies):
        ap.error(f'make mutate may run a mutant on the SMT guests too (two threads per core): '
                 f'SMP={args.smp} is odd')
    # FIXES is not passed on: the mutants are written against the test series.
    spec = RunSpec(kver=args.kver, arch=args.arch, smp=args.smp, config=args.config,
                   filter=args.filter, seed=args.seed, stress_ops=args.stress_ops,
                   strict=args.strict == '1', coverage_report=False,
                   tree=runspec.tree_spec(args))
    try:
        user = spec.resolved()
    except say.PrepareError as e:
        print(f'cpuhp-kunit: error: {e}', file=sys.stderr)
        return 1
    spec = spec.for_user(user)
    try:
        fixed = fixed_guests(args.guests, args.arch)
        patches = mutant_set(args.mutants, args.kver, args.arch)
    except ValueError as e:
        print(f'cpuhp-kunit: error: {e}', file=sys.stderr)
        return 2
    if not patches:
        print(f'cpuhp-kunit: error: no *.patch in {args.mutants}', file=sys.stderr)
        return 1
    total = len(patches)
    try:
        patches = shard(patches, args.shard)
    except ValueError as e:
        print(f'cpuhp-kunit: error: {e}', file=sys.stderr)
        return 2
    # SIGTERM as well as Ctrl-C unwinds through run_one(): the child run is
    # ended and the mutant reversed before the process ends.
    proc.raise_on_signals((signal.SIGTERM,))
    try:
        return cache.locked(f'make mutate KVER={spec.kver}', lambda: mutate(
            spec, user, patches, args.shard, args.timeout, total, fixed,
            set_name(args.mutants)))
    except proc.Interrupted as e:
        return 128 + e.signum


def fixed_guests(spec: str, arch_name: str = arch.HOST) -> List[str]:
    """GUESTS=: the topologies named, comma-separated, in that order ([]:
    none named, the guests come from coverage); ValueError naming those
    the architecture's guest cannot take."""
    names = [g.strip() for g in spec.split(',') if g.strip()]
    known = arch.get(arch_name).topologies
    unknown = [g for g in names if g not in known]
    if unknown:
        raise ValueError(f'GUESTS={spec}: no {arch_name} guest {", ".join(unknown)} '
                         f'(known: {", ".join(known)})')
    if len(set(names)) != len(names):
        raise ValueError(f'GUESTS={spec}: a guest named twice')
    return names


def mutant_set(mutants: Path, kver: str, arch_name: str = arch.HOST) -> List[Path]:
    """The mutants of one kernel series on one architecture, sorted by name.

    mutants/*.patch, where mutants/<KVER>/ has a patch of the same name
    that one instead (the code differs there), and without the names
    mutants/<KVER>/not-here lists ('<name> | why': a promise that kernel
    does not make); then, on another architecture than x86_64, the same
    from mutants/<ARCH>/ (arm64: the code a mutant changes is x86's
    alone, e.g. the split startup, and arm64 runs its twin).
    """
    chosen = {p.stem: p for p in mutants.glob('*.patch')}
    for own in [mutants / kver] + ([mutants / arch_name] if arch_name != arch.HOST else []):
        chosen.update({p.stem: p for p in own.glob('*.patch')})
        not_here = own / 'not-here'
        if not not_here.is_file():
            continue
        for n, line in enumerate(not_here.read_text().splitlines(), 1):
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            name, sep, why = (f.strip() for f in line.partition('|'))
            if not sep or not why:
                raise ValueError(f'{not_here}:{n}: expected "<mutant> | <why>"')
            if name not in chosen:
                raise ValueError(f'{not_here}:{n}: no mutant {name}')
            del chosen[name]
    return [chosen[k] for k in sorted(chosen)]


def shard(patches: Sequence[Path], spec: str) -> List[Path]:
    """The I-th of N shards ('I/N', 1-based) of @patches: every N-th from the I-th by name.

    Deterministic for the same directory: the shards of 1/N..N/N together
    are @patches, each once.
    """
    if not spec:
        return list(patches)
    i_text, sep, n_text = spec.partition('/')
    valid = sep and i_text.isdigit() and n_text.isdigit()
    if not valid or not 1 <= int(i_text) <= int(n_text):
        raise ValueError(f'SHARD={spec}: expected I/N with 1 <= I <= N, e.g. SHARD=2/4')
    i, n = int(i_text), int(n_text)
    # By name, not path: a mutant overridden in mutants/<KVER>/ or
    # mutants/<ARCH>/ keeps its place, so a shard is the same mutants there.
    return [p for k, p in enumerate(sorted(patches, key=lambda p: (p.name, str(p))))
            if k % n == i - 1]


def set_name(mutants: Path) -> str:
    """'' for the default set (mutants/), else its directory's name ('roads')."""
    return '' if mutants.resolve() == (REPO / 'mutants').resolve() else mutants.name


def out_base(kver: str, config: str, shard_spec: str,
             user: Optional[usertree.Resolved] = None, arch_name: str = arch.HOST,
             set_: str = '') -> Path:
    """out/<KVER>[-<CONFIG>][-arm64]-mutate[-<set>][-<I>of<N>]: shards run on one
    machine keep apart, and so do sets (@set_, set_name()).

    TREE=: out/tree-<name>-<rev>[-<CONFIG>]-mutate[-<set>][-<I>of<N>].
    """
    part = (f'-{set_}' if set_ else '') + (f"-{shard_spec.replace('/', 'of')}"
                                          if shard_spec else '')
    runs = RunSpec(kver=kver, config=config, arch=arch_name).output_dir(user)
    return runs.with_name(f'{runs.name}-mutate{part}')


# kunit.py's last line: 'Elapsed time: 75.981s total, 0.003s configuring,
# 32.299s building, 43.678s running' (kunit.py run), or 'Elapsed time:
# 43.678s' (kunit.py exec: the kernel was built already, buildstamp.reusable_build()).
ELAPSED = re.compile(r'Elapsed time: (?:[0-9.]+s total, .*?([0-9.]+)s running|([0-9.]+)s$)',
                     re.MULTILINE)
# The unmutated run's own limit: make run's.
BASELINE_TIMEOUT = 600
# Never less: a mutant that hangs the state machine is killed by the timeout.
TIMEOUT_FLOOR = 60


def running_seconds(kunit_log: Path) -> Optional[float]:
    """kunit.py's time in QEMU, from its log; None when it says none."""
    if not kunit_log.is_file():
        return None
    found = ELAPSED.findall(kunit_log.read_text(errors='replace'))
    return float(found[-1][0] or found[-1][1]) if found else None


def derived_timeout(baseline_running: float) -> int:
    """A mutant's run may take twice the unmutated kernel's time in QEMU
    plus 30 s (a shared machine's jitter), and never less than
    TIMEOUT_FLOOR: a fixed 60 s was below the sanitizer kernel's own 54 s
    of suites plus its boot, so every mutant there was 'killed' by a
    timeout (the first run of the sanitizer kernel's shard 1/4 on
    2026-12-06, before f763b52)."""
    return max(TIMEOUT_FLOOR, math.ceil(2 * baseline_running + 30))


def baseline(spec: RunSpec, out: Path) -> Tuple[Optional[float], str]:
    """Run the unmutated kernel of @spec into @out: (its seconds in QEMU,
    '') when green, (None, why) when not: on a red kernel every mutant
    would count as killed."""
    rc = run_child(dataclasses.replace(spec, out=out), dict(os.environ))
    v = verdict.read_json(out / 'verdict.json')[0] if (out / 'verdict.json').is_file() else None
    if rc != 0 or v is None or not v.ok:
        return None, (f'the unmutated kernel is red (exit {rc}; {out}): every mutant would '
                      'count as killed')
    secs = running_seconds(out / 'kunit.log')
    if secs is None:
        return None, f'no running time in {out / "kunit.log"}'
    return secs, ''


def baseline_dir(base: Path, guest: str) -> Path:
    """Where the unmutated run of @guest goes: baseline/, baseline-<topology>/."""
    return base / ('baseline' if guest == 'flat' else f'baseline-{guest}')


def mutate(spec: RunSpec, user: Optional[usertree.Resolved], patches: Sequence[Path],
           shard_spec: str = '', timeout: str = '', total: int = 0,
           fixed: Sequence[str] = (), set_: str = '') -> int:
    """Each of @patches (the @shard_spec shard of @total) run as @spec (with
    @user, its TREE=) on its guests, @fixed when given, else those its
    coverage reaches; a mutant's run there times out after @timeout seconds
    (default: derived_timeout() of the unmutated run's); @set_ names the set
    apart from the default one (set_name())."""
    t = execute.prepare_tree(spec, user)
    base = out_base(spec.kver, spec.config, shard_spec, user, spec.arch, set_)
    chosen: Optional[Dict[Path, List[str]]] = {p: list(fixed) for p in patches}
    if not fixed:
        chosen, why = mutant_guests.routes(
            patches, t, spec, user, lambda g: run_child(
                mutant_guests.coverage_spec(spec, g, BASELINE_TIMEOUT), dict(os.environ)))
    if chosen is None:
        print(f'cpuhp-kunit: error: {why}', file=sys.stderr)
        return 1
    roads = [mutant_guests.road(r) for r in chosen.values()]
    if fixed:
        needed = list(fixed)
        print(f'cpuhp-kunit: guests by GUESTS=: every mutant on {", ".join(fixed)}, in that '
              'order', flush=True)
    else:
        needed = [g for g in arch.get(spec.arch).topologies
                  if any(g in r for r in chosen.values())]
        print('cpuhp-kunit: guests by coverage: ' + ', '.join(
            [f'{roads.count(g)} mutant(s) first reached by {g}' for g in needed if roads.count(g)]
            + [f'{roads.count(mutant_guests.NO_ROAD)} by none (not covered)']), flush=True)
    guest_specs: Dict[str, RunSpec] = {}
    unmet: Dict[str, FrozenSet[str]] = {}
    for g in needed:
        g_spec = dataclasses.replace(spec, topology=g, timeout=BASELINE_TIMEOUT,
                                     filter=mutant_guests.guest_filter(spec.filter, g))
        secs, why = baseline(g_spec, baseline_dir(base, g))
        if secs is None:
            print(f'cpuhp-kunit: error: the {g} guest: {why}', file=sys.stderr)
            return 1
        seconds = int(timeout) if timeout else derived_timeout(secs)
        print(f'cpuhp-kunit: the unmutated kernel is green on the {g} guest, {secs:.0f} s in '
              f'QEMU: a mutant run there times out after {seconds} s' + (
                  '' if timeout else ' (twice that plus 30 s, at least 60 s)'), flush=True)
        guest_specs[g] = dataclasses.replace(g_spec, timeout=seconds)
        unmet[g] = unmet_known(baseline_dir(base, g))
    outcomes: List[Outcome] = []
    for patch in patches:
        o = run_one(patch, t, {g: guest_specs[g] for g in chosen[patch]}, base / patch.stem,
                    unmet=unmet)
        outcomes.append(o)
        print(f'{o.mutant:45} {o.verdict:15} {o.seconds:5.0f}s  {o.road:11} {note(o)}',
              flush=True)
        if o.detail:
            print('\n'.join(f'    {ln}' for ln in o.detail.splitlines()[:10]), flush=True)
    return report(outcomes, base, {'kver': spec.kver, 'arch': spec.arch, 'config': spec.config,
                                   'strict': str(int(spec.strict)), 'shard': shard_spec,
                                   'total': total, 'set': set_})




if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
