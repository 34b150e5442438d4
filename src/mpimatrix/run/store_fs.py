"""Is the results store on a file system SQLite can trust? ReFrame's results database
and the session index are SQLite files: SQLite relies on POSIX advisory locks, which
network and parallel file systems give unreliably or not at all (a store there can be
corrupted by two writers, or hang). The store is refused there, with the one setting
that moves it (`store:` in site_config/site.yaml, MPIMATRIX_STORE)."""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

#: File system types (as /proc/self/mountinfo names them) a store is refused on.
NETWORK_FS = frozenset({
    "nfs", "nfs4", "lustre", "gpfs", "cifs", "smb3", "smbfs", "beegfs", "ceph",
    "glusterfs", "fuse.glusterfs", "fuse.sshfs", "sshfs", "afs", "9p", "panfs", "pvfs2",
    "orangefs", "wekafs", "fuse.s3fs", "fuse.gcsfuse", "davfs", "fuse.davfs2",
})
MOVE_IT = ("put the store on a local disk: `store: /var/tmp/mpimatrix-$USER` in "
           "site_config/site.yaml (or MPIMATRIX_STORE); references, reports and stage "
           "may stay where they are")


class StoreFileSystemError(Exception):
    """The store's file system cannot hold it; the message names it and the fix."""


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal \040 etc.
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts(mountinfo: str) -> list[tuple[str, str]]:
    """(mount point, file system type) of each line of a /proc/<pid>/mountinfo text."""
    out = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if sep and len(fields) >= 5 and rfields:
            out.append((_unescape(fields[4]), rfields[0]))
    return out


def fs_type(path: Path, mountinfo: str | None = None) -> tuple[str, str]:
    """(mount point, type) of the file system holding `path` (or its nearest existing
    parent): the longest mount point above it, the last mounted of equal ones."""
    if mountinfo is None:
        with open("/proc/self/mountinfo") as fp:
            mountinfo = fp.read()
    p, tail = Path(path).absolute(), []
    while not p.exists() and p != p.parent:
        p, tail = p.parent, [p.name, *tail]
    p = p.resolve().joinpath(*tail)  # links resolved where they exist
    best = ("/", "unknown")
    for point, kind in mounts(mountinfo):
        if p == Path(point) or Path(point) in p.parents:
            if len(point) >= len(best[0]) or best[1] == "unknown":
                best = (point, kind)
    return best


def lock_problem(directory: Path) -> str:
    """Why POSIX and flock locks do not work in `directory` ('' when they do)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".mpimatrix-lock-probe-", dir=directory)
    except OSError as err:
        return f"cannot create a file there ({err.strerror})"
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(fd, fcntl.LOCK_UN)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError as err:
        return f"file locks fail there ({err.strerror})"
    finally:
        os.close(fd)
        os.unlink(name)
    return ""


def check_store(directory: Path, mountinfo: str | None = None) -> str:
    """A line saying where the store is; raises StoreFileSystemError where it cannot be."""
    point, kind = fs_type(directory, mountinfo)
    if kind in NETWORK_FS:
        raise StoreFileSystemError(
            f"the results store {directory} is on {kind} ({point}): SQLite needs a local "
            f"disk whose locks work; {MOVE_IT}")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreFileSystemError(f"the results store {directory}: cannot create it "
                                   f"({err.strerror}); {MOVE_IT}") from None
    why = lock_problem(directory)
    if why:
        raise StoreFileSystemError(f"the results store {directory} ({kind} at {point}): "
                                   f"{why}; {MOVE_IT}")
    return f"{directory} on {kind} ({point}), locks work"
