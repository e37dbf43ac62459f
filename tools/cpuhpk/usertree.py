"""TREE=: a kernel developer's own git tree as the tree under test.

The user's tree is read, never written: no checkout, no commit, no build
output, no stash, not even an index refresh (GIT_OPTIONAL_LOCKS=0). What is
tested is built in a repository of our own under the cache,
``tree-<name>-<hash of the path>``, whose object store borrows the user's
(objects/info/alternates): it checks out REV, commits the uncommitted
changes of the user's tracked files on top (LOCAL=1, only when REV is HEAD:
they are changes against HEAD), then applies the test series of the
nearest kernel series carried in src/ at or below the tree's version
(SERIES=<dir> instead: a directory of the user's own patches), and copies
kunit/ in. One repository and one build directory per user tree, both kept:
the next run, of any revision, rebuilds only what changed.

One thing in the user's repository can change: git "freshens" (sets the
mtime of) an object it finds in the borrowed store instead of writing the
same object into ours, which only delays its pruning by gc; contents, refs,
index, stash, work tree and their mtimes stay as they were.

A tree that already has the suites (every kunit/MANIFEST file tracked at
REV: our series merged) gets only the harness's own patches
(src/<KVER>/upstream/plan 'harness') and is otherwise used as it is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from cpuhpk import cache, packages, say, seriesplan, stamp, tree

# The user's tree is read with these: no index refresh, no lock files, and a
# tree owned by someone else is read all the same.
READ_ENV = {'GIT_OPTIONAL_LOCKS': '0'}
READ_CONFIG = ('-c', 'safe.directory=*', '-c', 'core.fsmonitor=false')
USER_STAMP = 'cpuhp-kunit-tree'


class SeriesConflict(say.PrepareError):
    """A patch of the series applies to the user's tree neither plainly nor three-way."""


@dataclasses.dataclass(frozen=True)
class Spec:
    """What the user asked for: TREE=, REV=, LOCAL=, SERIES=."""
    path: Path
    rev: str = 'HEAD'
    local: bool = True
    series: Optional[Path] = None


@dataclasses.dataclass(frozen=True)
class Resolved:
    """A Spec read from the user's tree."""
    spec: Spec
    sha: str
    subject: str
    version: str            # the tree's kernel version, e.g. '6.12.0'
    kver: str               # the series of src/ chosen for it, e.g. '6.12'
    name: str               # the tree's directory name, for out/ and the cache
    key: str                # <name>-<hash of the path>: the cache's name for this tree
    local_diff: bytes       # the uncommitted changes tested (b'': none)
    local_files: Tuple[str, ...]
    local_note: str         # what the summary says about them

    @property
    def short(self) -> str:
        return self.sha[:12]

    def describe(self) -> str:
        """The one line a run prints about what it tested."""
        return (f'{self.spec.path} at {self.short} "{self.subject}" (linux {self.version}, '
                f'{self.series_label()}); {self.local_note}')

    def series_label(self) -> str:
        if self.spec.series is not None:
            return f'series {self.spec.series}'
        return f'series of src/{self.kver}'


# Variables by which a git that runs us (git bisect run, a hook) would point
# ours at its own repository instead of the one named by -C.
GIT_LOCATION_ENV = ('GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY',
                    'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_COMMON_DIR', 'GIT_PREFIX')


def read_env() -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in GIT_LOCATION_ENV}
    env.update(READ_ENV)
    return env


def user_git(path: Path, *args: str, check: bool = True) -> 'subprocess.CompletedProcess[str]':
    """git, read-only, in the user's tree."""
    res = subprocess.run(['git', *READ_CONFIG, '-C', str(path), *args], capture_output=True,
                         text=True, check=False, env=read_env())
    if check and res.returncode != 0:
        raise say.PrepareError(f"TREE={path}: git {' '.join(args)} failed: "
                               f'{res.stderr.strip()}')
    return res


def makefile_version(text: str) -> str:
    """'6.12.0' from a top-level kernel Makefile's VERSION/PATCHLEVEL/SUBLEVEL."""
    fields = {}
    for key in ('VERSION', 'PATCHLEVEL', 'SUBLEVEL'):
        m = re.search(rf'^{key}\s*=\s*(\d*)\s*$', text, re.M)
        fields[key] = m.group(1) if m else ''
    if not fields['VERSION'] or not fields['PATCHLEVEL']:
        raise ValueError('no VERSION/PATCHLEVEL lines: not a kernel Makefile')
    return f"{fields['VERSION']}.{fields['PATCHLEVEL']}.{fields['SUBLEVEL'] or '0'}"


def version_key(version: str) -> Tuple[int, int]:
    major, minor = version.split('.')[:2]
    return int(major), int(minor)


def carried_series(repo: Path) -> List[str]:
    """The kernel series src/ carries a test series for: ['6.1', '6.12']."""
    found = [p.parent.name for p in (repo / 'src').glob('*/series')
             if re.fullmatch(r'\d+\.\d+', p.parent.name)]
    return sorted(found, key=version_key)


def choose_series(version: str, carried: Sequence[str]) -> str:
    """The nearest carried series at or below @version."""
    below = [k for k in carried if version_key(k) <= version_key(version)]
    if not below:
        raise say.PrepareError(f'linux {version} is older than every kernel series with a test '
                               f'series here ({", ".join(carried) or "none"}): nothing to '
                               'apply; SERIES=<dir of patches> to bring your own')
    return below[-1]


def tree_key(path: Path) -> Tuple[str, str]:
    """(name, key) of a user tree: its directory name and name-<hash of the path>."""
    name = re.sub(r'[^A-Za-z0-9._-]+', '_', path.name) or 'tree'
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:8]
    return name, f'{name}-{digest}'


def resolve(spec: Spec, repo: Path) -> Resolved:
    """Read REV, the version and the local changes from the user's tree."""
    path = spec.path.expanduser()
    if not path.is_dir():
        raise say.PrepareError(f'TREE={spec.path}: no such directory')
    path = path.resolve()
    spec = dataclasses.replace(spec, path=path)
    top = user_git(path, 'rev-parse', '--show-toplevel', check=False)
    if top.returncode != 0:
        raise say.PrepareError(f'TREE={path}: not a git work tree (TREE= takes a kernel git '
                               'tree; for the Debian source package leave TREE empty)')
    if Path(top.stdout.strip()).resolve() != path:
        raise say.PrepareError(f'TREE={path}: the top of its git tree is {top.stdout.strip()}')
    found = user_git(path, 'rev-parse', '--verify', '--quiet', f'{spec.rev}^{{commit}}',
                     check=False)
    if found.returncode != 0:
        raise say.PrepareError(f'TREE={path}: REV={spec.rev} is not a commit of this tree')
    sha = found.stdout.strip()
    subject = user_git(path, 'log', '-1', '--format=%s', sha).stdout.strip()
    makefile = user_git(path, 'show', f'{sha}:Makefile', check=False)
    try:
        version = makefile_version(makefile.stdout if makefile.returncode == 0 else '')
    except ValueError:
        raise say.PrepareError(f'TREE={path}: REV={spec.rev} has no kernel Makefile with '
                               'VERSION and PATCHLEVEL: not a kernel tree') from None
    kver = choose_series(version, carried_series(repo))
    if spec.series is not None:
        spec = dataclasses.replace(spec, series=spec.series.expanduser().resolve())
        if not spec.series or not spec.series.is_dir():
            raise say.PrepareError(f'SERIES={spec.series}: no such directory')
    name, key = tree_key(path)
    head = user_git(path, 'rev-parse', 'HEAD').stdout.strip()
    diff: bytes = b''
    files: Tuple[str, ...] = ()
    changed = [ln for ln in user_git(path, 'diff', '--name-only', 'HEAD', '--').stdout
               .splitlines() if ln]
    if not changed:
        note = 'no uncommitted changes'
    elif not spec.local:
        note = f'uncommitted changes in {len(changed)} file(s) left out (LOCAL=0)'
    elif sha != head:
        note = (f'uncommitted changes in {len(changed)} file(s) left out: they are changes '
                f'against HEAD, and REV={spec.rev} is not HEAD')
    else:
        out = subprocess.run(['git', *READ_CONFIG, '-C', str(path), 'diff', '--binary',
                              '--full-index', 'HEAD', '--'], capture_output=True, check=True,
                             env=read_env())
        diff, files = out.stdout, tuple(changed)
        note = (f'with the uncommitted changes of {len(files)} file(s): '
                + ' '.join(files[:5]) + (' ...' if len(files) > 5 else ''))
    return Resolved(spec, sha, subject, version, kver, name, key, diff, files, note)


def clone_path(r: Resolved) -> Path:
    return cache.cache_root() / f'tree-{r.key}'


def objects_dir(path: Path) -> Path:
    common = user_git(path, 'rev-parse', '--path-format=absolute', '--git-common-dir')
    return Path(common.stdout.strip()) / 'objects'


def ensure_clone(r: Resolved) -> Path:
    """Our repository for the user's tree, borrowing its objects."""
    clone = clone_path(r)
    if not (clone / '.git').is_dir():
        clone.mkdir(parents=True, exist_ok=True)
        tree.git(clone, 'init', '-q')
        tree.git(clone, 'config', 'gc.auto', '0')
        say.log(f'a repository of our own for {r.spec.path}: {clone} (the tree itself is '
                'never written to)')
    info = clone / '.git' / 'objects' / 'info'
    info.mkdir(parents=True, exist_ok=True)
    (info / 'alternates').write_text(f'{objects_dir(r.spec.path)}\n')
    return clone


def series_patches(r: Resolved, repo: Path) -> Tuple[List[Path], str]:
    """The patches to apply (before any tree-has-the-suites choice) and where from."""
    if r.spec.series is not None:
        src = r.spec.series
        patches = tree.series_files(src) if (src / 'series').is_file() \
            else sorted(src.glob('*.patch'))
        if not patches:
            raise say.PrepareError(f'SERIES={src}: no series file and no *.patch')
        return patches, f'SERIES={src}'
    return tree.series_files(tree.series_dir(repo, r.kver)), f'src/{r.kver}/series'


def harness_patches(repo: Path, kver: str) -> List[Path]:
    """The harness's own patches of a series (src/<KVER>/upstream/plan), [] without a plan."""
    src = tree.series_dir(repo, kver)
    if not (src / 'upstream' / 'plan').is_file():
        return []
    return [src / name for name in seriesplan.read_plan(src).harness]


def has_suites(clone: Path, sha: str, repo: Path) -> bool:
    """Whether every file kunit/MANIFEST installs is tracked at @sha (our series merged)."""
    wanted = sorted(tree.read_manifest(repo / 'kunit'))
    listed = tree.git(clone, 'ls-tree', '-r', '--name-only', sha, '--', *wanted).stdout.split()
    return bool(wanted) and set(wanted) <= set(listed)


def failed_hunk(clone: Path, patch: Path) -> str:
    """'<file>, hunk <@@ header>' of the first hunk of @patch that does not apply."""
    check = tree.git(clone, 'apply', '--check', str(patch), check=False)
    err = check.stderr
    m = re.search(r'patch failed: (\S+):(\d+)', err)
    if not m:
        missing = re.search(r'error: (\S+): (does not exist in index|No such file)', err)
        if missing:
            return f'{missing.group(1)} (not in this tree)'
        return (err.strip().splitlines() or ['git apply --check failed'])[0]
    path, line = m.group(1), m.group(2)
    current = ''
    for text in patch.read_text(errors='replace').splitlines():
        if text.startswith('diff --git '):
            current = text.split(' b/', 1)[-1]
        elif current == path and text.startswith(f'@@ -{line},'):
            return f'{path}, hunk {text.strip()}'
    return f'{path}, the hunk at line {line}'


def apply_patch(clone: Path, patch: Path, r: Resolved, origin: str) -> None:
    """git am, three-way when plain does not apply; a SeriesConflict naming the hunk."""
    plain = tree.git(clone, 'apply', '--check', str(patch), check=False).returncode == 0
    if not plain and tree.git(clone, 'apply', '--check', '--reverse', str(patch),
                              check=False).returncode == 0:
        say.log(f'{patch.name}: already in this tree, not applied')
        return
    res = tree.git(clone, 'am', '-q', *([] if plain else ['-3']), str(patch), check=False)
    if res.returncode == 0:
        if not plain:
            say.log(f'{patch.name}: applied with a three-way merge')
        return
    conflicted = tree.git(clone, 'diff', '--name-only', '--diff-filter=U',
                          check=False).stdout.split()
    tree.git(clone, 'am', '--abort', check=False)
    where = failed_hunk(clone, patch)
    raise SeriesConflict(
        f'patch {patch.name} ({origin}) does not apply to {r.spec.path} at {r.short} '
        f'(linux {r.version}): {where}; a three-way merge fails too'
        + (f' (conflict in {" ".join(conflicted)})' if conflicted else '')
        + '. What you can do: apply the series by hand on a branch of your tree '
        f'(git am -3 {patch.parent}/*.patch, resolve), git format-patch the result '
        'into a directory and run again with SERIES=<that directory>; or choose '
        'a REV the series applies to')


def fingerprint(r: Resolved, patches: Sequence[Path], fixes: bool) -> str:
    h = hashlib.sha256(f'{r.sha}\0{fixes}\0'.encode() + r.local_diff)
    h.update(stamp.fingerprint(patches).encode())
    return h.hexdigest()


def checkout(clone: Path, r: Resolved, repo: Path) -> None:
    """REV in our repository, files rewritten only where they differ (make stays incremental)."""
    tree.git(clone, 'am', '--abort', check=False)
    # Our copies of kunit/ are untracked: where REV tracks the same paths
    # (a tree with the suites), they must go before the checkout.
    installed = (tree.read_stamp(clone, tree.INSTALLED_STAMP) or '').split()
    if installed:
        tracked = tree.git(clone, 'ls-tree', '-r', '--name-only', r.sha, '--',
                           *installed).stdout.split()
        for rel in tracked:
            (clone / rel).unlink(missing_ok=True)
        if tracked:
            stamp.forget(tree.stamp_path(clone, tree.INSTALLED_STAMP))
    res = tree.git(clone, 'checkout', '-q', '-f', '--detach', r.sha, check=False)
    if res.returncode != 0:
        raise say.PrepareError(f'checking out {r.short} of {r.spec.path} in {clone} failed: '
                               f'{res.stderr.strip()}')
    tree.git(clone, 'reset', '-q', '--hard', r.sha)
    if r.local_diff:
        applied = subprocess.run(['git', '-C', str(clone), 'apply', '--index', '--binary', '-'],
                                 input=r.local_diff, capture_output=True, check=False)
        if applied.returncode != 0:
            raise say.PrepareError(f'the uncommitted changes of {r.spec.path} do not apply to '
                                   f'its HEAD {r.short}: '
                                   f'{applied.stderr.decode(errors="replace").strip()}; '
                                   'LOCAL=0 tests HEAD without them')
        tree.git(clone, 'commit', '-q', '--no-verify', '-m',
                 f'cpuhp-kunit: uncommitted changes of {r.spec.path}')


def prepare(r: Resolved, repo: Path, fixes: bool = False) -> tree.Tree:
    """The user's tree at REV (+ local changes) with the series, ready for kunit.py."""
    packages.ensure_packages(tree.BUILD_PACKAGES)
    clone = ensure_clone(r)
    patches, origin = series_patches(r, repo)
    if fixes:
        if r.spec.series is not None:
            raise say.PrepareError('FIXES=1 with SERIES=: put the fixes into your series')
        patches = patches + tree.series_files(tree.series_dir(repo, r.kver) / 'fixes')
    fp = fingerprint(r, patches, fixes)
    stamped, head = tree.series_stamp(clone)
    current = tree.git(clone, 'rev-parse', '--verify', '--quiet', 'HEAD', check=False)
    suites = has_suites(clone, r.sha, repo)
    if stamped != fp or not head or current.stdout.strip() != head:
        stamp.forget(tree.stamp_path(clone, tree.SERIES_STAMP))
        checkout(clone, r, repo)
        if suites:
            harness = set(harness_patches(repo, r.kver))
            skipped = [p for p in patches if p not in harness]
            patches = [p for p in patches if p in harness]
            say.log(f'{r.spec.path} at {r.short} has the suites (every kunit/MANIFEST file is '
                    f'tracked): used as it is; {len(skipped)} patch(es) of {origin} not '
                     f'applied, {len(patches)} of the harness applied')
            origin += ' (harness only)'
        for p in patches:
            apply_patch(clone, p.resolve(), r, origin)
        if not suites:
            say.log(f'applied {len(patches)} patch(es) from {origin} on {r.spec.path} at '
                    f'{r.short} (linux {r.version})')
        new_head = tree.git(clone, 'rev-parse', 'HEAD').stdout.strip()
        stamp.write_text(tree.stamp_path(clone, tree.SERIES_STAMP), f'{fp} {new_head}')
        stamp.write_text(tree.stamp_path(clone, USER_STAMP), f'{r.spec.path}\n{r.sha}\n')
    tree.check_clean(clone)
    if not suites:
        tree.install_kunit(clone, repo / 'kunit')
    return tree.Tree(kver=r.kver, package=f'{r.name} {r.short}', version=r.version,
                     path=clone, key=f'tree-{r.key}')
