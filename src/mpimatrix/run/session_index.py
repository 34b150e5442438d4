"""The stored sessions as mpimatrix reads them, kept beside ReFrame's results database in
`<db folder>/sessions-index.db` (SQLite): one row per session with its UUID, start, the
session it confirms, and the session itself trimmed of ReFrame's bookkeeping that nothing
here reads (each test case's stage and output folders, command lines, per-phase timings:
about half of a test case record) and zlib-compressed, about 20 times smaller than
ReFrame's copy.

ReFrame's database is where a session is stored first (by `reframe -r`, through
`mpimatrix run` or not); a session it holds that the index does not is read from it
(read-only, one JSON blob at a time) and added the first time it is asked for. The index
keeps every session after `mpimatrix prune` has dropped the full copies of the old ones
from ReFrame's database and the reports folder: the history, bless and the report read
their values here. A store that cannot be written (a shared, read-only one) is read all
the same: what is not in the index is then trimmed again on every read.

With a shared store (store_db.py, central_store.py) the index is read from PostgreSQL, the
sessions of this system; what is written goes to the local file first, then up."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path

from ..paths import results_db
from ..results.history import Series, series_of
from ..results.measurements import Session, load
from ..results.session_summary import SessionSummary, summarise
from ..results.sessions import SessionError, session_info
from . import central_store, store_db, value_index
from .store_db import ERRORS, PgConnection

#: test case fields ReFrame records for its own bookkeeping, which nothing in mpimatrix
#: reads (tests/test_session_index.py: a session and its trimmed copy give the same
#: summary, report and history)
DROPPED = frozenset((
    "build_jobid", "build_locally", "build_stderr", "build_stdout", "build_time_limit",
    "dependencies_actual", "dependencies_conceptual", "descr", "env_vars", "exclusive_access",
    "executable", "executable_opts", "extra_resources", "filename", "job_completion_time",
    "job_exitcode", "job_stderr", "job_stdout", "job_submit_time", "jobid", "keep_files",
    "maintainers", "max_pending_time", "modules", "num_cpus_per_task", "num_gpus_per_node",
    "num_tasks_per_core", "num_tasks_per_socket", "outputdir", "postbuild_cmds",
    "postrun_cmds", "prebuild_cmds", "prefix", "prerun_cmds", "readonly_files", "scheduler",
    "short_name", "sourcepath", "sourcesdir", "stagedir", "strict_check", "tags",
    "time_compile", "time_limit", "time_performance", "time_sanity", "time_setup",
    "unique_name", "use_multithreading", "valid_prog_environs", "valid_systems", "variables",
))
_TABLE = ("CREATE TABLE IF NOT EXISTS sessions(uuid TEXT PRIMARY KEY, start REAL, "
          "confirms TEXT, data BLOB)")
_INDEX = "CREATE INDEX IF NOT EXISTS sessions_start ON sessions(start)"


def unreadable(why: str) -> SessionError:
    return SessionError(f"the results database {results_db()} cannot be read ({why}); "
                        "move the file away (ReFrame starts a new one) or point "
                        "RFM_SQLITE_DB_FILE at a good one")


def index_path() -> Path:
    return central_store.local_path()


def trimmed(session: dict) -> dict:
    """The session without the test case fields in DROPPED."""
    runs = [{**{k: v for k, v in run.items() if k != "testcases"},
             "testcases": [{k: v for k, v in tc.items() if k not in DROPPED}
                           for tc in run.get("testcases") or []]}
            for run in session.get("runs") or []]
    return {**session, "runs": runs}


def _pack(session: dict) -> bytes:
    return zlib.compress(json.dumps(session, separators=(",", ":")).encode(), 6)


def _unpack(blob: bytes) -> dict:
    return json.loads(zlib.decompress(blob))


def _start(session: dict) -> float:
    t = session["session_info"].get("time_start_unix")
    return float(t) if isinstance(t, (int, float)) else 0.0


@contextlib.contextmanager
def _connect(write: bool, shared: bool = True
             ) -> Iterator[sqlite3.Connection | PgConnection | None]:
    """The index (None when it does not exist and cannot be made): the shared store when
    one is set and answers (unless `shared` is False), else the local file."""
    pg = central_store.reading() if shared else None
    if pg is not None:
        try:
            with pg:
                yield pg
        finally:
            pg.close()
        return
    path = index_path()
    try:
        if write:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, timeout=60)
            for statement in (_TABLE, _INDEX, *value_index.TABLES):
                conn.execute(statement)
        elif path.exists():
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60)
        else:
            yield None
            return
    except (OSError, sqlite3.Error):
        yield None
        return
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def add(sessions: list[dict]) -> bool:
    """Keep the sessions (trimmed) and their values in the index; False when it cannot
    be written."""
    return _write(sessions, [(s["session_info"]["uuid"], _start(s),
                              str(session_info(s).get("confirms") or ""), _pack(trimmed(s)))
                             for s in sessions])


def _add_values(sessions: list[dict]) -> bool:
    """Keep the values of sessions already in the index (kept before it held values)."""
    return _write(sessions, [])


def _write(sessions: list[dict], rows: list[tuple]) -> bool:
    """Into the local file, then (when one is read) the shared store."""
    try:
        with _connect(write=True, shared=False) as conn:
            if conn is None:
                return False
            conn.executemany("INSERT OR REPLACE INTO sessions VALUES(?, ?, ?, ?)", rows)
            for s in sessions:
                value_index.write(conn, load(s))
    except sqlite3.Error:
        return False
    return central_store.upload([s["session_info"]["uuid"] for s in sessions])


def _held(uuids: list[str]) -> dict[str, tuple[int, float, dict]]:
    try:
        with _connect(write=False) as conn:
            return value_index.held(conn, uuids) if conn is not None else {}
    except (*ERRORS, ValueError):
        return {}


#: sessions decoded at a time to add their values (one night of 40 builds: 0.5 GB)
_VALUES_CHUNK = 2


def values(uuids: list[str]) -> tuple[list[Series], dict[str, Session]]:
    """Every value's series over these sessions, oldest first, as history.series_of gives
    it from the sessions (confirmations left out), read from the index's values; and each
    session found by UUID, without its test cases (its info: software record, start).
    Sessions whose values the index does not hold yet are read once and added; a store
    that cannot be written has its sessions read whole instead."""
    held = _held(uuids)
    missing = [u for u in uuids if u not in held]
    for i in range(0, len(missing), _VALUES_CHUNK):
        chunk = missing[i:i + _VALUES_CHUNK]
        found = sessions(chunk)  # adds those only ReFrame holds, values included
        now = _held(chunk)
        older = [s for s in found if s["session_info"]["uuid"] not in now]
        if older and not _add_values(older):
            loaded = [load(s) for s in sessions(uuids)]
            return series_of(loaded), {s.uuid: Session(s.info, (), 0, {}) for s in loaded}
    if missing:
        held = _held(uuids)
    try:
        with _connect(write=False) as conn:
            series = value_index.read(conn, [sid for sid, _, _ in held.values()]) if conn else []
    except (*ERRORS, ValueError) as err:
        raise SessionError(f"the session index {index_path()} cannot be read ({err}): it "
                           "holds the only copy of pruned sessions; restore it from a "
                           "backup, or check it with sqlite3 (PRAGMA integrity_check)") from None
    return series, {u: Session(info, (), 0, {}) for u, (_, _, info) in held.items()}


def summaries(uuids: list[str]) -> list[SessionSummary]:
    """The summaries of these sessions (results/session_summary.py), in the order given,
    from the index; a session indexed before it kept them is read once and its summary
    kept (a store that cannot be written reads it every time). UUIDs found nowhere are
    left out."""
    held = _held(uuids)
    try:
        with _connect(write=False) as conn:
            kept = value_index.summaries(conn, [sid for sid, _, _ in held.values()]) \
                if conn else {}
    except (*ERRORS, ValueError):
        kept = {}
    out = {u: kept[held[u][0]] for u in uuids if u in held and held[u][0] in kept}
    for u in uuids:
        if u not in out:
            for raw in sessions([u]):  # one at a time: a night of 40 builds is 0.3 GB
                session = load(raw)
                out[u] = summarise(session)
                if u in held:  # a session not in the index has no row to keep it in
                    _keep_summary(u, out[u])
    return [out[u] for u in uuids if u in out]


def _keep_summary(uuid: str, summary: SessionSummary) -> None:
    try:
        with _connect(write=True) as conn:
            row = value_index.held(conn, [uuid]).get(uuid) if conn is not None else None
            if row is not None:
                value_index.write_summary(conn, row[0], summary)
    except (*ERRORS, ValueError):
        pass  # a read-only store: summarised again next time


def listed(shared: bool = True) -> dict[str, tuple[float, str]]:
    """UUID -> (start, the session it confirms) of every session in the index (of this
    system's in a shared store; `shared` False: the local file's)."""
    try:
        with _connect(write=False, shared=shared) as conn:
            systems = getattr(conn, "systems", None)
            if conn is None or systems == ():
                return {}
            where = f" WHERE system IN ({','.join('?' * len(systems))})" if systems else ""
            rows = conn.execute("SELECT uuid, start, confirms FROM sessions" + where,
                                systems or ()).fetchall()
    except ERRORS:
        return {}
    return {u: (float(t or 0.0), c or "") for u, t, c in rows}


def indexed(uuids: list[str]) -> dict[str, dict]:
    """The indexed sessions among these UUIDs."""
    out: dict[str, dict] = {}
    try:
        with _connect(write=False) as conn:
            if conn is None:
                return out
            for i in range(0, len(uuids), 500):
                chunk = uuids[i:i + 500]
                marks = ",".join("?" * len(chunk))
                for u, blob in conn.execute(
                        f"SELECT uuid, data FROM sessions WHERE uuid IN ({marks})", chunk):
                    out[u] = _unpack(blob)
    except (*ERRORS, zlib.error, ValueError):
        return out
    return out


def reframe_error(err: sqlite3.Error) -> SessionError:
    """What to tell the user when ReFrame's database cannot be read."""
    db, why = results_db(), str(err)
    if "locked" in why or "busy" in why:
        return SessionError(f"the results database {db} is busy ({why}): another process "
                            "is writing it; try again")
    if "unable to open" in why:
        return SessionError(f"the results database {db} cannot be opened ({why}): check "
                            "its permissions, or RFM_SQLITE_DB_FILE")
    return unreadable(why)


@contextlib.contextmanager
def reframe_db() -> Iterator[sqlite3.Connection | None]:
    """ReFrame's results database, read-only (None when there is none); its errors as
    reframe_error says them."""
    try:
        with store_db.sqlite_read_only(results_db()) as conn:
            yield conn
    except sqlite3.Error as err:
        raise reframe_error(err) from None


def from_reframe(uuid: str) -> dict | None:
    """The session as ReFrame stored it (its JSON blob, read-only), None if not there."""
    with reframe_db() as conn:
        row = conn.execute("SELECT json_blob FROM sessions WHERE uuid = ?",
                           (uuid,)).fetchone() if conn else None
    if row is None:
        return None
    try:
        data = json.loads(row[0])
    except (TypeError, ValueError):
        return None
    ok = (isinstance(data, dict) and isinstance(data.get("runs"), list)
          and isinstance((data.get("session_info") or {}).get("uuid"), str))
    return data if ok else None


def sessions(uuids: list[str]) -> list[dict]:
    """These sessions, trimmed, in the order given: from the index, else from ReFrame's
    database (and then added to the index); a UUID found in neither is left out."""
    have = indexed(uuids)
    new = []
    for u in uuids:
        if u not in have:
            full = from_reframe(u)
            if full is not None:
                have[u] = trimmed(full)
                new.append(have[u])
    if new:
        add(new)
    return [have[u] for u in uuids if u in have]
