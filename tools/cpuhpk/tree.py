"""Prepare a kernel tree in the cache: packages, extraction, baseline, series, kunit/ files.

The tree lives outside the repository (``$CPUHP_KUNIT_CACHE``, default
``~/.cache/cpuhp-kunit``) as ``linux-<upstream version>``.  It is a git
repository whose first commit (tag ``baseline``) is the pristine Debian
tarball; the patch series from ``src/`` sits on top of it, applied with
``git am``.  Every step is skipped when its input did not change, so a rerun
leaves make with nothing to rebuild.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

if __package__ in (None, ''):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = 'cpuhpk'  # noqa: A001  (run as a script)

from cpuhpk import cache, packages, say, stamp  # noqa: E402
from cpuhpk.paths import REPO  # noqa: E402

# Debian packages the build and the QEMU run need, besides linux-source-<KVER>.
BUILD_PACKAGES = (
    'bc', 'bison', 'flex', 'gcc', 'git', 'libelf-dev', 'libssl-dev', 'make',
    'perl', 'python3', 'qemu-system-x86', 'xz-utils',
)

# Stamps kept inside the cached tree's .git, so wiping the tree wipes them too.
PACKAGE_STAMP = 'cpuhp-kunit-package'
SERIES_STAMP = 'cpuhp-kunit-series'
INSTALLED_STAMP = 'cpuhp-kunit-installed'
HEADS_STAMP = 'cpuhp-kunit-heads'      # fingerprint -> HEAD, of every series applied
GIT_IDENTITY = ('-c', 'user.name=cpuhp-kunit', '-c', 'user.email=cpuhp-kunit@localhost')


@dataclasses.dataclass(frozen=True)
class Tree:
    """A prepared kernel tree."""
    kver: str           # the series we asked for, e.g. '6.12'
    package: str        # Debian package version, e.g. '6.12.118-1~deb12u1'
    version: str        # upstream version, e.g. '6.12.118'
    path: Path          # the tree itself
    key: str = ''       # the cache's name for its build directories ('': the version)

    @property
    def build_key(self) -> str:
        return self.key or self.version

    @property
    def kunit_py(self) -> Path:
        return self.path / 'tools' / 'testing' / 'kunit' / 'kunit.py'



def git(tree: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(['git', *GIT_IDENTITY, '-C', str(tree), *args],
                         capture_output=True, text=True, check=False)
    if check and res.returncode != 0:
        raise say.PrepareError(f"git {' '.join(args)} in {tree} failed: "
                               f'{(res.stderr or res.stdout).strip()}')
    return res


def stamp_path(tree: Path, name: str) -> Path:
    return tree / '.git' / name


def read_stamp(tree: Path, name: str) -> Optional[str]:
    """The stamp @name of @tree; None when missing or unreadable (stamp.read_text())."""
    return stamp.read_text(stamp_path(tree, name))


def extract(kver: str, package: str, dest: Path, tarball: Optional[Path] = None) -> None:
    """Extract /usr/src/linux-source-<kver>.tar.xz to dest and commit it as baseline."""
    tarball = tarball or Path('/usr/src') / f'linux-source-{kver}.tar.xz'
    if not tarball.is_file():
        raise say.PrepareError(f'{tarball} not found although '
                               f'{packages.source_package(kver)} is installed')
    tmp = dest.with_name(dest.name + '.partial')
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    say.log(f'extracting {tarball} to {dest}')
    res = subprocess.run(['tar', '-xf', str(tarball), '-C', str(tmp), '--strip-components=1'],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        why = (res.stderr.strip().splitlines() or [f'exit status {res.returncode}'])[-1]
        raise say.PrepareError(f'extracting {tarball} to {dest.parent} failed: {why}')
    git(tmp, 'init', '-q')
    git(tmp, 'config', 'gc.auto', '0')
    # -f: the tarball is the baseline, whatever its .gitignore files say.
    git(tmp, 'add', '-A', '-f')
    git(tmp, 'commit', '-q', '-m', f'baseline: {packages.source_package(kver)} {package}')
    git(tmp, 'tag', 'baseline')
    stamp.write_text(stamp_path(tmp, PACKAGE_STAMP), package)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)


def series_dir(repo: Path, kver: str) -> Path:
    """src/<KVER>/: the kernel changes of one series (its series, fixes/ apart)."""
    src = repo / 'src' / kver
    if not (src / 'series').is_file():
        known = ', '.join(sorted(p.parent.name for p in (repo / 'src').glob('*/series')))
        raise say.PrepareError(f'no src/{kver}/series: KVER={kver} has no kernel changes here '
                               f'(series with some: {known or "none"})')
    return src


def series_files(src: Path) -> List[Path]:
    """The patches named by src/<KVER>/series, in order."""
    series = src / 'series'
    if not series.is_file():
        return []
    names = [ln.strip() for ln in series.read_text().splitlines()]
    patches = [src / n for n in names if n and not n.startswith('#')]
    for p in patches:
        if not p.is_file():
            raise say.PrepareError(f'{src.parent.name}/{src.name}/series names {p.name}, '
                                   'which does not exist')
    return patches


def series_stamp(tree: Path) -> Tuple[str, str]:
    """(fingerprint of the applied series, the HEAD it produced)."""
    fp, _, head = (read_stamp(tree, SERIES_STAMP) or '').partition(' ')
    return fp, head.strip()


def apply_series(tree: Path, version: str, src: Path, fixes: bool = False) -> None:
    """Reapply src/ on the baseline when the series changed.

    With @fixes, <src>/fixes/series (our kernel fixes, kept apart from the
    test series) goes on top; by default the distro's kernel is tested as
    shipped.
    """
    patches = series_files(src)
    if fixes:
        patches += series_files(src / 'fixes')
    fp = stamp.fingerprint([src / 'series', *patches] if patches else [],
                           'fixes' if fixes else '')
    stamped, head = series_stamp(tree)
    if stamped == fp and head:
        return
    stamp.forget(stamp_path(tree, SERIES_STAMP))
    # Applied before (FIXES=1 and back): go to that commit, which rewrites
    # only the files that differ, so make rebuilds only what they touch.
    known = dict(ln.split(' ', 1) for ln in (read_stamp(tree, HEADS_STAMP) or '').splitlines()
                 if ' ' in ln)
    if fp in known and git(tree, 'cat-file', '-e', f'{known[fp]}^{{commit}}',
                           check=False).returncode == 0:
        git(tree, 'am', '--abort', check=False)
        git(tree, 'reset', '-q', '--hard', known[fp])
        say.log(f'switched to the series{" and its fixes" if fixes else ""} applied before')
        stamp.write_text(stamp_path(tree, SERIES_STAMP), f'{fp} {known[fp]}')
        return
    git(tree, 'am', '--abort', check=False)
    git(tree, 'reset', '-q', '--hard', 'baseline')
    for p in patches:
        res = git(tree, 'am', '-q', str(p.resolve()), check=False)
        if res.returncode != 0:
            git(tree, 'am', '--abort', check=False)
            git(tree, 'reset', '-q', '--hard', 'baseline')
            reason = ' '.join((res.stderr or res.stdout).strip().splitlines()[:3])
            raise say.PrepareError(f'patch {p.name} does not apply to linux {version}: {reason}')
    say.log(f'applied {len(patches)} patch(es) from {src.parent.name}/{src.name}/series'
            f'{" and fixes/series" if fixes else ""} '
            f'on linux {version}')
    head = git(tree, 'rev-parse', 'HEAD').stdout.strip()
    stamp.write_text(stamp_path(tree, SERIES_STAMP), f'{fp} {head}')
    known[fp] = head
    stamp.write_text(stamp_path(tree, HEADS_STAMP),
                     ''.join(f'{k} {v}\n' for k, v in known.items()))


def check_clean(tree: Path) -> None:
    """Refuse a tree that is not what src/<KVER>/series makes of the baseline, unless asked to.

    A break left in the cache, edited or committed by hand, would otherwise
    change every later run's verdict without a trace; CPUHP_KUNIT_DIRTY=1 is
    for testing such a break (mutation testing sets it for the mutant's run).
    """
    _, want = series_stamp(tree)
    head = git(tree, 'rev-parse', 'HEAD').stdout.strip()
    if want and head != want:
        extra = git(tree, 'log', '--oneline', f'{want}..{head}', check=False).stdout.split('\n')
        extra = [ln for ln in extra if ln.strip()]
        what = (f'{len(extra)} commit(s) not in src/ ({extra[0]}' + (', ...)' if len(extra) > 1
                                                                   else ')')
                if extra else f'HEAD {head[:12]} instead of {want[:12]}')
        if os.environ.get('CPUHP_KUNIT_DIRTY') == '1':
            say.log(f'testing a tree that is not its src/<KVER>/series: {what}')
        else:
            raise say.PrepareError(
                f'the cached tree {tree} is not what src/<KVER>/series makes of the baseline: '
                f"{what}; export them with "
                + ("git format-patch into src/<KVER>/fixes/ (this is FIXES=1's tree)"
                   if tree.name.endswith('-fixes') else "'tools/export-series.sh <KVER>'")
                + " (then rerun), or drop "
                "them with "
                f"'git -C {tree} reset --hard {want[:12]}', or set CPUHP_KUNIT_DIRTY=1 "
                'to test them')
    changed = git(tree, 'status', '--porcelain', '--untracked-files=no').stdout.split('\n')
    changed = [ln[3:] for ln in changed if ln.strip()]
    if not changed:
        return
    if os.environ.get('CPUHP_KUNIT_DIRTY') == '1':
        say.log(f'testing local changes in {tree}: {" ".join(changed)}')
        return
    raise say.PrepareError(f'the cached tree {tree} has local changes in '
                           f'{" ".join(changed[:5])}: '
                           f"run 'git -C {tree} checkout -- .' to drop them, or set "
                           'CPUHP_KUNIT_DIRTY=1 to test them')


def read_manifest(kunit: Path) -> Dict[str, str]:
    """kunit/MANIFEST: '<file in kunit/> <path in the kernel tree>' per line.

    Returns tree path -> file: one file may go to several places (the
    compat header, next to each suite that includes it).
    """
    manifest = kunit / 'MANIFEST'
    entries: Dict[str, str] = {}
    if not manifest.is_file():
        return entries
    for n, line in enumerate(manifest.read_text().splitlines(), 1):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or parts[1].startswith('/') or '..' in parts[1].split('/'):
            raise say.PrepareError(f'kunit/MANIFEST:{n}: expected "<file> <relative tree path>"')
        if not (kunit / parts[0]).is_file():
            raise say.PrepareError(f'kunit/MANIFEST:{n}: kunit/{parts[0]} does not exist')
        if parts[1] in entries:
            raise say.PrepareError(f'kunit/MANIFEST:{n}: {parts[1]} is written twice')
        entries[parts[1]] = parts[0]
    return entries


# kunit/ sources hold two forms of a suite: what the harness runs (cases
# that need CONFIG_CPU_HOTPLUG_STATE_CONTROL, warn on purpose, or drive a
# real suspend; its log checks' markers) in `#ifdef HARNESS_MACRO` blocks,
# and what the posted series carries (their `#else`, or outside them).
# A `#ifdef PART_MACRO<name>` block is a part of the posted suite that a
# later patch of the series adds (make series: "file+name"). No form keeps
# these blocks' directives: install_kunit() takes the harness's form, make
# series the posted one (harness_view()).
HARNESS_MACRO = 'CPUHP_KUNIT_HARNESS'
PART_MACRO = 'CPUHP_KUNIT_PART_'
_IF = re.compile(r'#\s*if')
_HARNESS_IF = re.compile(rf'#\s*if(n?)def\s+{HARNESS_MACRO}\s*$')
_PART_IF = re.compile(rf'#\s*ifdef\s+{PART_MACRO}(\w+)\s*$')


@dataclasses.dataclass
class _Block:
    ours: bool              # a harness or part block: its directives go
    kind: str
    outer: bool             # the lines around it are kept
    cond: bool              # its first branch is taken
    keep: bool              # the current branch's lines are kept


def harness_view(text: str, harness: bool, parts: Optional[Sequence[str]] = None) -> str:
    """@text with its harness and part blocks resolved.

    @harness: as if HARNESS_MACRO were defined; @parts: the parts of the
    posted suite to keep (None: all). Other preprocessor blocks are kept
    as they are, and may hold ours or be held by them.
    """
    out: List[str] = []
    stack: List[_Block] = []
    for n, line in enumerate(text.split('\n'), 1):
        keep = stack[-1].keep if stack else True
        d = line.strip()
        mh, mp = _HARNESS_IF.match(d), _PART_IF.match(d)
        if mh or mp:
            if any(b.ours and b.kind == ('harness' if mh else 'part') for b in stack):
                raise say.PrepareError(f'line {n}: {d} inside a block of its kind')
            if mh:
                cond = harness != bool(mh.group(1))
            else:
                assert mp is not None
                cond = parts is None or mp.group(1) in parts
            stack.append(_Block(True, 'harness' if mh else 'part', keep, cond, keep and cond))
            continue
        if _IF.match(d) and not d.startswith('#include'):
            stack.append(_Block(False, 'other', keep, True, keep))
        elif d.startswith('#el') and stack:
            top = stack[-1]
            if top.ours and (d.startswith('#elif') or top.kind == 'part'):
                raise say.PrepareError(f'line {n}: {d.split()[0]} in a {top.kind} block')
            if top.ours:
                top.keep = top.outer and not top.cond
                continue
        elif d.startswith('#endif') and stack:
            top = stack.pop()
            if top.ours:
                continue
            keep = top.outer
        if keep:
            out.append(line)
    if stack:
        raise say.PrepareError(f'a #if without #endif ({len(stack)} open at the end)')
    return '\n'.join(out)


def install_kunit(tree: Path, kunit: Path) -> None:
    """Copy kunit/ sources into the tree, as the harness runs them
    (harness_view()), touching only files whose content changed."""
    entries = read_manifest(kunit)
    previous = (read_stamp(tree, INSTALLED_STAMP) or '').split()
    for stale in set(previous) - set(entries):
        (tree / stale).unlink(missing_ok=True)
    for rel, name in entries.items():
        source = (kunit / name).read_text()
        if HARNESS_MACRO in source or PART_MACRO in source:
            try:
                source = harness_view(source, True)
            except say.PrepareError as e:
                raise say.PrepareError(f'kunit/{name}: {e}') from None
        data = source.encode()
        dest = tree / rel
        if dest.is_file() and dest.read_bytes() == data:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    stamp.write_text(stamp_path(tree, INSTALLED_STAMP), '\n'.join(sorted(entries)))


def fixes_clone(base: Path, package: str) -> Path:
    """The tree FIXES=1 runs use: a clone of @base, kept beside it.

    A fix may touch a header half the kernel includes (6.12's 0013 changes
    arch/x86/include/asm/topology.h): in one shared tree, every switch
    between the kernel as shipped and the fixed one rewrote it, and the
    next build of either was a whole kernel. Two trees, each with its own
    build directories, keep both builds incremental.
    """
    path = base.with_name(base.name + '-fixes')
    if read_stamp(path, PACKAGE_STAMP) == package:
        return path
    tmp = path.with_name(path.name + '.partial')
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(path, ignore_errors=True)
    say.log(f'cloning {base.name} to {path.name} (the tree of FIXES=1 runs)')
    res = subprocess.run(['git', 'clone', '-q', '--no-checkout', str(base), str(tmp)],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise say.PrepareError(f'git clone {base} {tmp} failed: '
                               f'{(res.stderr or res.stdout).strip()}')
    git(tmp, 'fetch', '-q', str(base), 'refs/tags/baseline:refs/tags/baseline')
    git(tmp, 'checkout', '-q', '-B', 'master', 'baseline')
    tmp.rename(path)
    stamp.write_text(stamp_path(path, PACKAGE_STAMP), package)
    return path


def prepare(kver: str, repo: Path, fixes: bool = False) -> Tree:
    """Everything a run needs: packages, extracted tree, series, kunit files.

    With @fixes, the tree is fixes_clone()'s and its build directories are
    <version>-fixes's (Tree.key).
    """
    packages.ensure_packages([packages.source_package(kver), *BUILD_PACKAGES])
    package = packages.installed_version(packages.source_package(kver))
    assert package is not None
    version = packages.upstream_version(package)
    path = cache.cache_root() / f'linux-{version}'
    if read_stamp(path, PACKAGE_STAMP) != package:
        extract(kver, package, path)
    key = ''
    if fixes:
        path, key = fixes_clone(path, package), f'{version}-fixes'
    apply_series(path, version, series_dir(repo, kver), fixes)
    check_clean(path)
    install_kunit(path, repo / 'kunit')
    return Tree(kver=kver, package=package, version=version, path=path, key=key)


def tree_path(kver: str) -> Path:
    """Where the tree of the installed linux-source-<kver> lives in the cache."""
    package = packages.installed_version(packages.source_package(kver))
    if package is None:
        raise say.PrepareError(f'{packages.source_package(kver)} is not installed: '
                               'run make prepare')
    return cache.cache_root() / f'linux-{packages.upstream_version(package)}'


def main(argv: Sequence[str]) -> int:
    import argparse
    ap = argparse.ArgumentParser(description='Prepare the cached kernel tree.')
    ap.add_argument('--kver', default='6.12')
    ap.add_argument('--repo', type=Path, default=REPO)
    ap.add_argument('--path', action='store_true',
                    help='only print where the tree is; check and change nothing')
    args = ap.parse_args(argv)
    try:
        if args.path:
            print(tree_path(args.kver))
            return 0
        with cache.cache_lock(f'make prepare KVER={args.kver}'):
            tree = prepare(args.kver, args.repo)
    except say.PrepareError as e:
        print(f'cpuhp-kunit: error: {e}', file=sys.stderr)
        return 1
    print(tree.path)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
