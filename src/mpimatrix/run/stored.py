"""Sessions from ReFrame's results database: the sessions themselves through ReFrame's
own command line (`--describe-stored-sessions`), the index of what is stored (each
session's UUID and start) read from the SQLite file directly, read-only.

ReFrame is only ever asked for a full UUID or a period already parsed (selectors.py):
an empty query made it run every check instead. The advice to move the database away
is given only when SQLite itself cannot read the file."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import subprocess

from ..paths import results_db
from ..results.sessions import SessionError
from .reframe_cmd import reframe_cmd

LIST_HINT = ("list them with: reframe -C site_config/reframe_config.py "
             "--list-stored-sessions=all")


def unreadable(why: str) -> SessionError:
    return SessionError(f"the results database {results_db()} cannot be read ({why}); "
                        "move the file away (ReFrame starts a new one) or point "
                        "RFM_SQLITE_DB_FILE at a good one")


def stored_index() -> list[tuple[str, float]]:
    """(UUID, start in Unix seconds) of every stored session, oldest first; [] when
    there is no database yet."""
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


def describe(query: str) -> list[dict]:
    """`reframe --describe-stored-sessions=QUERY` for a full UUID or a parsed period."""
    if not query or query.startswith("-"):
        raise SessionError(f"internal: {query!r} is not a query for ReFrame")
    if not results_db().exists():  # ReFrame would make one to read from
        return []
    proc = subprocess.run(reframe_cmd(f"--describe-stored-sessions={query}"),
                          capture_output=True, text=True)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        data = None
    if proc.returncode != 0 or data is None:
        text = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr).strip()
        why = (text.splitlines() or ["no output"])[-1].removeprefix("ERROR: ")
        stored_index()  # the file itself unreadable: say so, with the advice
        raise SessionError(f"ReFrame could not describe the stored session(s) {query!r} of "
                           f"{results_db()} ({why})")
    sessions = data if isinstance(data, list) else [data]
    return [s for s in sessions if isinstance(s, dict)
            and isinstance((s.get("session_info") or {}).get("uuid"), str)
            and isinstance(s.get("runs"), list)]


def database_is_empty() -> bool:
    """Whether the results database holds no session at all (or does not exist); a
    file that cannot be read is not empty."""
    try:
        return not stored_index()
    except SessionError:
        return False
