"""Child processes in groups of their own, and the signals that end them.

A run starts kunit.py (make, QEMU), make mutate starts runs, make bisect
starts git bisect run: each in a process group of its own, so that all of
it ends at once. SIGTERM and SIGHUP become Interrupted (raise_on_signals()),
Ctrl-C is KeyboardInterrupt: either unwinds to the code that ends the
group (end_group()), with further signals ignored while it waits
(signals_deferred()).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

# Seconds kunit.py, make and QEMU get to end after SIGTERM before SIGKILL.
GRACE = 10


class Interrupted(Exception):
    """SIGTERM or SIGHUP (or SIGINT where asked): stopped from outside."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum: int, frame: Optional[FrameType]) -> None:
    raise Interrupted(signum)


def raise_on_signals(signals: Sequence[int] = (signal.SIGTERM, signal.SIGHUP)) -> None:
    """From now on @signals raise Interrupted in the main thread."""
    for sig in signals:
        signal.signal(sig, _raise_interrupted)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Ignore Ctrl-C, SIGTERM and SIGHUP while children are being ended.

    A second Ctrl-C must not cut short the wait for them to end: whatever
    comes next (reversing a mutant, resetting a bisection, judging) needs
    them gone.
    """
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, signal.SIG_IGN) for s in sigs}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def end_group(proc: 'subprocess.Popen[Any]', grace: float = GRACE) -> None:
    """SIGTERM to the process group @proc leads, SIGKILL to what is left of it
    after @grace seconds; returns once all of it ended."""
    deadline = time.monotonic() + grace
    sig = int(signal.SIGTERM)
    while True:
        proc.poll()     # reap the leader: a zombie would keep the group alive
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        sig = int(signal.SIGKILL) if time.monotonic() > deadline else 0
        time.sleep(0.1)


def wait_group(proc: 'subprocess.Popen[Any]', grace: float = GRACE) -> int:
    """@proc's exit status; on any exception (Ctrl-C, Interrupted) its group
    is ended first (end_group()), with signals deferred, then it goes on."""
    try:
        return proc.wait()
    except BaseException:
        with signals_deferred():
            end_group(proc, grace)
        raise


def run_logged(cmd: List[str], cwd: Path, log_path: Path, seconds: float,
               echo: Optional[Callable[[str], bool]] = None
               ) -> Tuple[Optional[int], Optional[float]]:
    """Run @cmd in a group of its own, teeing its output: (exit status, or None
    and the seconds after which its group was ended for outliving @seconds).
    Every line goes to @log_path; to the terminal those @echo takes
    (default: every line). A signal to this process (Ctrl-C, SIGTERM) ends
    the group too before it goes on."""
    started = time.monotonic()
    with open(log_path, 'w') as log, subprocess.Popen(
            cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            errors='replace', start_new_session=True) as proc:
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            end_group(proc)

        timer = threading.Timer(seconds, kill)
        timer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if echo is None or echo(line):
                    sys.stdout.write(line)
                log.write(line)
            rc = proc.wait()
        except BaseException:
            with signals_deferred():
                end_group(proc)
            raise
        finally:
            timer.cancel()
        if killed.is_set():
            return None, time.monotonic() - started
        return rc, None
