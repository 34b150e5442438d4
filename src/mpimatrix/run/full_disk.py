"""A results store on a full disk: every write of a run that fails for want of space
(the lock's owner line, the reports, machine-load.json, and ReFrame's stage and
output directories, perflogs, log, report and results database) ends `mpimatrix run`
with one message naming the place, the file and the fix, and exit code 2, instead of
a traceback or test cases that look failed. What the database held stays: ReFrame
stores a session in one SQLite transaction, which a full disk rolls back whole."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from ..paths import results_db, results_dir

#: The errors of a full disk (or a full quota).
FULL = (errno.ENOSPC, errno.EDQUOT)
#: How ReFrame's output says it: an OSError's text, or SQLite's.
_SIGNS = re.compile(r"\[Errno (?:28|122)\]|No space left on device|Disk quota exceeded|"
                    r"database or disk is full")
_QUOTED_PATH = re.compile(r"""['"](/[^'"]*)['"]""")
#: A session that failed on a store with less free space than this failed for want of it
#: (a benchmark's output cut short by a full disk fails its sanity check, silently).
LOW_SPACE = 1 << 20


class DiskFull(Exception):
    def __init__(self, where: str, variable: str, why: str = "No space left on device",
                 written: str = ""):
        self.where, self.variable, self.why, self.written = where, variable, why, written
        super().__init__(str(self))

    def __str__(self) -> str:
        what = f"{self.why}: {self.written}" if self.written else self.why
        return (f"{self.where} is on a full disk ({what}): free space there, or point "
                f"{self.variable} at a disk with room, and run again; sessions stored "
                "before are kept, this run is not judged")


def _within(path: Path, top: Path) -> bool:
    return path == top or top in path.parents


def in_store(written: str | Path, why: str = "No space left on device") -> DiskFull:
    """DiskFull for a file of the results store (or of the results database where
    RFM_SQLITE_DB_FILE puts it elsewhere)."""
    path = Path(written)
    if "RFM_SQLITE_DB_FILE" in os.environ and _within(path, results_db().parent) \
            and not _within(path, results_dir()):
        where, variable = f"the results database {results_db()}", "RFM_SQLITE_DB_FILE"
    else:
        where, variable = f"the results store {results_dir()}", "MPIMATRIX_RESULTS"
    return DiskFull(where, variable, why, str(written))


def is_full(err: BaseException) -> bool:
    return isinstance(err, OSError) and err.errno in FULL


@contextlib.contextmanager
def guard(path: Path | str, where: str = "", variable: str = "") -> Iterator[None]:
    """Within: an OSError of a full disk becomes DiskFull naming the file (`path`, or
    the one the error names); `where` and `variable` default to the results store."""
    try:
        yield
    except OSError as err:
        if not is_full(err):
            raise
        written, why = str(err.filename or path), os.strerror(err.errno)
        raise (DiskFull(where, variable, why, written) if where
               else in_store(written, why)) from None


class Watch:
    """Reads ReFrame's output lines for the signs of a full disk."""

    def __init__(self):
        self.found: DiskFull | None = None

    def saw(self, line: str) -> bool:
        """Whether `line` says a disk is full; the first file it names is kept."""
        if not _SIGNS.search(line):
            return False
        if self.found is None or not self.found.written:
            if "database or disk is full" in line:
                self.found = in_store(results_db())
            elif paths := _QUOTED_PATH.findall(line):
                tops = [results_dir(), results_db().parent]
                ours = [p for p in paths if any(_within(Path(p), t) for t in tops)]
                self.found = in_store((ours or paths)[-1])
            elif self.found is None:
                self.found = in_store("")
        return True

    def result(self) -> DiskFull | None:
        """What was found; where no line named a file (ReFrame's log and perflogs), the
        part of the store that is full."""
        if self.found and not self.found.written:
            top = results_dir()
            for part in (top / "perflogs", top / "stage", top / "output", top / "reports",
                         results_db().parent, top):
                if _free(part) < LOW_SPACE:
                    return in_store(part)
        return self.found


def drop_partial(report: Path) -> None:
    """Remove a report ReFrame could not write whole (no reader could use it)."""
    try:
        json.loads(report.read_text())
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        report.unlink(missing_ok=True)


def _free(path: Path) -> float:
    """Bytes free on the disk of `path` (infinite if it cannot be asked)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return float("inf")
    # root writes into the blocks reserved for it
    return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize


def low_space() -> DiskFull | None:
    """The store's disk, if it has less than LOW_SPACE left."""
    for path in (results_dir(), results_db().parent):
        free = _free(path)
        if free < LOW_SPACE:
            full = in_store(path, f"{int(free) // 1024} KiB left")
            return DiskFull(full.where, full.variable, full.why)
    return None
