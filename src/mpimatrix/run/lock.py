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

The machine lock is shared by every account that runs sessions on the machine: the
first creates it (O_EXCL) and makes it readable and writable by all (0666, whatever
its umask); the others open it without O_CREAT (Linux's fs.protected_regular refuses
an O_CREAT open of another user's file in a sticky world-writable directory such as
/tmp, whatever its mode). flock() works on a read-only descriptor, so a lock another
account created with mode 644 (before this rule) is still taken; its owner line, only
informational, is then not rewritten (it keeps the line of the last run that could
write it), and its owner makes it 0666 the next time it takes it. A lock that can be
neither opened nor created stops the run with LockError (exit 2), one line naming the
file and the variable that moves it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from ..results.sessions import SessionError
from .full_disk import guard

MACHINE_LOCK_ENV = "MPIMATRIX_MACHINE_LOCK"
DEFAULT_MACHINE_LOCK = "/tmp/mpimatrix-performance.lock"


#: What a busy store's or machine's message says (`mpimatrix nightly` tells a night that
#: found the last one running by it).
IN_USE = "is in use by"


class StoreBusy(Exception):
    pass


class LockError(SessionError):
    """A lock file this account can neither open nor create (the CLI says it in one line
    and exits 2, as for any session that cannot run)."""


#: The mode of a lock every account shares (the machine lock).
SHARED_MODE = 0o666


def _open(path: Path, shared: bool) -> tuple[int, bool]:
    """A descriptor of the lock file and whether it is writable. An existing file is
    opened without O_CREAT (read-only if this account may not write it); a missing one
    is created with O_EXCL, and a shared one then made readable and writable by all."""
    for _ in range(10):  # a lock removed between the tries: create it again
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            pass
        except OSError as err:
            if err.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            try:  # another account's lock it may only read (or a read-only file system)
                return os.open(path, os.O_RDONLY), False
            except FileNotFoundError:
                continue
        else:
            if shared:
                _share(fd)
            return fd, True
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, SHARED_MODE)
        except FileExistsError:
            continue  # another account created it meanwhile: open theirs
        if shared:
            _share(fd)
        return fd, True
    raise FileNotFoundError(errno.ENOENT, "removed while being opened", str(path))


def _share(fd: int) -> None:
    """Mode 0666 on a lock this account owns (one it made, or one an older mpimatrix
    made with the umask's 644); another account's lock is left as it is."""
    st = os.fstat(fd)
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid == os.geteuid() and (mode & SHARED_MODE) != SHARED_MODE:
        with contextlib.suppress(OSError):
            os.fchmod(fd, mode | SHARED_MODE)


def _unusable(path: Path, err: OSError, variable: str) -> LockError:
    why = err.strerror or str(err)
    if os.path.lexists(path):
        fix = f"its owner can make it readable by every account (chmod a+r {path})"
    else:
        fix = f"this account cannot create it in {path.parent}"
    if variable:
        fix += (f", or set {variable} to a file every account that runs sessions on this "
                "machine can open (empty: no machine lock)")
    else:
        fix += ", or set MPIMATRIX_RESULTS to a results store this account owns"
    return LockError(f"cannot open or create the lock {path} ({why}): {fix}")


@contextlib.contextmanager
def exclusive(path: Path, what: str, wait: bool = True, variable: str = "",
              shared: bool = False) -> Iterator[None]:
    """`variable`: what moves the lock, when it is not in the results store. `shared`:
    a lock of several accounts (the machine lock), made 0666 by whoever creates it."""
    where = f"the lock {path}" if variable else ""
    try:
        with guard(path, where, variable):
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, writable = _open(path, shared)
    except OSError as err:  # not a full disk (guard made that DiskFull)
        raise _unusable(path, err, variable) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another run"
            if not wait:
                raise StoreBusy(f"{what} {IN_USE} {holder} (lock {path}); wait for it, "
                                "or run elsewhere") from None
            print(f"mpimatrix: {what} {IN_USE} {holder}; waiting for it to end",
                  file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        if writable:
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
                                          MACHINE_LOCK_ENV, shared=True))
        yield
