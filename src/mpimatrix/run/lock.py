"""Exclusive locks around performance sessions.

- One `mpimatrix run` at a time per results store: two sessions writing one
  results directory would share stage directories.
- One performance session at a time per machine (MPIMATRIX_MACHINE_LOCK, default
  /tmp/mpimatrix-performance.lock; empty: no machine lock): sessions of two
  checkouts on the same cores measure each other. Measured on a 2-core VM: a
  session's values slowed by 1.2-3.7x when other sessions used 64-303 CPU-seconds
  during it.

A second run waits (or, with --no-wait, refuses), saying which run holds the lock.
A lock that cannot be written for want of space (its owner line) stops the run with
DiskFull (exit 2), naming the file and the variable that moves it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from .full_disk import guard

MACHINE_LOCK_ENV = "MPIMATRIX_MACHINE_LOCK"
DEFAULT_MACHINE_LOCK = "/tmp/mpimatrix-performance.lock"


class StoreBusy(Exception):
    pass


@contextlib.contextmanager
def exclusive(path: Path, what: str, wait: bool = True, variable: str = "") -> Iterator[None]:
    """`variable`: what moves the lock, when it is not in the results store."""
    where = f"the lock {path}" if variable else ""
    with guard(path, where, variable):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another run"
            if not wait:
                raise StoreBusy(f"{what} is in use by {holder} (lock {path}); wait for it, "
                                "or run elsewhere") from None
            print(f"mpimatrix: {what} is in use by {holder}; waiting for it to end",
                  file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        with guard(path, where, variable):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"mpimatrix run pid {os.getpid()} ({os.getcwd()}) since "
                      f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def store_lock(results: Path, wait: bool = True):
    """The results store to one writer (a run, or `mpimatrix prune`)."""
    return exclusive(results / ".mpimatrix-run.lock", f"the results store {results}", wait)


@contextlib.contextmanager
def session_locks(results: Path, wait: bool = True) -> Iterator[None]:
    machine = os.environ.get(MACHINE_LOCK_ENV, DEFAULT_MACHINE_LOCK)
    with contextlib.ExitStack() as stack:
        stack.enter_context(store_lock(results, wait))
        if machine:
            stack.enter_context(exclusive(Path(machine), "this machine's cores", wait,
                                          MACHINE_LOCK_ENV))
        yield
