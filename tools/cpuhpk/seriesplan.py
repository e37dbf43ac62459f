"""src/<KVER>/upstream/plan: the posted series, made of our patches and kunit/ sources.

The plan names the series posted upstream ([cpu-hotplug]): for each its
title, .kunitconfig, filter, what its cover letter covers, and its patches
in order, each with the kunit/ sources it adds. A patch is one of our
kernel fixes (fixes/<name>, the fixes first), a patch made for posting
(upstream/<name>), or one of src/<KVER>/series. Sources are added in
their posted form (tree.harness_view()); "<file>+<part>" adds a part of
the posted suite that a later patch brings (a `#ifdef
CPUHP_KUNIT_PART_<part>` block of the file).

Outside sections: the patches of src/<KVER>/series that are the harness's
own (`harness`: applied to a user's tree that has the suites, never
posted), those no posted series carries (`not-posted`), the kunit/
sources it does not carry (`not-posted-source <file> <why>`), and whether
the series drop the 6.1 compat header (`drop-compat`). read_plan() reads
it and checks it against src/<KVER>/series, fixes/series, upstream/ and
kunit/MANIFEST.

make series (series.py) builds the series from it; TREE= (usertree.py)
applies only the harness's patches to a user's tree that has the suites.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from cpuhpk import tree
from cpuhpk.paths import REPO

# The 6.1 compat header of kunit/; a plan with drop-compat posts no patch adding it.
COMPAT = 'cpuhp_kunit_compat.h'


# Words of this project's harness, which a posted series must not carry
# (sources, comments, skip reasons, messages, cover letters): a maintainer
# reads the kernel's terms only. Matched case-insensitively.
HARNESS_WORDS = re.compile(
    r'(?i:cpuhp-kunit|cpuhpk|harness|known[ -]failure|kunit/MANIFEST|expected-skips|'
    r'make (?:run|test|series|coverage|matrix|mutate)\b)|'
    r'\b(?:README|Findings|STRICT=|SEED=|TOPOLOGY=|FIXES=|KVER=)')


def harness_words(text: str) -> List[str]:
    """'<line>: <word>' for each harness word in @text."""
    return [f'{n}: {m.group(0)}' for n, line in enumerate(text.splitlines(), 1)
            for m in HARNESS_WORDS.finditer(line)]


class SeriesError(Exception):
    """Something make series cannot do, said in one line."""


@dataclass
class Series:
    name: str
    title: str = ''
    kunitconfig: str = ''
    filter: str = ''
    covers: str = ''
    cpus: int = 0           # QEMU's CPUs in the cover letter's command; 0: the default
    patches: List[Tuple[str, List[str]]] = field(default_factory=list)


@dataclass
class Plan:
    series: List[Series]
    harness: List[str]
    drop_compat: bool
    not_posted: List[str] = field(default_factory=list)
    # kunit/ sources no posted series carries, and why
    not_posted_sources: Dict[str, str] = field(default_factory=dict)


def patch_path(src: Path, name: str) -> Path:
    """Where a plan's patch is: fixes/<name>, upstream/<name>, or src/<KVER>/<name>."""
    return src / name


def source_parts(spec: str) -> Tuple[str, str]:
    """'file+part' -> (file, part); 'file' -> (file, '')."""
    name, _, part = spec.partition('+')
    return name, part


def read_plan(src: Path) -> Plan:
    """src/<KVER>/upstream/plan, checked against src/<KVER>/series and kunit/MANIFEST."""
    path = src / 'upstream' / 'plan'
    if not path.is_file():
        raise SeriesError(f'no src/{src.name}/upstream/plan: KVER={src.name} has no '
                          'upstream-shaped series (make series knows '
                          + ', '.join(sorted(p.parent.parent.name for p in
                                             src.parent.glob('*/upstream/plan'))) + ')')
    plan = Plan([], [], False)
    cur: Optional[Series] = None
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        where = f'src/{src.name}/upstream/plan:{n}'
        m = re.fullmatch(r'\[([a-z0-9-]+)\]', line)
        key, _, rest = line.partition(' ')
        if m:
            cur = Series(m.group(1))
            plan.series.append(cur)
        elif key == 'drop-compat' and cur is None:
            plan.drop_compat = True
        elif key in ('harness', 'not-posted') and cur is None and rest:
            (plan.harness if key == 'harness' else plan.not_posted).append(rest.strip())
        elif key == 'not-posted-source' and cur is None and len(rest.split(None, 1)) == 2:
            name, why = rest.split(None, 1)
            plan.not_posted_sources[name] = why
        elif cur is not None and key in ('title', 'kunitconfig', 'filter', 'covers') and rest:
            setattr(cur, key, rest.strip())
        elif cur is not None and key == 'cpus' and rest.strip().isdigit() and int(rest) > 0:
            cur.cpus = int(rest)
        elif cur is not None and key == 'patch' and rest:
            name, *files = rest.split()
            if not patch_path(src, name).is_file():
                raise SeriesError(f'{where}: no src/{src.name}/{name}')
            cur.patches.append((name, files))
        else:
            raise SeriesError(f'{where}: cannot read "{line}"')
    for s in plan.series:
        if not (s.title and s.kunitconfig and s.filter and s.covers and s.patches):
            raise SeriesError(f'src/{src.name}/upstream/plan: [{s.name}] needs title, '
                              'kunitconfig, filter, covers and at least one patch')
        if not (src / 'upstream' / f'{s.name}.cover').is_file():
            raise SeriesError(f'no src/{src.name}/upstream/{s.name}.cover')
        kinds = [p.split('/')[0] if '/' in p else 'series' for p, _ in s.patches]
        if 'fixes' in kinds and kinds.index('fixes') != 0 or \
                kinds[:kinds.count('fixes')] != ['fixes'] * kinds.count('fixes'):
            raise SeriesError(f'src/{src.name}/upstream/plan: [{s.name}] has its fixes after '
                              'the tests: a test series lands on a tree where it passes')
        for p, _ in s.patches:
            if p.startswith('fixes/') and p.removeprefix('fixes/') not in \
                    [f.name for f in tree.series_files(src / 'fixes')]:
                raise SeriesError(f'src/{src.name}/upstream/plan: {p} is not in fixes/series')
    in_series = [p for s in plan.series for p, _ in s.patches if '/' not in p]
    named = in_series + plan.harness + plan.not_posted
    listed = [p.name for p in tree.series_files(src)]
    if sorted(named) != sorted(listed) or len(set(named)) != len(named):
        raise SeriesError(f'src/{src.name}/upstream/plan must name each patch of the series '
                          f'once: not named {sorted(set(listed) - set(named))}, unknown '
                          f'{sorted(set(named) - set(listed))}, twice '
                          f'{sorted({p for p in named if named.count(p) > 1})}')
    if in_series != [p for p in listed if p in in_series]:
        raise SeriesError(f'src/{src.name}/upstream/plan: the series\' patches are not in the '
                          'order of src/<KVER>/series')
    manifest = set(tree.read_manifest(REPO / 'kunit').values())
    added = [source_parts(f)[0] for s in plan.series for _, fs in s.patches for f in fs]
    for f in list(added) + list(plan.not_posted_sources):
        if f not in manifest:
            raise SeriesError(f'src/{src.name}/upstream/plan names {f}, which kunit/MANIFEST '
                              'does not place')
    for name in sorted(set(added)):
        adds = {source_parts(f)[1] for s in plan.series for _, fs in s.patches for f in fs
                if source_parts(f)[0] == name} - {''}
        have = set(parts_of((REPO / 'kunit' / name).read_text()))
        if adds != have:
            raise SeriesError(f'src/{src.name}/upstream/plan: kunit/{name} has the parts '
                              f'{sorted(have)}, the plan adds {sorted(adds)}')
    needed = manifest - {COMPAT} if plan.drop_compat else manifest
    missing = needed - set(added) - set(plan.not_posted_sources)
    if missing or set(added) & set(plan.not_posted_sources):
        raise SeriesError(f'src/{src.name}/upstream/plan must add every kunit/MANIFEST source '
                          f'or say why not: missing {sorted(missing)}, both added and not '
                          f'posted {sorted(set(added) & set(plan.not_posted_sources))}')
    return plan


def parts_of(text: str) -> List[str]:
    """The parts of a posted suite a kunit/ source holds (tree.PART_MACRO blocks)."""
    return sorted(set(re.findall(rf'^#\s*ifdef\s+{tree.PART_MACRO}(\w+)\s*$', text, re.M)))
