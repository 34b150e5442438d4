"""A small results database from recorded sessions, without a ReFrame run: the
sessions are written as ReFrame 4.10 stores them (reframe/frontend/reporting/
storage.py: the tables, the schema version), and ReFrame reads them back with
`--describe-stored-sessions` as it reads its own."""

from __future__ import annotations

import copy
import json
import sqlite3
import uuid as uuidlib
from pathlib import Path

from helpers import FIXTURES

SESSIONS = FIXTURES / "sessions"
TABLES = (
    "CREATE TABLE IF NOT EXISTS sessions(uuid TEXT PRIMARY KEY, session_start_unix REAL, "
    "session_end_unix REAL, json_blob TEXT, report_file TEXT)",
    "CREATE TABLE IF NOT EXISTS testcases(name TEXT,system TEXT, partition TEXT, environ "
    "TEXT, job_completion_time_unix REAL, session_uuid TEXT, uuid TEXT, FOREIGN "
    "KEY(session_uuid) REFERENCES sessions(uuid) ON DELETE CASCADE)",
    "CREATE INDEX IF NOT EXISTS index_testcases_time on testcases(job_completion_time_unix)",
    "CREATE TABLE IF NOT EXISTS metadata(schema_version TEXT)",
    "CREATE INDEX IF NOT EXISTS index_sessions_time on sessions(session_start_unix)",
)


def recorded(name: str = "imb-quick-bless-1", uuid: str | None = None, start: float | None = None,
             **extras) -> dict:
    """A recorded session (tests/fixtures/sessions/<name>.json), with another UUID, start
    and session extras if given."""
    session = copy.deepcopy(json.loads((SESSIONS / f"{name}.json").read_text()))
    info = session["session_info"]
    if uuid is not None:
        info["uuid"] = uuid
    if start is not None:
        info["time_start_unix"], info["time_end_unix"] = start, start + 60
    info.update(extras)
    return session


def store(db: Path, sessions: list[dict]) -> list[str]:
    """Add the sessions to the results database at `db` (made if missing); their UUIDs."""
    db.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(db) as conn:
        for statement in TABLES:
            conn.execute(statement)
        if not conn.execute("SELECT schema_version FROM metadata").fetchall():
            conn.execute("INSERT INTO metadata VALUES('1.0')")
        for s in sessions:
            info = s["session_info"]
            conn.execute("INSERT INTO sessions VALUES(?, ?, ?, ?, ?)",
                         (info["uuid"], info["time_start_unix"],
                          info.get("time_end_unix", info["time_start_unix"]),
                          json.dumps(s), ""))
            for run in s["runs"]:
                for tc in run["testcases"]:
                    conn.execute("INSERT INTO testcases VALUES(?, ?, ?, ?, ?, ?, ?)",
                                 (tc["name"], tc["system"], tc["partition"], tc["environ"],
                                  tc.get("job_completion_time_unix") or 0.0, info["uuid"],
                                  tc.get("uuid") or str(uuidlib.uuid4())))
    conn.close()
    return [s["session_info"]["uuid"] for s in sessions]
