"""Sessions from ReFrame's results database and the session index beside it
(session_index.py): what is stored (each session's UUID and start), read from the SQLite
files directly, read-only; the sessions themselves trimmed, from the index (ReFrame's
copy is read once, the first time a session is asked for).

Only full UUIDs are looked up (selectors.py parses the rest). The advice to move the
database away is given only when SQLite itself cannot read the file."""

from __future__ import annotations

from ..results.sessions import SessionError
from . import session_index
from .session_index import reframe_db

LIST_HINT = ("list them with: reframe -C site_config/reframe_config.py "
             "--list-stored-sessions=all")


def reframe_index() -> list[tuple[str, float]]:
    """(UUID, start) of every session in ReFrame's database; [] when there is none."""
    with reframe_db() as conn:
        if conn is None:
            return []
        tables = {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:  # an empty file: ReFrame makes its tables in it
            return []
        rows = conn.execute("SELECT uuid, session_start_unix FROM sessions "
                            "ORDER BY session_start_unix").fetchall()
    return [(str(u), float(t) if isinstance(t, (int, float)) else 0.0) for u, t in rows]


def stored_index() -> list[tuple[str, float]]:
    """(UUID, start in Unix seconds) of every stored session, oldest first: those in
    ReFrame's database and those only the index still holds (pruned there); [] when
    there is none yet."""
    found = dict(reframe_index())
    for uuid, (start, _) in session_index.listed().items():
        found.setdefault(uuid, start)
    return sorted(found.items(), key=lambda item: item[1])


def describe(uuid: str) -> list[dict]:
    """The stored session of a full UUID, trimmed ([] when it is not stored)."""
    if not uuid or uuid.startswith("-") or ":" in uuid:
        raise SessionError(f"internal: {uuid!r} is not a session UUID")
    return session_index.sessions([uuid])


def database_is_empty() -> bool:
    """Whether the results database holds no session at all (or does not exist); a
    file that cannot be read is not empty."""
    try:
        return not stored_index()
    except SessionError:
        return False
