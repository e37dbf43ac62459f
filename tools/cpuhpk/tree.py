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
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

# Debian packages the build and the QEMU run need, besides linux-source-<KVER>.
BUILD_PACKAGES = (
    'bc', 'bison', 'flex', 'gcc', 'git', 'libelf-dev', 'libssl-dev', 'make',
    'perl', 'python3', 'qemu-system-x86', 'xz-utils',
)

# Stamps kept inside the cached tree's .git, so wiping the tree wipes them too.
PACKAGE_STAMP = 'cpuhp-kunit-package'
SERIES_STAMP = 'cpuhp-kunit-series'
INSTALLED_STAMP = 'cpuhp-kunit-installed'
GIT_IDENTITY = ('-c', 'user.name=cpuhp-kunit', '-c', 'user.email=cpuhp-kunit@localhost')


class PrepareError(Exception):
    """A step failed; the message is the one line to show the user."""


@dataclasses.dataclass(frozen=True)
class Tree:
    """A prepared kernel tree."""
    kver: str           # the series we asked for, e.g. '6.12'
    package: str        # Debian package version, e.g. '6.12.118-1~deb12u1'
    version: str        # upstream version, e.g. '6.12.118'
    path: Path          # the tree itself

    @property
    def kunit_py(self) -> Path:
        return self.path / 'tools' / 'testing' / 'kunit' / 'kunit.py'


def cache_root() -> Path:
    """The cache directory: $CPUHP_KUNIT_CACHE or ~/.cache/cpuhp-kunit."""
    env = os.environ.get('CPUHP_KUNIT_CACHE')
    if env:
        return Path(env).expanduser().resolve()
    return Path.home() / '.cache' / 'cpuhp-kunit'


def log(msg: str) -> None:
    print(f'cpuhp-kunit: {msg}', flush=True)


def source_package(kver: str) -> str:
    return f'linux-source-{kver}'


def upstream_version(package_version: str) -> str:
    """'6.12.118-1~deb12u1' -> '6.12.118' (the Debian revision dropped)."""
    upstream = package_version.split(':', 1)[-1].rsplit('-', 1)[0]
    if not upstream or not upstream[0].isdigit():
        raise PrepareError(f'cannot read an upstream version from {package_version!r}')
    return upstream


def installed_version(package: str) -> Optional[str]:
    """The installed version of a Debian package, or None."""
    res = subprocess.run(['dpkg-query', '-W', '-f=${db:Status-Status} ${Version}', package],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        return None
    status, _, version = res.stdout.partition(' ')
    return version if status == 'installed' else None


def missing_packages(packages: Sequence[str]) -> List[str]:
    return [p for p in packages if installed_version(p) is None]


def ensure_packages(packages: Sequence[str]) -> None:
    """Install what is missing when root; otherwise fail naming it."""
    missing = missing_packages(packages)
    if not missing:
        return
    cmd = 'apt-get install -y ' + ' '.join(missing)
    if os.geteuid() != 0:
        raise PrepareError(f'missing packages: {" ".join(missing)}; this is not root: '
                           f"run '{cmd}' as root")
    log(f'installing {" ".join(missing)}')
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    for args in (['apt-get', 'update', '-qq'],
                 ['apt-get', 'install', '-y', '-q', '--no-install-recommends', *missing]):
        res = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            tail = (res.stderr or res.stdout).strip().splitlines()[-1:]
            raise PrepareError(f"'{' '.join(args)}' failed: {' '.join(tail)}")
    still = missing_packages(packages)
    if still:
        raise PrepareError(f'packages still missing after apt-get: {" ".join(still)}')


def git(tree: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(['git', *GIT_IDENTITY, '-C', str(tree), *args],
                         capture_output=True, text=True, check=False)
    if check and res.returncode != 0:
        raise PrepareError(f"git {' '.join(args)} in {tree} failed: "
                           f'{(res.stderr or res.stdout).strip()}')
    return res


def stamp(tree: Path, name: str) -> Path:
    return tree / '.git' / name


def read_stamp(tree: Path, name: str) -> Optional[str]:
    try:
        return stamp(tree, name).read_text()
    except FileNotFoundError:
        return None


def extract(kver: str, package: str, dest: Path) -> None:
    """Extract /usr/src/linux-source-<kver>.tar.xz to dest and commit it as baseline."""
    tarball = Path('/usr/src') / f'linux-source-{kver}.tar.xz'
    if not tarball.is_file():
        raise PrepareError(f'{tarball} not found although {source_package(kver)} is installed')
    tmp = dest.with_name(dest.name + '.partial')
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    log(f'extracting {tarball} to {dest}')
    subprocess.run(['tar', '-xf', str(tarball), '-C', str(tmp), '--strip-components=1'],
                   check=True)
    git(tmp, 'init', '-q')
    git(tmp, 'config', 'gc.auto', '0')
    # -f: the tarball is the baseline, whatever its .gitignore files say.
    git(tmp, 'add', '-A', '-f')
    git(tmp, 'commit', '-q', '-m', f'baseline: {source_package(kver)} {package}')
    git(tmp, 'tag', 'baseline')
    stamp(tmp, PACKAGE_STAMP).write_text(package)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)


def series_files(src: Path) -> List[Path]:
    """The patches named by src/series, in order."""
    series = src / 'series'
    if not series.is_file():
        return []
    names = [ln.strip() for ln in series.read_text().splitlines()]
    patches = [src / n for n in names if n and not n.startswith('#')]
    for p in patches:
        if not p.is_file():
            raise PrepareError(f'src/series names {p.name}, which does not exist')
    return patches


def fingerprint(paths: Sequence[Path], extra: str = '') -> str:
    h = hashlib.sha256(extra.encode())
    for p in paths:
        h.update(p.name.encode() + b'\0' + p.read_bytes() + b'\0')
    return h.hexdigest()


def apply_series(tree: Path, version: str, src: Path) -> None:
    """Reapply src/ on the baseline when the series changed."""
    patches = series_files(src)
    fp = fingerprint([src / 'series', *patches] if patches else [])
    if read_stamp(tree, SERIES_STAMP) == fp:
        return
    stamp(tree, SERIES_STAMP).unlink(missing_ok=True)
    git(tree, 'am', '--abort', check=False)
    git(tree, 'reset', '-q', '--hard', 'baseline')
    for p in patches:
        res = git(tree, 'am', '-q', str(p.resolve()), check=False)
        if res.returncode != 0:
            git(tree, 'am', '--abort', check=False)
            git(tree, 'reset', '-q', '--hard', 'baseline')
            reason = ' '.join((res.stderr or res.stdout).strip().splitlines()[:3])
            raise PrepareError(f'patch {p.name} does not apply to linux {version}: {reason}')
    log(f'applied {len(patches)} patch(es) from src/series on linux {version}')
    stamp(tree, SERIES_STAMP).write_text(fp)


def check_clean(tree: Path) -> None:
    """Refuse a tree whose tracked files differ from the series, unless asked to.

    A break left in the cache would otherwise change every later run's
    verdict without a trace; CPUHP_KUNIT_DIRTY=1 is for testing such a break
    (mutation testing sets it for the mutant's run).
    """
    changed = git(tree, 'status', '--porcelain', '--untracked-files=no').stdout.split('\n')
    changed = [ln[3:] for ln in changed if ln.strip()]
    if not changed:
        return
    if os.environ.get('CPUHP_KUNIT_DIRTY') == '1':
        log(f'testing local changes in {tree}: {" ".join(changed)}')
        return
    raise PrepareError(f'the cached tree {tree} has local changes in {" ".join(changed[:5])}: '
                       f"run 'git -C {tree} checkout -- .' to drop them, or set "
                       'CPUHP_KUNIT_DIRTY=1 to test them')


def read_manifest(kunit: Path) -> Dict[str, str]:
    """kunit/MANIFEST: '<file in kunit/> <path in the kernel tree>' per line."""
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
            raise PrepareError(f'kunit/MANIFEST:{n}: expected "<file> <relative tree path>"')
        if not (kunit / parts[0]).is_file():
            raise PrepareError(f'kunit/MANIFEST:{n}: kunit/{parts[0]} does not exist')
        entries[parts[0]] = parts[1]
    return entries


def install_kunit(tree: Path, kunit: Path) -> None:
    """Copy kunit/ sources into the tree, touching only files whose content changed."""
    entries = read_manifest(kunit)
    previous = (read_stamp(tree, INSTALLED_STAMP) or '').split()
    for stale in set(previous) - set(entries.values()):
        (tree / stale).unlink(missing_ok=True)
    for name, rel in entries.items():
        data = (kunit / name).read_bytes()
        dest = tree / rel
        if dest.is_file() and dest.read_bytes() == data:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    stamp(tree, INSTALLED_STAMP).write_text('\n'.join(sorted(entries.values())))


def prepare(kver: str, repo: Path) -> Tree:
    """Everything a run needs: packages, extracted tree, series, kunit files."""
    ensure_packages([source_package(kver), *BUILD_PACKAGES])
    package = installed_version(source_package(kver))
    assert package is not None
    version = upstream_version(package)
    path = cache_root() / f'linux-{version}'
    if read_stamp(path, PACKAGE_STAMP) != package:
        extract(kver, package, path)
    apply_series(path, version, repo / 'src')
    check_clean(path)
    install_kunit(path, repo / 'kunit')
    return Tree(kver=kver, package=package, version=version, path=path)


def main(argv: Sequence[str]) -> int:
    import argparse
    ap = argparse.ArgumentParser(description='Prepare the cached kernel tree.')
    ap.add_argument('--kver', default='6.12')
    ap.add_argument('--repo', type=Path, default=Path(__file__).resolve().parents[2])
    args = ap.parse_args(argv)
    try:
        tree = prepare(args.kver, args.repo)
    except PrepareError as e:
        print(f'cpuhp-kunit: error: {e}', file=sys.stderr)
        return 1
    print(tree.path)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
