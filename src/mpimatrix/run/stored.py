"""Sessions from ReFrame's results database and the session index beside it
(session_index.py): what is stored (each session's UUID and start), read from the SQLite
files directly, read-only; the sessions themselves trimmed, from the index (ReFrame's
copy is read once, the first time a session is asked for).

Only full UUIDs and periods already parsed (selectors.py) are looked up. The advice to
move the database away is given only when SQLite itself cannot read the file."""

from __future__ import annotations

import contextlib
import sqlite3

from ..paths import results_db
from ..results.sessions import SessionError
from . import session_index
from .session_index import unreadable

LIST_HINT = ("list them with: reframe -C site_config/reframe_config.py "
             "--list-stored-sessions=all")


def reframe_index() -> list[tuple[str, float]]:
    """(UUID, start) of every session in ReFrame's database; [] when there is none."""
    db = results_db()
    if not db.exists():
        return []
    try:
        uri = f"{db.resolve().as_uri()}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=60)) as conn:
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not tables:  # an empty file: ReFrame makes its tables in it
                return []
            rows = conn.execute("SELECT uuid, session_start_unix FROM sessions "
                                "ORDER BY session_start_unix").fetchall()
    except sqlite3.Error as err:
        why = str(err)
        if "locked" in why or "busy" in why:
            raise SessionError(f"the results database {db} is busy ({why}): another process "
                               "is writing it; try again") from None
        if "unable to open" in why:
            raise SessionError(f"the results database {db} cannot be opened ({why}): check "
                               "its permissions, or RFM_SQLITE_DB_FILE") from None
        raise unreadable(why) from None
    return [(str(u), float(t) if isinstance(t, (int, float)) else 0.0) for u, t in rows]


def stored_index() -> list[tuple[str, float]]:
    """(UUID, start in Unix seconds) of every stored session, oldest first: those in
    ReFrame's database and those only the index still holds (pruned there); [] when
    there is none yet."""
    found = dict(reframe_index())
    for uuid, (start, _) in session_index.listed().items():
        found.setdefault(uuid, start)
    return sorted(found.items(), key=lambda item: item[1])


def describe(query: str) -> list[dict]:
    """The stored sessions of a full UUID or a parsed period (START:END, as ReFrame
    takes it: those that started in it), trimmed, oldest first."""
    from reframe.frontend.reporting.utility import parse_time_period

    if not query or query.startswith("-"):
        raise SessionError(f"internal: {query!r} is not a query for the results database")
    if ":" not in query:
        return session_index.sessions([query])
    t0, t1 = parse_time_period(query)
    return session_index.sessions([u for u, t in stored_index() if t0 <= t < t1])


def database_is_empty() -> bool:
    """Whether the results database holds no session at all (or does not exist); a
    file that cannot be read is not empty."""
    try:
        return not stored_index()
    except SessionError:
        return False
