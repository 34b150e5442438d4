"""The store's retention rule: full sessions (ReFrame's copy in its database, with every
test case's bookkeeping, and the JSON report beside it) are kept for a while; every
session's values are kept for good in the session index (session_index.py), which is
what the history, bless, the report and the gate's look back read.

A session is dropped from ReFrame's database only once it is in the index (the local file,
with a shared store too: what goes up to it); when the index cannot be written nothing is
dropped. ReFrame deletes its sessions itself
(`--delete-stored-sessions`). The report files, the same sessions again, go after a day;
the report of `latest` is always kept."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..paths import reports_dir, results_db
from ..results.sessions import SessionError
from . import session_index
from .reframe_cmd import reframe_cmd
from .stored import reframe_index

#: how long full sessions are kept unless MPIMATRIX_KEEP_FULL says otherwise: a week of
#: nightlies of 40 builds is most of the store (docs/store.md), and ReFrame's own listing
#: decodes every full session it holds at once (30 such nights: 67 s, 8.9 GB)
DEFAULT_KEEP = "7d"
KEEP_ENV = "MPIMATRIX_KEEP_FULL"
_AGE = re.compile(r"(\d+)([hdw])")
_SECONDS = {"h": 3600, "d": 86400, "w": 7 * 86400}
#: how long the report files are kept (`latest.json`'s always): the night reads its own
#: and its confirmations' back while it is judged; after that they are a second copy of
#: what ReFrame's database holds (`reframe --describe-stored-sessions` gives the same JSON)
REPORT_KEEP = 86400
#: sessions indexed at a time before they are dropped (each decoded in full once)
_CHUNK = 8


def keep_seconds(text: str, where: str) -> float | None:
    """Seconds of an age (30d, 12w, 48h); None for `all` (keep everything)."""
    if text == "all":
        return None
    m = _AGE.fullmatch(text or "")
    if not m or int(m.group(1)) < 1:
        raise SessionError(f"{where} {text!r}: give an age such as 30d, 12w or 48h, or `all` "
                           "to keep every full session")
    return int(m.group(1)) * _SECONDS[m.group(2)]


@dataclass
class Pruned:
    sessions: int  # dropped from ReFrame's database
    reports: int  # report files removed
    freed: int  # bytes of report files removed
    cutoff: float
    compacted: int = 0  # bytes the database file shrank by (--compact)

    def line(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.cutoff))
        shrunk = (f", the database file {self.compacted / 1e6:.0f} MB smaller"
                  if self.compacted else "")
        return (f"full sessions before {when}: {self.sessions} dropped from ReFrame's "
                f"database, {self.reports} report file(s) removed ({self.freed / 1e6:.1f} MB)"
                f"{shrunk}; their values stay in {session_index.index_path()}")


def compact() -> int:
    """Rebuild ReFrame's database file without the pages of deleted sessions (SQLite's
    VACUUM); the bytes it shrank by. Without it the file keeps its size and reuses the
    pages for the next nights: a store pruned every night stays at its first week's
    size, one pruned after months of nights keeps that size."""
    db = results_db()
    before = db.stat().st_size
    try:
        with contextlib.closing(sqlite3.connect(db, timeout=60)) as conn:
            conn.execute("VACUUM")
    except sqlite3.Error as err:
        raise SessionError(f"{db}: the database could not be compacted ({err}); the "
                           "sessions were dropped all the same") from None
    return before - db.stat().st_size


def _latest_target() -> Path | None:
    latest = reports_dir() / "latest.json"
    try:
        return (reports_dir() / os.readlink(latest)).resolve() if latest.is_symlink() else None
    except OSError:
        return None


def _stamp(t: float) -> str:
    return time.strftime("%Y%m%dT%H%M%S+0000", time.gmtime(t))


def _delete_from_reframe(cutoff: int) -> None:
    """ReFrame deletes the sessions that started before `cutoff` (whole seconds)."""
    proc = subprocess.run(reframe_cmd(f"--delete-stored-sessions={_stamp(0)}:{_stamp(cutoff)}"),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        why = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise SessionError(f"ReFrame could not delete the stored sessions before "
                           f"{_stamp(cutoff)} from {results_db()} ({why[0]})")


def prune(keep: float, dry_run: bool = False, now: float | None = None) -> Pruned:
    """Drop the full sessions that started more than `keep` seconds ago (indexed first),
    and the report files older than REPORT_KEEP but the one `latest.json` points to."""
    cutoff = int((now or time.time()) - keep)  # whole seconds, as ReFrame's period
    stored = reframe_index()  # oldest first
    old = [u for u, start in stored if start < cutoff]
    indexed = set(session_index.listed(shared=False))
    for i in range(0, len(old), _CHUNK):
        missing = set(old[i:i + _CHUNK]) - indexed
        if missing and not dry_run:
            session_index.sessions(sorted(missing))
            indexed = set(session_index.listed(shared=False))
            if missing - indexed:
                raise SessionError(f"the session index {session_index.index_path()} cannot be "
                                   "written: nothing was dropped; make it writable")
    keep_file = _latest_target()
    report_cutoff = max(cutoff, int((now or time.time()) - REPORT_KEEP))
    files = [p for p in reports_dir().glob("*.json") if not p.is_symlink()
             and p.resolve() != keep_file and p.stat().st_mtime < report_cutoff]
    freed = sum(p.stat().st_size for p in files)
    if not dry_run:
        # a few sessions per call: ReFrame decodes every session it deletes at once
        starts = [start for _, start in stored]
        for i in range(_CHUNK, len(old) + _CHUNK, _CHUNK):
            _delete_from_reframe(min(cutoff, int(starts[i])) if i < len(old) else cutoff)
        for p in files:
            p.unlink(missing_ok=True)
    return Pruned(len(old), len(files), freed, cutoff)


def retention() -> float | None:
    """Seconds full sessions are kept (MPIMATRIX_KEEP_FULL, else 7 days); None: all."""
    given = os.environ.get(KEEP_ENV)
    return keep_seconds(given or DEFAULT_KEEP, KEEP_ENV if given else "the default")


def after_session() -> str:
    """The retention rule at the end of `mpimatrix run`: what it dropped, a warning when
    it could not run (the night's verdict stands either way), '' when nothing was due."""
    keep = retention()
    if keep is None:
        return ""
    try:
        done = prune(keep)
    except (SessionError, OSError) as err:
        return f"mpimatrix: WARNING: the retention rule ({KEEP_ENV}) was not applied: {err}"
    return f"mpimatrix: {done.line()}" if done.sessions or done.reports else ""
