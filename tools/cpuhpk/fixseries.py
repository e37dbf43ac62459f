"""`make fixes-series`: our kernel fixes (src/<KVER>/fixes/) as postable series.

src/<KVER>/fixes/plan groups the patches of src/<KVER>/fixes/series into the
series they would be posted as, one per subsystem and maintainer (mainline
fixes; stable backports marked with their x.y.y prefix). For each series
this applies its patches alone to the pristine tree (the extraction of the
Debian package, as make series uses), signs them off as the user, writes
`git format-patch --cover-letter --base` output with To/Cc from the tree's
scripts/get_maintainer.pl, and checks it:

  - each patch applies to the pristine tree with only the patches before it
    in its own series (git am, no three-way merge);
  - checkpatch.pl --strict finds nothing (commit ids are not looked up: the
    tree has no upstream history);
  - the files each patch touches compile after it, and the series links into
    a vmlinux (a tinyconfig kernel with SMP and CPU hotplug, build directory
    kept in the cache);
  - the cover letter lists each fix with the known failures it covers
    (kunit/known-failures-<KVER> entries naming it) and how many of them the
    last run without fixes (out/<KVER>/) and with them (out/<KVER>-fixes/)
    showed.

  out/<KVER>-fixes-series/<name>/0000-cover-letter.patch, 0001-*.patch ...
  out/<KVER>-fixes-series/summary.txt, series.json, junit.xml, build.log
Exit status 0 only when every check passed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from cpuhpk import cache, kunitspec, say, series, seriesmake, seriesplan, serieschecks, tree
from cpuhpk.paths import REPO

STABLE = 'stable@vger.kernel.org'
# A kernel the fixes' files are built in: the touched code is under
# CONFIG_SMP and CONFIG_HOTPLUG_CPU (kernel/cpu.c) or CONFIG_HIBERNATION
# (kernel/power/hibernate.c, which needs swap and so the block layer),
# always built otherwise.
BUILD_CONFIG = ('CONFIG_64BIT=y', 'CONFIG_SMP=y', 'CONFIG_HOTPLUG_CPU=y', 'CONFIG_PRINTK=y',
                'CONFIG_SYSFS=y', 'CONFIG_SUSPEND=y', 'CONFIG_PM_SLEEP_SMP=y', 'CONFIG_BLOCK=y',
                'CONFIG_SWAP=y', 'CONFIG_HIBERNATION=y')
FIX_REF = re.compile(r'fixes/(\d{4})')
# The name a backport's bracketed note carries in src/ until it is signed.
NOTE_TAG = 'cpuhp-kunit'


@dataclass
class FixSeries:
    name: str
    title: str = ''
    prefix: str = 'PATCH'
    stable: bool = False
    note: List[str] = field(default_factory=list)
    patches: List[str] = field(default_factory=list)
    # A patch of ./series -> the form posted when that one sits on the code
    # of the KUnit series (upstream/<patch>, made on the pristine tree).
    posted: Dict[str, str] = field(default_factory=dict)


def read_plan(fixes: Path) -> List[FixSeries]:
    """src/<KVER>/fixes/plan, checked against src/<KVER>/fixes/series."""
    path = fixes / 'plan'
    rel = f'src/{fixes.parent.name}/fixes'
    if not path.is_file():
        raise seriesplan.SeriesError(f'no {rel}/plan: nothing says how the fixes are posted')
    named = [p.name for p in tree.series_files(fixes)]
    plan: List[FixSeries] = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith('#'):
            continue
        m = re.fullmatch(r'\[([\w.-]+)\]', line)
        if m:
            plan.append(FixSeries(m[1]))
            continue
        key, _, value = line.partition(' ')
        if not plan or key not in ('title', 'prefix', 'stable', 'note', 'patch'):
            raise seriesplan.SeriesError(f'{rel}/plan:{n}: not a [section] or a title, prefix, '
                                         f'stable, note or patch line: {line}')
        s = plan[-1]
        if key == 'patch':
            tested, _, posted = value.partition(' ')
            if tested not in named:
                raise seriesplan.SeriesError(f'{rel}/plan:{n}: {tested} is not in {rel}/series')
            if posted and not (fixes / posted).is_file():
                raise seriesplan.SeriesError(f'{rel}/plan:{n}: no {rel}/{posted}')
            s.patches.append(tested)
            if posted:
                s.posted[tested] = posted
        elif key == 'note':
            s.note.append(value)
        elif key == 'stable':
            s.stable = True
        elif key == 'title':
            s.title = value
        else:
            s.prefix = value
    given = [p for s in plan for p in s.patches]
    twice = sorted({p for p in given if given.count(p) > 1})
    left = [p for p in named if p not in given]
    if twice or left:
        raise seriesplan.SeriesError(f'{rel}/plan must name every patch of {rel}/series once: '
                                     + '; '.join(([f'twice: {", ".join(twice)}'] if twice else [])
                                                 + ([f'not named: {", ".join(left)}'] if left
                                                    else [])))
    for s in plan:
        if not s.title or not s.patches:
            raise seriesplan.SeriesError(f'{rel}/plan: [{s.name}] needs a title and a patch')
        if s.stable != bool(re.fullmatch(r'PATCH \d+\.\d+\.y', s.prefix)):
            raise seriesplan.SeriesError(f'{rel}/plan: [{s.name}]: a stable series has the prefix '
                                         '"PATCH <x.y>.y", and only a stable one')
    return plan


def covered(kver: str) -> Dict[str, List[kunitspec.KnownFailure]]:
    """Fix number ('0004') -> the known failures of kunit/known-failures-<KVER> naming it."""
    out: Dict[str, List[kunitspec.KnownFailure]] = {}
    for k in kunitspec.read_known_failures(REPO / 'kunit' / f'known-failures-{kver}'):
        for num in FIX_REF.findall(k.why):
            out.setdefault(num, []).append(k)
    return out


def seen(out_dir: Path) -> Tuple[Optional[Dict[str, int]], str]:
    """Fix number -> known failures naming it in @out_dir's verdict, and what the run was."""
    try:
        v = json.loads((out_dir / 'verdict.json').read_text())
    except (OSError, ValueError):
        return None, f'{out_dir.name}: no run'
    counts: Dict[str, int] = {}
    for k in v.get('known_failures', []):
        for num in set(FIX_REF.findall(k.get('message', ''))):
            counts[num] = counts.get(num, 0) + 1
    ctx = v.get('context', {})
    c = v.get('counts', {})
    what = (f"{out_dir.name}: {v.get('verdict')}, SMP={ctx.get('smp')}, "
            f"FILTER={ctx.get('filter') or '*'}, {c.get('passed')} passed, "
            f"{c.get('failed')} failed, {c.get('skipped')} skipped, "
            f"{len(v.get('known_failures', []))} known failures")
    return counts, what


def reports_of(kver: str, num: str) -> List[str]:
    """The finding reports (Documentation/findings/) that name src/<KVER>/fixes/<num>."""
    return sorted(f'Documentation/findings/{p.name}'
                  for p in (REPO / 'Documentation' / 'findings').glob('[0-9]*.md')
                  if f'src/{kver}/fixes/{num}' in p.read_text())


def cover_blurb(kver: str, s: FixSeries, numbers: Dict[str, str], base_label: str) -> str:
    """The cover letter's text: the note, then each fix with what proves it.

    The runs are make test's: without fixes at 4 and 2 CPUs (out/<KVER>,
    out/<KVER>-smp2) and with them (make fixes-test: the -fixes ones).
    """
    cover = covered(kver)
    runs = {name: seen(REPO / 'out' / name)
            for name in (kver, f'{kver}-smp2', f'{kver}-fixes', f'{kver}-smp2-fixes')}
    lines = list(s.note) + ['']
    for patch in s.patches:
        num = patch[:4]
        lines += textwrap.wrap(numbers[patch], 72, subsequent_indent='  ')
        lines.append(f'  src/{kver}/fixes/{patch}')
        lines += [f'  report: {r}' for r in reports_of(kver, num)]
        entries = cover.get(num, [])
        if not entries:
            lines += ['  no known failure names it: its report says what shows it', '']
            continue
        for k in entries:
            lines += textwrap.wrap(f'covers {k.case}: {k.why}', 72, initial_indent='  - ',
                                   break_long_words=False, break_on_hyphens=False,
                                   subsequent_indent='    ')
        counts = [f'{name} {n.get(num, 0)}' for name, (n, _) in runs.items() if n is not None]
        lines += textwrap.wrap('seen as known failures in ' + (', '.join(counts) if counts
                               else 'no run here yet (make test)'), 72,
                               initial_indent='  ', subsequent_indent='  ')
        lines.append('')
    lines += ['Runs counted above (without the fixes, then with them):']
    for _, what in runs.values():
        lines += textwrap.wrap(what, 72, initial_indent='  ', subsequent_indent='    ')
    lines += ['', f'Base: {base_label}.']
    return '\n'.join(lines).rstrip('\n')


def is_backport(text: str) -> bool:
    """@text (a patch) is a stable backport: its body opens with
    "commit <sha> upstream." (Documentation/process/stable-kernel-rules.rst)."""
    return re.search(r'^commit [0-9a-f]{12,40} upstream\.$', text, re.M) is not None


def added_lines(patch: Path) -> Tuple[str, List[str]]:
    """(commit message, lines the diff adds) of a format-patch file."""
    text = patch.read_text()
    head, _, diff = text.partition('\n---\n')
    body = head.partition('\n\n')[2]
    added = [ln[1:] for ln in diff.splitlines() if ln.startswith('+') and not ln.startswith('+++')]
    return body, added


def same_change(tested: Path, posted: Path) -> Tuple[bool, str]:
    """Whether @posted says and adds what @tested does, but for where it is called from.

    The tested form is made on the KUnit series' refactored code and the
    posted one on the pristine code: the messages must be the same and
    the added lines may differ in at most two (a call site).
    """
    msg_t, add_t = added_lines(tested)
    msg_p, add_p = added_lines(posted)
    only_t = [ln for ln in add_t if ln not in add_p]
    only_p = [ln for ln in add_p if ln not in add_t]
    if msg_t != msg_p:
        return False, 'the commit messages differ'
    if len(only_t) + len(only_p) > 2:
        return False, (f'{len(only_t)} added line(s) only in {tested.name}, {len(only_p)} only '
                       f'in {posted.name}: ' + '; '.join(only_t + only_p)[:300])
    return True, (f'{len(add_p)} added lines, the same message; tested as {tested.name}'
                  + (': ' + ' vs '.join(ln.strip() for ln in only_t + only_p)
                     if only_t or only_p else ''))


def signed_off(message: str, who: str) -> str:
    """@message signed off by @who last, the placeholder's sign-off dropped.

    A backport keeps its upstream trailers (the author's and the
    maintainers' sign-offs); the one who sends it signs off below them,
    and its bracketed note of what changed for the older tree
    ("[ cpuhp-kunit: ... ]" in src/) is signed with @who's name, as
    stable-kernel-rules.rst shows it.
    """
    name = who.split('<')[0].strip() or who
    lines = [ln.replace(f'[ {NOTE_TAG}: ', f'[ {name}: ')
             for ln in message.rstrip('\n').split('\n')
             if not (ln.startswith('Signed-off-by:') and seriesmake.PLACEHOLDER in ln)]
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and lines[-1] == f'Signed-off-by: {who}':
        return '\n'.join(lines) + '\n'
    return '\n'.join(lines) + f'\nSigned-off-by: {who}\n'


def touched_objects(work: Path, commit: str) -> List[str]:
    """The objects of the .c files @commit changes."""
    files = seriesmake.git(work, 'diff-tree', '--no-commit-id', '--name-only', '-r', commit)
    return [f[:-2] + '.o' for f in files.split() if f.endswith('.c')]


def make_steps(work: Path, build_dir: Path, targets: Sequence[str]) -> List[List[str]]:
    """The make commands that build @targets in @build_dir.

    Objects are built one job at a time, after `prepare` on every CPU: for
    a single-object goal Kbuild descends into every directory whose path
    begins the goal's, and arch/x86/Makefile lists arch/x86/power/ on its
    own (drivers-$(CONFIG_PM)) besides arch/x86/: both makes compile
    arch/x86/power/hibernate.o, at once under -j (6.1.192, fixes-series-test
    in the project CI's run of 2026-12-06: 'objtool: Can't open
    arch/x86/power/hibernate.o', Error 143).
    """
    make = series.make_command(work, build_dir)
    if not any(t.endswith('.o') for t in targets):
        return [make + list(targets)]
    return [make + ['prepare'], [a if not a.startswith('-j') else '-j1' for a in make]
            + list(targets)]


def make(work: Path, build_dir: Path, targets: Sequence[str], log: Path) -> Tuple[bool, str]:
    """make @targets in the configured @build_dir: (built, why not)."""
    return series.run_steps(work, make_steps(work, build_dir, targets), log)


def make_fixes_series(kver: str, who: str, out: Path, checks: serieschecks.Checks,
                      build: bool = True) -> None:
    src = tree.series_dir(REPO, kver) / 'fixes'
    plan = read_plan(src)
    t = tree.prepare(kver, REPO)
    work = seriesmake.scratch(t)
    label = f'linux-source-{kver} {t.package}'
    base = seriesmake.pristine_commit(work, 'baseline', label)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    log = out / 'build.log'
    build_dir = cache.cache_root() / f'fixes-build-{t.version}'
    if build:
        seriesmake.git(work, 'checkout', '-q', '-f', base)
        ok, why = series.configure(work, build_dir, BUILD_CONFIG, log)
        checks.add(f'configure {build_dir.name}', ok, why or ', '.join(BUILD_CONFIG))
        build = ok
    env = seriesmake.identity(who)
    for s in plan:
        branch = f'fixes-{s.name}'
        seriesmake.git(work, 'checkout', '-q', '-f', '-B', branch, base)
        applied = True
        for patch in s.patches:
            if patch in s.posted:
                same, differ = same_change(src / patch, src / s.posted[patch])
                checks.add(f'{s.name}: {s.posted[patch]} is {patch} on the pristine code',
                           same, differ)
            res = subprocess.run(['git', '-C', str(work), 'am', '-q', '--keep-cr',
                                  str(src / s.posted.get(patch, patch))],
                                 capture_output=True, text=True,
                                 env={**os.environ, **env}, check=False)
            if res.returncode != 0:
                subprocess.run(['git', '-C', str(work), 'am', '--abort'], capture_output=True,
                               check=False)
                checks.add(f'{s.name}: {patch} applies to the pristine tree', False,
                           (res.stdout + res.stderr).strip() or 'git am failed')
                applied = False
                break
            msg = signed_off(seriesmake.git(work, 'log', '-1', '--format=%B'), who)
            # Our own fixes carry the placeholder author; a backport keeps its own.
            author = seriesmake.git(work, 'log', '-1', '--format=%ae')
            seriesmake.git(work, 'commit', '-q', '--amend', '-F', '-',
                       *(['--reset-author'] if author == seriesmake.PLACEHOLDER else []),
                       env=env, stdin=msg)
            checks.add(f'{s.name}: {patch} applies to the pristine tree', True,
                       f'git am on {label}' + (f' after {s.patches[0]}..'
                                               if patch != s.patches[0] else ''))
            if build:
                objs = touched_objects(work, 'HEAD')
                ok, why = make(work, build_dir, objs, log) if objs else (True, '')
                checks.add(f'{s.name}: {patch} compiles', ok,
                           why or (f'make {" ".join(objs)}' if objs else 'no .c file changed'))
        if not applied:
            continue
        if build:
            ok, why = make(work, build_dir, ['vmlinux'], log)
            checks.add(f'{s.name}: links into a vmlinux', ok, why or 'make vmlinux')
        dest = out / s.name
        commits = seriesmake.git(work, 'rev-list', '--reverse', f'{base}..{branch}').split()
        diff = out / f'{s.name}.diff'
        diff.write_text(seriesmake.git(work, 'diff', f'{base}..{branch}') + '\n')
        try:
            people, lists = seriesmake.maintainers(work, [diff])
        finally:
            diff.unlink()
        to = [STABLE] if s.stable else people[:1]
        cc = [n for n in people + lists if n not in to]
        seriesmake.git(work, 'format-patch', '-q', '--cover-letter', f'--base={base}',
                   '--no-signature', '--thread', f'--subject-prefix={s.prefix}',
                   *[f'--to={n}' for n in to], *[f'--cc={n}' for n in cc],
                   '-o', str(dest), f'{base}..{branch}', env=env)
        numbered = sorted(dest.glob('0*.patch'))
        numbers = {patch: f'[{i}/{len(commits)}] ' + seriesmake.git(work, 'log', '-1', '--format=%s', c)
                   for i, (patch, c) in enumerate(zip(s.patches, commits), 1)}
        for p in numbered[1:]:
            found = seriesmake.checkpatch(work, p)
            # A stable backport carries upstream's text as merged: what
            # checkpatch finds there is listed, not held against it.
            kept = bool(found) and is_backport(p.read_text())
            checks.add(f'{s.name}: checkpatch --strict {p.name}', not found or kept,
                       ('upstream text kept as merged: ' if kept else '')
                       + ('\n'.join(found) if found else '0 errors, 0 warnings, 0 checks'))
        cover = numbered[0]
        data = cover.read_text()
        data = data.replace('*** SUBJECT HERE ***', s.title)
        data = data.replace('*** BLURB HERE ***', cover_blurb(kver, s, numbers, label))
        cover.write_text(data)
        checks.add(f'{s.name}: cover letter', '***' not in data,
                   f'{len(numbered) - 1} patch(es) to {", ".join(to)}; cc {", ".join(cc)}')
    seriesmake.git(work, 'checkout', '-q', '-f', base)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kver', default='6.12')
    ap.add_argument('--author', default='', help='"Name <email>" (default: git config)')
    ap.add_argument('--author-of-head', action='store_true',
                    help='without --author and git config: the author of the checked-out '
                    'commit (for the checks, which post nothing)')
    ap.add_argument('--out', type=Path, help='default out/KVER-fixes-series')
    ap.add_argument('--no-build', dest='build', action='store_false',
                    help='skip the compile and link checks')
    return ap


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    out = (args.out or REPO / 'out' / f'{args.kver}-fixes-series').resolve()
    checks = serieschecks.Checks(args.kver, kind='fixes-series')

    def job() -> int:
        try:
            make_fixes_series(args.kver, who, out, checks, args.build)
        except (seriesplan.SeriesError, say.PrepareError, ValueError) as e:
            checks.add('fixes-series', False, str(e))
        return checks.finish(out)

    try:
        who = seriesmake.signer(args.author, args.author_of_head)
        return cache.locked(f'fixes-series {args.kver}', job)
    except (seriesplan.SeriesError, say.PrepareError) as e:
        print(f'cpuhp-kunit: fixes-series: {e}', file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
