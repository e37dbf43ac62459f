"""make series' patches: the upstream-shaped series, generated from src/ and kunit/.

For each series of src/<KVER>/upstream/plan (seriesplan.py) make_series()
commits the patches on the pristine tree, adds the test sources to the
commit that wires them up (for_kernel(): as the kernel will build them,
the 6.1 compat header and version blocks resolved for this kernel), signs
them off as the user (author_of(), signer()), addresses them
(recipients(): get_maintainer.pl and the sections they touch) and writes
`git format-patch --cover-letter --base` output with the cover letter of
src/<KVER>/upstream/<name>.cover filled in, each patch checked by
checkpatch.pl --strict. series.py checks what it made.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from cpuhpk import cache, say, seriesplan, tree
from cpuhpk.paths import REPO
from cpuhpk.serieschecks import Checks

# The patches carry this identity until a user's replaces it.
PLACEHOLDER = 'dev@cpuhp-kunit.example'
# The pristine commit: the tree of the tarball under a fixed identity and
# date, so that the same package gives the same base-commit everywhere.
PRISTINE_ENV = {'GIT_AUTHOR_NAME': 'linux-source', 'GIT_AUTHOR_EMAIL': 'linux-source@debian.org',
                'GIT_AUTHOR_DATE': '1970-01-01T00:00:00+0000',
                'GIT_COMMITTER_NAME': 'linux-source',
                'GIT_COMMITTER_EMAIL': 'linux-source@debian.org',
                'GIT_COMMITTER_DATE': '1970-01-01T00:00:00+0000'}
# checkpatch cannot look commit ids up in a tree without upstream history.
CHECKPATCH = ('perl', 'scripts/checkpatch.pl', '--strict', '--terse', '--show-types',
              '--ignore', 'UNKNOWN_COMMIT_ID')


def version_code(version: str) -> int:
    """6.12.118 -> KERNEL_VERSION(6, 12, 118), as the kernel computes it (c capped at 255)."""
    a, b, c = (int(x) for x in (version.split('.') + ['0', '0'])[:3])
    return (a << 16) + (b << 8) + min(c, 255)


_VERSION_IF = re.compile(r'#if LINUX_VERSION_CODE (>=|<) KERNEL_VERSION\((\d+), (\d+), (\d+)\)$')


def for_kernel(text: str, version: str, drop_compat: bool,
               parts: Optional[Sequence[str]] = None) -> str:
    """A kunit/ source as this kernel's series carries it.

    Its harness blocks go, and the parts of the posted suite not in @parts
    (None: all; tree.harness_view()). The `#if
    LINUX_VERSION_CODE >= KERNEL_VERSION(a, b, c)` blocks (no nesting in
    them) keep the branch this kernel takes; <linux/version.h>
    goes when nothing uses it; with @drop_compat the compat header's
    include goes. Anything else is left as it is.
    """
    out: List[str] = []
    keep = [True]
    state: Optional[str] = None
    code = version_code(version)
    try:
        text = tree.harness_view(text, False, parts)
    except say.PrepareError as e:
        raise seriesplan.SeriesError(str(e)) from None
    for n, line in enumerate(text.split('\n'), 1):
        m = _VERSION_IF.match(line)
        if m:
            if state is not None:
                raise seriesplan.SeriesError(f'line {n}: nested version check')
            want = version_code('.'.join(m.group(2, 3, 4)))
            taken = code >= want if m.group(1) == '>=' else code < want
            state, keep = 'if', [taken]
            continue
        if state is not None and re.match(r'#\s*if', line):
            raise seriesplan.SeriesError(f'line {n}: a preprocessor block inside a version check')
        if state == 'if' and line.startswith('#else'):
            state, keep = 'else', [not keep[0]]
            continue
        if state is not None and line.startswith('#endif'):
            state, keep = None, [True]
            continue
        if not keep[0]:
            continue
        if drop_compat and line == f'#include "{seriesplan.COMPAT}"':
            continue
        out.append(line)
    if state is not None:
        raise seriesplan.SeriesError('a version check without #endif')
    result = '\n'.join(out)
    if 'LINUX_VERSION_CODE' not in result:
        result = result.replace('#include <linux/version.h>\n', '')
    # A dropped include may leave two blank lines behind.
    return re.sub(r'\n\n\n+', '\n\n', result)


# Addresses nobody reads mail at: the names RFC 2606 and RFC 6761 reserve
# (example.*, .example, .invalid, .test, .localhost, .local) and forges'
# no-reply addresses of web commits.
_NOBODY = re.compile(r'@(?:.*\.)?(?:example|example\.(?:com|net|org)|invalid|test|localhost|local)$'
                     r'|^(?:.*[.+-])?no-?reply[.+@-]', re.I)


def author_of(given: str, checks_only: bool = False) -> str:
    """`Name <email>`: AUTHOR= or the user's git config.

    A series is signed off by someone who can answer its review: an
    address nobody reads (_NOBODY, the placeholder) is refused, unless the
    series is made @checks_only (never to be sent).
    """
    who = given.strip()
    source = 'AUTHOR'
    if not who:
        def cfg(key: str) -> str:
            res = subprocess.run(['git', '-C', str(REPO), 'config', key],
                                 capture_output=True, text=True, check=False)
            return res.stdout.strip()
        name, email = cfg('user.name'), cfg('user.email')
        who = f'{name} <{email}>' if name and email else ''
        source = 'git config user.email'
    m = re.fullmatch(r'([^<>@]+?) <([^<>\s]+@[^<>\s]+)>', who)
    if not m:
        raise seriesplan.SeriesError('no author: set git config user.name and user.email, or '
                                     'AUTHOR="Name <email>" (got "' + who + '")')
    if checks_only:
        return who
    if m.group(2) == PLACEHOLDER:
        raise seriesplan.SeriesError(f'AUTHOR is the placeholder {PLACEHOLDER}: give a real one')
    if _NOBODY.search(m.group(2)):
        raise seriesplan.SeriesError(f'{source} is {m.group(2)}, an address nobody reads '
                                     '(reserved or no-reply): give AUTHOR="Name <email>" of '
                                     'the one who signs off and answers the review')
    return who


def signer(given: str, of_head: bool) -> str:
    """Who signs the patches: @given, else git config, else (@of_head, for
    checks that post nothing) the author of this repository's HEAD,
    whatever address it has."""
    if given or not of_head:
        return author_of(given)
    try:
        return author_of('')
    except seriesplan.SeriesError:
        return author_of(git(REPO, 'log', '-1', '--format=%an <%ae>'), checks_only=True)


GET_MAINTAINER = ('perl', 'scripts/get_maintainer.pl', '--no-rolestats', '--no-git',
                  '--no-git-fallback', '--no-tree')


def maintainers(work: Path, patches: Sequence[Path]) -> Tuple[List[str], List[str]]:
    """(people, lists) scripts/get_maintainer.pl of @work names for @patches."""
    res = subprocess.run([*GET_MAINTAINER, *map(str, patches)], cwd=work, capture_output=True,
                         text=True, timeout=120, check=False)
    names = [ln.strip() for ln in res.stdout.splitlines() if ln.strip()]
    if res.returncode != 0 or not names:
        raise seriesplan.SeriesError('scripts/get_maintainer.pl named nobody: '
                                     + (res.stderr.strip().splitlines() or ['no output'])[-1])
    people = [n for n in names if '<' in n]
    return people, [n for n in names if '<' not in n]


def section(maintainers_file: str, title: str) -> Tuple[List[str], List[str]]:
    """(people, lists) of the MAINTAINERS entry @title: its M: and R:, its L:."""
    lines = maintainers_file.split('\n')
    try:
        at = lines.index(title)
    except ValueError:
        raise seriesplan.SeriesError(f'MAINTAINERS has no entry "{title}"') from None
    people: List[str] = []
    lists: List[str] = []
    for ln in lines[at + 1:]:
        if not ln.strip():
            break
        tag, _, value = ln.partition(':')
        if tag in ('M', 'R'):
            people.append(value.strip())
        elif tag == 'L':
            lists.append(value.strip().split()[0])
    return people, lists


def recipients(work: Path, patches: Sequence[Path], sections: Sequence[str]
               ) -> Tuple[List[str], List[str]]:
    """(To, Cc) of a series: the people get_maintainer.pl names for
    @patches and those of the MAINTAINERS @sections (the KUnit framework's,
    linux-pm's where suspend is driven), To; the lists, Cc."""
    people, lists = maintainers(work, patches)
    text = (work / 'MAINTAINERS').read_text()
    for title in sections:
        p, ls = section(text, title)
        people += [n for n in p if n not in people]
        lists += [n for n in ls if n not in lists]
    return people, lists


def signed_off(message: str, who: str) -> str:
    """@message with its Signed-off-by lines replaced by @who's."""
    body = [ln for ln in message.rstrip('\n').split('\n') if not ln.startswith('Signed-off-by:')]
    while body and not body[-1].strip():
        body.pop()
    # One trailer block: below Fixes:, Cc: and the like without a blank line.
    trailer = bool(body) and re.match(r'^[A-Z][A-Za-z-]*: \S', body[-1]) is not None
    return '\n'.join(body) + ('\n' if trailer else '\n\n') + f'Signed-off-by: {who}\n'


def git(repo: Path, *args: str, env: Optional[Dict[str, str]] = None,
        stdin: Optional[str] = None) -> str:
    res = subprocess.run(['git', '-C', str(repo), *args], capture_output=True, text=True,
                         input=stdin, env={**os.environ, **(env or {})}, check=False)
    if res.returncode != 0:
        raise seriesplan.SeriesError(f'git {" ".join(args[:3])} in {repo}: '
                                     + (res.stderr.strip().splitlines() or ['failed'])[-1])
    return res.stdout.strip()


# The posted series go to the KUnit framework's people and lists besides
# those of the files they touch; to linux-pm's when they drive suspend.
KUNIT_SECTION = 'KERNEL UNIT TESTING FRAMEWORK (KUnit)'
PM_SECTION = 'SUSPEND TO RAM'
# A patch a maintainer reviews in one sitting (format-patch lines).
MAX_PATCH_LINES = 800


def sections_for(patch: str) -> List[str]:
    """The MAINTAINERS entries a patch goes to besides get_maintainer.pl's:
    KUnit's for a test, linux-pm's where it drives suspend."""
    tests = re.search(r'^\+\+\+ b/kernel/tests/', patch, re.M) is not None or \
        re.search(r'^Subject: .*KUnit', patch, re.M) is not None
    return [KUNIT_SECTION] * tests + [PM_SECTION] * drives_suspend(patch)


def with_recipients(patch: str, to: Sequence[str], cc: Sequence[str]) -> str:
    """@patch (format-patch output) with its To: and Cc: header fields
    replaced by @to and @cc, after its Subject:."""
    head, sep, body = patch.partition('\n\n')
    fields: List[List[str]] = []
    for line in head.split('\n'):
        if line.startswith((' ', '\t')) and fields:
            fields[-1].append(line)
        else:
            fields.append([line])
    kept = [f for f in fields if not f[0].startswith(('To:', 'Cc:'))]
    out: List[str] = []
    for f in kept:
        out += f
        if f[0].startswith('Subject:'):
            for name, who in (('To', to), ('Cc', cc)):
                if who:
                    out.append(f'{name}: ' + ',\n    '.join(who))
    return '\n'.join(out) + sep + body


def drives_suspend(patch: str) -> bool:
    """@patch adds code that enters or fakes system suspend."""
    return re.search(r'^\+.*\b(?:suspend_devices_and_enter|pm_suspend|freeze_secondary_cpus|'
                     r'hibernate)\b', patch, re.M) is not None


def pristine_commit(repo: Path, treeish: str, label: str) -> str:
    """The deterministic commit of @treeish's tree (see PRISTINE_ENV)."""
    tree_id = git(repo, 'rev-parse', f'{treeish}^{{tree}}')
    return git(repo, 'commit-tree', tree_id, '-m', label, env=PRISTINE_ENV)


def identity(who: str) -> Dict[str, str]:
    name, _, email = who.rpartition(' <')
    return {'GIT_AUTHOR_NAME': name, 'GIT_AUTHOR_EMAIL': email.rstrip('>'),
            'GIT_COMMITTER_NAME': name, 'GIT_COMMITTER_EMAIL': email.rstrip('>')}


def commit_series(work: Path, base: str, s: seriesplan.Series, src: Path, version: str,
                  drop_compat: bool, who: str) -> None:
    """Branch @s.name of @work: @base plus the series, sources added, signed off."""
    manifest = tree.read_manifest(REPO / 'kunit')
    env = identity(who)
    git(work, 'checkout', '-q', '-f', '-B', s.name, base)
    parts: Dict[str, List[str]] = {}
    for patch, specs in s.patches:
        path = seriesplan.patch_path(src, patch)
        if '\ndiff --git ' in path.read_text():
            git(work, 'am', '-q', '--keep-cr', str(path), env=env)
        else:
            # A patch whose change is the sources it adds: its message, then them.
            git(work, 'commit', '-q', '--allow-empty', '-F', '-', env=env,
                stdin=patch_message(path.read_text()))
        for spec in specs:
            name, part = seriesplan.source_parts(spec)
            parts.setdefault(name, [])
            if part:
                parts[name].append(part)
        files = [seriesplan.source_parts(f)[0] for f in specs]
        for rel, name in manifest.items():
            if name not in files:
                continue
            text = for_kernel((REPO / 'kunit' / name).read_text(), version, drop_compat,
                              parts[name])
            dest = work / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
            git(work, 'add', '-f', rel)
        msg = signed_off(git(work, 'log', '-1', '--format=%B'), who)
        git(work, 'commit', '-q', '--amend', '--reset-author', '-F', '-', env=env, stdin=msg)


def patch_message(text: str) -> str:
    """The commit message of a format-patch file: its subject and body."""
    head, _, rest = text.partition('\n\n')
    subject = re.search(r'^Subject: (?:\[[^]]*\] )?(.*(?:\n .*)*)', head, re.M)
    if not subject:
        raise seriesplan.SeriesError('a patch without a Subject: line')
    return (' '.join(subject.group(1).split()) + '\n\n'
            + rest.partition('\n---\n')[0].rstrip('\n') + '\n')


def fill_cover(cover: Path, s: seriesplan.Series, text: str) -> None:
    data = cover.read_text()
    data = data.replace('*** SUBJECT HERE ***', s.title)
    data = data.replace('*** BLURB HERE ***', text.rstrip('\n'))
    cover.write_text(data)


def results_text(kver: str, s: seriesplan.Series, version: str) -> str:
    """What the last run of the posted series found (make series-test:
    the cover letter's kunit.py command on a fresh extraction with the
    series applied, out/<KVER>-series/pristine-<name>/)."""
    where = f'out/{kver}-series/pristine-{s.name}'
    try:
        v = json.loads((REPO / where / 'verdict.json').read_text())
    except (OSError, ValueError):
        raise seriesplan.SeriesError(f'no results of the posted series in {where}: run make '
                                     f'series-test KVER={kver} first') from None
    if v.get('verdict') != 'pass' or v.get('known_failures'):
        raise seriesplan.SeriesError(f'{where}/verdict.json is not a clean pass: not writing '
                                     'a cover letter on it')
    count: Dict[str, int] = {}
    for st in v['statuses'].values():
        count[st] = count.get(st, 0) + 1
    reasons: Dict[str, int] = {}
    for sk in v.get('skips', []):
        reasons[sk['reason']] = reasons.get(sk['reason'], 0) + 1
    lines = textwrap.wrap(
        f'Results on Debian\'s linux-source-{kver} ({version}) with '
        f'this series, x86_64 under QEMU (TCG), the command above: {len(v["statuses"])} '
        f'results, {count.get("pass", 0)} passed, {count.get("skip", 0)} skipped, '
        f'{count.get("fail", 0)} failed; no kernel warning.', 72)
    for reason, n in sorted(reasons.items()):
        lines += textwrap.wrap(f'{n} skipped: {reason}', 72, initial_indent='  ',
                               subsequent_indent='    ')
    return '\n'.join(lines)


def cpus(s: seriesplan.Series, smp: int = 4) -> int:
    """The CPUs @s's tests run with: its plan's, else @smp."""
    return s.cpus or smp


def run_command(s: seriesplan.Series, smp: int = 4) -> str:
    n = cpus(s, smp)
    return (f"./tools/testing/kunit/kunit.py run --kunitconfig={s.kunitconfig} "
            "--arch=x86_64" + (f" --qemu_args='-smp {n}'" if n > 1 else ''))


def base_text(kver: str, package: str, version: str, tree_id: str) -> str:
    """What the series is made on, said as it is: Debian's source package,
    not a commit of any upstream tree (so no base-commit: line)."""
    return '\n'.join(textwrap.wrap(
        f"Base: Debian's linux-source-{kver} {package}, that is linux-{kver}.y at "
        f'v{version} with Debian\'s patches, not a mainline or stable commit: the patches '
        'carry no base-commit. The tarball (/usr/src/linux-source-'
        f'{kver}.tar.xz) extracted and committed whole is git tree {tree_id}. '
        'Not yet applied to a maintainer\'s tree or a mainline release.', 72))


BASE_TREE = re.compile(r'is git tree ([0-9a-f]{40})\.')


def cover_text(src: Path, kver: str, s: seriesplan.Series, checkpatch_note: str, base_label: str,
               results: bool, version: str = '') -> str:
    prose = (src / 'upstream' / f'{s.name}.cover').read_text()
    found = (results_text(kver, s, version) if results else
             '(not filled in: made with --no-results, for the checks of the series)')
    return prose.format(run=run_command(s), results=found, checkpatch=checkpatch_note,
                        base=base_label)


_FINDING = re.compile(r': (ERROR|WARNING|CHECK):')


def checkpatch(work: Path, patch: Path) -> List[str]:
    """What checkpatch --strict (run in @work) finds in @patch, a line each."""
    res = subprocess.run([*CHECKPATCH, str(patch)], cwd=work, capture_output=True, text=True,
                         check=False,
                         env={**os.environ, 'PATH': '/usr/bin:' + os.environ.get('PATH', '')})
    found = [ln.replace(str(patch), patch.name) for ln in res.stdout.splitlines()
             if _FINDING.search(ln)]
    if res.returncode != 0 and not found:
        raise seriesplan.SeriesError(f'checkpatch failed on {patch.name}: '
                                     f'{res.stderr.strip()[-200:]}')
    return found


def kinds(found: Sequence[str]) -> Dict[str, int]:
    counts = {'ERROR': 0, 'WARNING': 0, 'CHECK': 0}
    for ln in found:
        m = _FINDING.search(ln)
        if m:
            counts[m.group(1)] += 1
    return counts


def scratch(t: tree.Tree) -> Path:
    """A clone of the cached tree to build the series in (outside the repository)."""
    work = cache.cache_root() / f'series-{t.version}'
    if (work / '.git').is_dir():
        try:
            git(work, 'fetch', '-q', '--force', str(t.path), 'baseline:refs/tags/baseline')
            git(work, 'cat-file', '-e', 'baseline^{tree}')
            return work
        except seriesplan.SeriesError:
            pass    # the cached tree was extracted anew: its objects are others
    shutil.rmtree(work, ignore_errors=True)
    git(t.path, 'clone', '-q', '--shared', '--no-checkout', str(t.path), str(work))
    return work


def make_series(kver: str, who: str, out: Path, checks: Checks, results: bool = True) -> None:
    """The series in out/<name>/, each patch checked by checkpatch --strict."""
    src = tree.series_dir(REPO, kver)
    plan = seriesplan.read_plan(src)
    t = tree.prepare(kver, REPO)
    work = scratch(t)
    label = f'linux-source-{kver} {t.package}'
    base = pristine_commit(work, 'baseline', label)
    base_label = base_text(kver, t.package, t.version, git(work, 'rev-parse', 'baseline^{tree}'))
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    text: List[str] = []
    for s in plan.series:
        commit_series(work, base, s, src, t.version, plan.drop_compat, who)
        dest = out / s.name
        fmt = ['format-patch', '-q', '--cover-letter', '--no-signature', '--thread', '-o',
               str(dest), f'{base}..{s.name}']
        git(work, *fmt, env=identity(who))
        patches = sorted(dest.glob('0*.patch'))[1:]
        # Each patch to its own people; the cover letter to all of them.
        every: Tuple[List[str], List[str]] = ([], [])
        for p in patches:
            to, cc = recipients(work, [p], sections_for(p.read_text()))
            p.write_text(with_recipients(p.read_text(), to, cc))
            every[0].extend(n for n in to if n not in every[0])
            every[1].extend(n for n in cc if n not in every[1])
        cover = dest / '0000-cover-letter.patch'
        cover.write_text(with_recipients(cover.read_text(), *every))
        checks.add(f'recipients {s.name}', bool(every[0] and every[1]),
                   f'To: {", ".join(every[0])}; Cc: {", ".join(every[1])} (the cover '
                   'letter; each patch its own)')
        sizes = {p.name: len(p.read_text().splitlines()) for p in patches}
        big = {n: k for n, k in sizes.items() if k > MAX_PATCH_LINES}
        checks.add(f'patch sizes {s.name}', not big,
                   (f'over {MAX_PATCH_LINES} lines: ' if big else 'lines: ')
                   + ', '.join(f'{n} {k}' for n, k in (big or sizes).items()))
        words = [f'{p.name}: {w}' for p in sorted(dest.glob('0*.patch'))
                 for w in seriesplan.harness_words(p.read_text())]
        checks.add(f'no harness words {s.name}', not words,
                   '\n'.join(words) if words else 'none in the cover letter, messages or code')
        counts = {'ERROR': 0, 'WARNING': 0, 'CHECK': 0}
        for p in patches:
            found = checkpatch(work, p)
            for k, n in kinds(found).items():
                counts[k] += n
            checks.add(f'checkpatch --strict {s.name}/{p.name}', not found,
                       '\n'.join(found) if found else '0 errors, 0 warnings, 0 checks')
            text += [f'{s.name}/{p.name}: {len(found)} found'] + ['  ' + f for f in found]
        note = '\n'.join(textwrap.wrap(
            f'checkpatch.pl --strict: {counts["ERROR"]} errors, {counts["WARNING"]} warnings, '
            f'{counts["CHECK"]} checks on every patch (commit ids are not looked up: the tree '
            'has no upstream history).', 72))
        fill_cover(dest / '0000-cover-letter.patch', s,
                   cover_text(src, kver, s, note, base_label, results, t.version))
    git(work, 'checkout', '-q', '-f', base)
    (out / 'checkpatch.txt').write_text('\n'.join(text) + '\n')
