"""The cache the kernel trees and builds live in, and its lock.

$CPUHP_KUNIT_CACHE, default ~/.cache/cpuhp-kunit: the trees tree.py
prepares, their build directories, and the lock (flock on <cache>/lock)
a run holds while it prepares, builds and boots.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from pathlib import Path
from typing import Callable, Iterator, Optional, Tuple

from cpuhpk import say


class LockBusy(say.PrepareError):
    """The cache is in use by another run and CPUHP_KUNIT_NOWAIT=1."""


# Environment variable by which a run hands its lock on the cache to the runs
# it starts itself (make mutate -> run.py): the number of an inherited file
# descriptor of the lock file, whose flock is then already held.
LOCK_FD_ENV = 'CPUHP_KUNIT_LOCK_FD'
_lock_depth = 0


def cache_root() -> Path:
    """The cache directory: $CPUHP_KUNIT_CACHE or ~/.cache/cpuhp-kunit."""
    env = os.environ.get('CPUHP_KUNIT_CACHE')
    if env:
        return Path(env).expanduser().resolve()
    return Path.home() / '.cache' / 'cpuhp-kunit'


def _inherited_lock(path: Path) -> Optional[int]:
    """The lock file descriptor handed down by a parent run, if it is one."""
    value = os.environ.get(LOCK_FD_ENV, '')
    if not value.isdigit():
        return None
    try:
        held, want = os.fstat(int(value)), os.stat(path)
    except OSError:
        return None
    return int(value) if (held.st_dev, held.st_ino) == (want.st_dev, want.st_ino) else None


@contextlib.contextmanager
def cache_lock(what: str) -> Iterator[int]:
    """Hold the cache's lock (flock on <cache>/lock) for prepare, build and boot.

    Two runs sharing a cache would apply the series over each other or build
    in the same directory. A second run waits, saying for whom, or with
    CPUHP_KUNIT_NOWAIT=1 fails at once. Re-entrant within a process (make
    coverage runs make run's code); handed to child runs through an inherited
    descriptor (LOCK_FD_ENV, see lock_fds()). Yields the descriptor.
    """
    global _lock_depth
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    path = root / 'lock'
    if _lock_depth:
        _lock_depth += 1
        try:
            yield int(os.environ[LOCK_FD_ENV])
        finally:
            _lock_depth -= 1
        return
    fd = _inherited_lock(path)
    inherited = fd is not None
    if fd is None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = path.read_text(errors='replace').strip() or 'another run'
            if os.environ.get('CPUHP_KUNIT_NOWAIT') == '1':
                raise LockBusy(f'the cache {root} is in use ({holder}); not waiting '
                               '(CPUHP_KUNIT_NOWAIT=1)') from None
            say.log(f'waiting for the cache {root}: in use ({holder})')
            fcntl.flock(fd, fcntl.LOCK_EX)
        if not inherited:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f'pid {os.getpid()}: {what}\n'.encode(), 0)
        os.set_inheritable(fd, True)
        previous = os.environ.get(LOCK_FD_ENV)
        os.environ[LOCK_FD_ENV] = str(fd)
        _lock_depth = 1
        try:
            yield fd
        finally:
            _lock_depth = 0
            if previous is None:
                os.environ.pop(LOCK_FD_ENV, None)
            else:
                os.environ[LOCK_FD_ENV] = previous
    finally:
        if not inherited:
            os.close(fd)


def locked(what: str, job: Callable[[], int]) -> int:
    """Exit status of @job run under the cache lock; 1 with one line on a PrepareError."""
    try:
        with cache_lock(what):
            return job()
    except say.PrepareError as e:
        print(f'cpuhp-kunit: error: {e}', file=sys.stderr)
        return 1


def lock_fds() -> Tuple[int, ...]:
    """Descriptors a child run must inherit to share this process's cache lock."""
    value = os.environ.get(LOCK_FD_ENV, '')
    return (int(value),) if _lock_depth and value.isdigit() else ()

