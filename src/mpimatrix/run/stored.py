"""Sessions from ReFrame's results database, through ReFrame's own command line."""

from __future__ import annotations

import json
import re
import subprocess

from ..paths import results_db
from ..results.sessions import SessionError
from .reframe_cmd import reframe_cmd


def _describe(query: str) -> list[dict]:
    """`reframe --describe-stored-sessions QUERY`, with ReFrame's error as the message."""
    proc = subprocess.run(reframe_cmd("--describe-stored-sessions", query),
                          capture_output=True, text=True)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        data = None
    if proc.returncode != 0 or data is None:
        text = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr).strip()
        why = (text.splitlines() or ["no output"])[-1].removeprefix("ERROR: ")
        raise SessionError(f"the results database {results_db()} cannot be read ({why}); "
                           "move the file away (ReFrame starts a new one) or point "
                           "RFM_SQLITE_DB_FILE at a good one")
    return data if isinstance(data, list) else [data]


def stored_sessions(uuids: list[str]) -> list[dict]:
    out = []
    for uuid in uuids:
        sessions = _describe(uuid)
        if not sessions:
            raise SessionError(f"no stored session {uuid!r} in the results database "
                               f"{results_db()}; list them with: reframe -C "
                               "site_config/reframe_config.py --list-stored-sessions=all")
        out += sessions
    return out


def sessions_in(period: str) -> list[dict]:
    """The stored sessions that started in a period, ReFrame's syntax (now-30d:now)."""
    return _describe(period)


_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


def database_is_empty() -> bool:
    """Whether the results database holds no session at all (or does not exist)."""
    if not results_db().exists():
        return True
    proc = subprocess.run(reframe_cmd("--list-stored-sessions=all"), capture_output=True,
                          text=True)
    return proc.returncode == 0 and not _UUID.search(proc.stdout)
