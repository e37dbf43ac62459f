"""Run a job of make matrix unless nothing it reads changed since it last passed.

    jobstamp.py [--force 1] -- make coverage KVER=6.12 CONFIG=default

A job of the matrix reads the repository (kunit/, src/, kconfigs/,
tools/, mutants/, the Makefile), Debian's packages (the kernel sources and
configurations, the compiler, QEMU, lcov, the initramfs's binaries) and
its own arguments. When it passes, out/.jobs/<job>.json records a digest
of all of them; the next make matrix with the same digest prints that the
job is up to date and when it passed (its outputs are where that run left
them), instead of running it again (its time: Documentation/performance.md). A red or
interrupted job leaves no stamp. FORCE=1 runs every job again, and so
does a cached tree edited on purpose (CPUHP_KUNIT_DIRTY=1): an experiment
is never up to date, and make -n matrix neither uses nor writes stamps.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from cpuhpk import stamp
from cpuhpk.paths import REPO

INPUTS = ('kunit', 'src', 'kconfigs', 'tools', 'mutants', 'Makefile')
PACKAGES = ('gcc-12', 'qemu-system-x86', 'gcc-12-aarch64-linux-gnu', 'qemu-system-arm',
            'linux-source-6.12', 'linux-source-6.1',
            'linux-config-6.12', 'linux-config-6.1', 'lcov', 'busybox-static',
            'bash-static', 'python3.11')


def stamp_path(job: Sequence[str]) -> Path:
    """out/.jobs/<the job's words joined>.json"""
    name = re.sub(r'[^A-Za-z0-9.+=-]+', '_', ' '.join(job[1:] if job[:1] == ['make'] else job))
    return REPO / 'out' / '.jobs' / f'{name}.json'


def repo_files(repo: Path) -> List[Path]:
    """The files of INPUTS, tracked or not (ignored ones left out); outside
    a git checkout (an unpacked tarball) every file under them but caches."""
    try:
        res = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard', '-z', '--',
                              *INPUTS], cwd=repo, capture_output=True, check=False)
    except OSError:
        res = None
    if res is not None and res.returncode == 0:
        return sorted(repo / p for p in res.stdout.decode().split('\0') if p)
    found = [f for name in INPUTS for f in ([repo / name] if (repo / name).is_file()
                                            else (repo / name).rglob('*'))
             if f.is_file() and not any(part in ('__pycache__', '.mypy_cache')
                                        for part in f.parts)]
    return sorted(found)


def packages() -> str:
    """Installed versions of PACKAGES, one a line ('-' for a missing one)."""
    res = subprocess.run(['dpkg-query', '-W', '-f', '${Package} ${Version}\\n', *PACKAGES],
                         capture_output=True, text=True, check=False)
    have = dict(line.split(' ', 1) for line in res.stdout.splitlines() if ' ' in line)
    return ''.join(f'{p} {have.get(p) or "-"}\n' for p in PACKAGES)


def digest(job: Sequence[str], pkgs: str, repo: Optional[Path] = None) -> str:
    """Of @job's words, the packages @pkgs, CPUHP_KUNIT_* and the files of INPUTS
    (a file git knows but the checkout lacks: its name)."""
    repo = repo or REPO
    env = {k: v for k, v in os.environ.items() if k.startswith('CPUHP_KUNIT_')}
    files = [[str(f.relative_to(repo)),
              hashlib.sha256(f.read_bytes()).hexdigest() if f.is_file() else None]
             for f in repo_files(repo)]
    return stamp.digest({'job': list(job), 'packages': pkgs, 'env': env, 'files': files})


def dry_run(makeflags: str) -> bool:
    """make -n (--just-print, --dry-run, --recon) above us: the job runs nothing."""
    words = makeflags.split()
    if words and not words[0].startswith('-') and 'n' in words[0]:
        return True   # GNU make puts the one-letter flags first, without a dash
    return any(w in ('-n', '--just-print', '--dry-run', '--recon') for w in words)


def up_to_date(path: Path, key: str) -> Optional[Dict[str, Any]]:
    """The stamp at @path when it holds the digest @key."""
    data = stamp.read(path)
    return data if data is not None and data.get('digest') == key else None


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--force', default='0', help='1: run the job even when up to date')
    ap.add_argument('job', nargs='+', help='the job: a command and its arguments')
    args = ap.parse_args(argv)
    job: List[str] = args.job
    path = stamp_path(job)
    # Neither an experiment nor a dry run is a pass to remember.
    dry = dry_run(os.environ.get('MAKEFLAGS', ''))
    experiment = bool(os.environ.get('CPUHP_KUNIT_DIRTY')) or dry
    pkgs = packages()
    key = digest(job, pkgs=pkgs)
    words = ' '.join(job)
    if args.force != '1' and not experiment:
        done = up_to_date(path, key)
        if done is not None:
            print(f'cpuhp-kunit: {words}: up to date: passed {done.get("finished", "?")} in '
                  f'{done.get("seconds", "?")} s, and nothing it reads changed since '
                  f'({", ".join(INPUTS)}, packages); FORCE=1 runs it again')
            return 0
    # A real run overwrites the outputs the stamp speaks for; a dry run
    # (make -n test, which tools-test runs) leaves them and the stamp be.
    if not dry:
        stamp.forget(path)
    started = time.monotonic()
    rc = subprocess.run(job, check=False).returncode
    # A job may install packages (the first run of a machine): the stamp
    # holds what is installed after it. An input edited while it ran: no stamp.
    if rc == 0 and not experiment and digest(job, pkgs=pkgs) == key:
        key = digest(job, packages())
        path.parent.mkdir(parents=True, exist_ok=True)
        finished = datetime.datetime.now().astimezone().isoformat(timespec='seconds')
        stamp.write(path, {'job': job, 'digest': key, 'finished': finished,
                           'seconds': round(time.monotonic() - started)})
    return rc


if __name__ == '__main__':
    sys.exit(main())
