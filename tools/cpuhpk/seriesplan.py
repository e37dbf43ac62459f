"""src/<KVER>/upstream/plan: which patches of the harness's series make up each posted series.

The plan names the upstream-shaped series ([cpu-hotplug], [timekeeping]):
for each its title, .kunitconfig, filter, what its cover letter covers, and
its patches of src/<KVER>/series with the kunit/ sources each adds; and the
patches that are the harness's own (`harness`, never posted), and whether
the series drop the 6.1 compat header (`drop-compat`). read_plan() reads it
and checks it against src/<KVER>/series and kunit/MANIFEST: every patch
named once and in the series' order, every source added once.

make series (series.py) builds the series from it; TREE= (usertree.py)
applies only the harness's patches to a user's tree that has the suites.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

from cpuhpk import tree

REPO = Path(__file__).resolve().parents[2]
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
    patches: List[Tuple[str, List[str]]] = field(default_factory=list)


@dataclass
class Plan:
    series: List[Series]
    harness: List[str]
    drop_compat: bool


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
        elif key == 'harness' and cur is None and rest:
            plan.harness.append(rest.strip())
        elif cur is not None and key in ('title', 'kunitconfig', 'filter', 'covers') and rest:
            setattr(cur, key, rest.strip())
        elif cur is not None and key == 'patch' and rest:
            name, *files = rest.split()
            cur.patches.append((name, files))
        else:
            raise SeriesError(f'{where}: cannot read "{line}"')
    in_series = [p for s in plan.series for p, _ in s.patches]
    named = in_series + plan.harness
    listed = [p.name for p in tree.series_files(src)]
    for s in plan.series:
        if not (s.title and s.kunitconfig and s.filter and s.covers and s.patches):
            raise SeriesError(f'src/{src.name}/upstream/plan: [{s.name}] needs title, '
                              'kunitconfig, filter, covers and at least one patch')
        if not (src / 'upstream' / f'{s.name}.cover').is_file():
            raise SeriesError(f'no src/{src.name}/upstream/{s.name}.cover')
    if sorted(named) != sorted(listed) or len(set(named)) != len(named):
        raise SeriesError(f'src/{src.name}/upstream/plan must name each patch of the series '
                          f'once: not named {sorted(set(listed) - set(named))}, unknown '
                          f'{sorted(set(named) - set(listed))}, twice '
                          f'{sorted({p for p in named if named.count(p) > 1})}')
    if in_series != [p for p in listed if p in in_series]:
        raise SeriesError(f'src/{src.name}/upstream/plan: the series\' patches are not in the '
                          'order of src/<KVER>/series')
    manifest = set(tree.read_manifest(REPO / 'kunit').values())
    added = [f for s in plan.series for _, fs in s.patches for f in fs]
    for f in added:
        if f not in manifest:
            raise SeriesError(f'src/{src.name}/upstream/plan adds {f}, which kunit/MANIFEST '
                              'does not place')
    needed = manifest - {COMPAT} if plan.drop_compat else manifest
    if sorted(added) != sorted(needed):
        raise SeriesError(f'src/{src.name}/upstream/plan must add every kunit/MANIFEST source '
                          f'once: missing {sorted(needed - set(added))}')
    return plan
