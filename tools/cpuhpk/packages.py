"""Debian packages: the installed versions, apt's candidates, installing what is missing."""

from __future__ import annotations

import os
import re
import subprocess
from typing import List, Optional, Sequence

from cpuhpk import say


def source_package(kver: str) -> str:
    return f'linux-source-{kver}'


def upstream_version(package_version: str) -> str:
    """'6.12.118-1~deb12u1' -> '6.12.118' (the Debian revision dropped)."""
    upstream = package_version.split(':', 1)[-1].rsplit('-', 1)[0]
    if not upstream or not upstream[0].isdigit():
        raise say.PrepareError(f'cannot read an upstream version from {package_version!r}')
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


def candidate(package: str) -> Optional[str]:
    """apt's candidate version of @package (e.g. 'busybox-static:arm64'), or None."""
    res = subprocess.run(['apt-cache', 'policy', package], capture_output=True, text=True,
                         check=False)
    m = re.search(r'Candidate: (\S+)', res.stdout)
    return m.group(1) if m is not None and m.group(1) != '(none)' else None


def known_to_apt(package: str) -> bool:
    """Whether apt has a candidate for @package (installed or installable)."""
    return candidate(package) is not None


def similar_sources() -> List[str]:
    res = subprocess.run(['apt-cache', 'pkgnames', 'linux-source-'], capture_output=True,
                         text=True, check=False)
    return sorted(n for n in res.stdout.split() if re.fullmatch(r'linux-source-[\d.]+', n))


def ensure_packages(packages: Sequence[str]) -> None:
    """Install what is missing when root; otherwise fail naming it."""
    missing = missing_packages(packages)
    if not missing:
        return
    unknown = [p for p in missing if p.startswith('linux-source-') and not known_to_apt(p)]
    if unknown and os.geteuid() != 0:
        known = ', '.join(similar_sources()) or 'none (run apt-get update as root?)'
        raise say.PrepareError(f'{unknown[0]} is unknown to apt: no such kernel series '
                               f'(KVER={unknown[0].removeprefix("linux-source-")}); apt knows: '
                               f'{known}')
    cmd = 'apt-get install -y ' + ' '.join(missing)
    if os.geteuid() != 0:
        raise say.PrepareError(f'missing packages: {" ".join(missing)}; this is not root: '
                               f"run '{cmd}' as root")
    say.log(f'installing {" ".join(missing)}')
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    for args in (['apt-get', 'update', '-qq'],
                 ['apt-get', 'install', '-y', '-q', '--no-install-recommends', *missing]):
        res = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            tail = (res.stderr or res.stdout).strip().splitlines()[-1:]
            if args[1] == 'install':
                unknown = [p for p in missing if p.startswith('linux-source-')
                           and not known_to_apt(p)]
                if unknown:
                    known = ', '.join(similar_sources()) or 'none'
                    raise say.PrepareError(f'{unknown[0]} is unknown to apt: no such kernel '
                                           f'series; apt knows: {known}')
            raise say.PrepareError(f"'{' '.join(args)}' failed: {' '.join(tail)}")
    still = missing_packages(packages)
    if still:
        raise say.PrepareError(f'packages still missing after apt-get: {" ".join(still)}')

