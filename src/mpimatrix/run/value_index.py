"""The performance values of each indexed session, in tables of their own in the session
index (session_index.py): one row per session and value (its samples, the best of them,
whether ReFrame failed it), the values named once (build, benchmark, placement, variable:
"latency_8B"), so the history reads the points of its period without decoding a single
session. At 40 builds a night adds about 8,300 rows, 0.5 MB.

The rows are what results/history.session_series gives for the session, so a history
read here is the one series_of gives from the sessions themselves."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator

from ..results.history import Point, Series, session_series
from ..results.measurements import Session
from ..results.session_summary import SessionSummary, summarise

TABLES = (
    "CREATE TABLE IF NOT EXISTS value_sessions(id INTEGER PRIMARY KEY, uuid TEXT UNIQUE "
    "NOT NULL, start REAL, info TEXT, metas TEXT)",
    "CREATE TABLE IF NOT EXISTS value_names(id INTEGER PRIMARY KEY, key TEXT UNIQUE NOT "
    "NULL, build TEXT, benchmark TEXT, placement TEXT, var TEXT, head TEXT)",
    "CREATE INDEX IF NOT EXISTS value_names_what ON value_names(build, benchmark, "
    "placement, var)",
    # clustered by session: a period's rows are read together
    "CREATE TABLE IF NOT EXISTS value_points(session INTEGER, name INTEGER, value REAL, "
    "samples TEXT, failed INTEGER, meta INTEGER, PRIMARY KEY(session, name)) WITHOUT ROWID",
    # what a trend report lists of a session (results/session_summary.py)
    "CREATE TABLE IF NOT EXISTS value_summaries(session INTEGER PRIMARY KEY, summary TEXT)",
)
_CHUNK = 500  # SQLite's bound parameters per statement stay under its limit


def _key(series: Series) -> str:
    return json.dumps(list(series.key), separators=(",", ":"))


def _head(s: Series) -> str:
    return json.dumps([s.build, s.check, s.placement, s.var, s.unit, s.higher_is_better,
                       s.ref_key, s.what], separators=(",", ":"))


def write(conn: sqlite3.Connection, session: Session) -> None:
    """Keep the session's values (replacing what was kept of it)."""
    series = session_series(session)
    metas = sorted({(p.lock_sha256, p.build_hash, p.injected)
                    for s in series for p in s.points})
    meta_at = {m: i for i, m in enumerate(metas)}
    old = conn.execute("SELECT id FROM value_sessions WHERE uuid = ?",
                       (session.uuid,)).fetchone()
    if old:
        conn.execute("DELETE FROM value_points WHERE session = ?", old)
        conn.execute("DELETE FROM value_summaries WHERE session = ?", old)
        conn.execute("DELETE FROM value_sessions WHERE id = ?", old)
    sid = conn.execute("INSERT INTO value_sessions(uuid, start, info, metas) "
                       "VALUES(?, ?, ?, ?)",
                       (session.uuid, session.start, json.dumps(session.info),
                        json.dumps(metas))).lastrowid
    keys = {_key(s): s for s in series}
    ids = _name_ids(conn, list(keys))
    _add_names(conn, [(k, s.build, s.check, s.placement, s.var, _head(s))
                      for k, s in keys.items() if k not in ids])
    ids = _name_ids(conn, list(keys))
    rows = []
    for k, s in keys.items():
        p = s.points[0]
        rows.append((sid, ids[k], p.value, json.dumps(p.samples), int(p.failed),
                     meta_at[(p.lock_sha256, p.build_hash, p.injected)]))
    conn.executemany("INSERT INTO value_points VALUES(?, ?, ?, ?, ?, ?)", rows)
    write_summary(conn, sid, summarise(session))


def _add_names(conn: sqlite3.Connection, rows: list[tuple]) -> None:
    # ignored when there (a shared store's other writer added it meanwhile); in key
    # order, so two writers wait for each other's names in one order
    conn.executemany("INSERT OR IGNORE INTO value_names(key, build, benchmark, placement, "
                     "var, head) VALUES(?, ?, ?, ?, ?, ?)", sorted(rows))


def copy(src: sqlite3.Connection, dst: sqlite3.Connection, uuid: str) -> bool:
    """Keep in `dst` the values `src` keeps of a session, row for row (replacing what
    `dst` kept of it); False when `src` keeps none."""
    row = src.execute("SELECT id, start, info, metas FROM value_sessions WHERE uuid = ?",
                      (uuid,)).fetchone()
    if row is None:
        return False
    old = dst.execute("SELECT id FROM value_sessions WHERE uuid = ?", (uuid,)).fetchone()
    if old:
        for table in ("value_points", "value_summaries"):
            dst.execute(f"DELETE FROM {table} WHERE session = ?", (old[0],))
        dst.execute("DELETE FROM value_sessions WHERE id = ?", (old[0],))
    sid = dst.execute("INSERT INTO value_sessions(uuid, start, info, metas) VALUES(?, ?, ?, ?)",
                      (uuid, *row[1:])).lastrowid
    points = src.execute("SELECT n.key, n.build, n.benchmark, n.placement, n.var, n.head, "
                         "p.value, p.samples, p.failed, p.meta FROM value_points p JOIN "
                         "value_names n ON n.id = p.name WHERE p.session = ?",
                         (row[0],)).fetchall()
    keys = [p[0] for p in points]
    ids = _name_ids(dst, keys)
    _add_names(dst, [p[:6] for p in points if p[0] not in ids])
    ids = _name_ids(dst, keys)
    dst.executemany("INSERT INTO value_points VALUES(?, ?, ?, ?, ?, ?)",
                    [(sid, ids[p[0]], *p[6:]) for p in points])
    summary = src.execute("SELECT summary FROM value_summaries WHERE session = ?",
                          (row[0],)).fetchone()
    if summary:
        dst.execute("INSERT OR REPLACE INTO value_summaries VALUES(?, ?)", (sid, summary[0]))
    return True


def write_summary(conn: sqlite3.Connection, sid: int, summary: SessionSummary) -> None:
    conn.execute("INSERT OR REPLACE INTO value_summaries VALUES(?, ?)",
                 (sid, json.dumps(summary.to_json())))


def summaries(conn: sqlite3.Connection, ids: list[int]) -> dict[int, SessionSummary]:
    """The kept summaries of these sessions (row ids from `held`); those kept before
    the table existed are missing."""
    return {sid: SessionSummary.from_json(json.loads(text)) for sid, text in _rows_in(
        conn, "SELECT session, summary FROM value_summaries WHERE session IN ({marks})", ids)}


def _rows_in(conn: sqlite3.Connection, sql: str, items: list) -> Iterator[tuple]:
    """The rows of `sql`, whose `IN ({marks})` takes the items, a chunk at a time."""
    for i in range(0, len(items), _CHUNK):
        chunk = items[i:i + _CHUNK]
        yield from conn.execute(sql.format(marks=",".join("?" * len(chunk))), chunk)


def _name_ids(conn: sqlite3.Connection, keys: list[str]) -> dict[str, int]:
    return dict(_rows_in(conn, "SELECT key, id FROM value_names WHERE key IN ({marks})", keys))


def held(conn: sqlite3.Connection, uuids: list[str]) -> dict[str, tuple[int, float, dict]]:
    """UUID -> (row id, start, session info) of these sessions whose values are kept."""
    return {uuid: (sid, float(start or 0.0), json.loads(info))
            for sid, uuid, start, info in _rows_in(
                conn, "SELECT id, uuid, start, info FROM value_sessions WHERE uuid IN ({marks})",
                uuids)}


def read(conn: sqlite3.Connection, ids: list[int]) -> list[Series]:
    """Every value's series over these sessions (row ids from `held`), oldest first, as
    history.series_of gives it from the sessions."""
    sessions = {sid: (uuid, float(start or 0.0), [tuple(m) for m in json.loads(metas)])
                for sid, uuid, start, metas in _rows_in(
                    conn, "SELECT id, uuid, start, metas FROM value_sessions WHERE id IN "
                    "({marks})", ids)}
    heads: dict[int, tuple] = {}
    out: dict[int, Series] = {}
    for sid in sorted(sessions, key=lambda k: (sessions[k][1], k)):
        uuid, start, metas = sessions[sid]
        points = conn.execute("SELECT name, value, samples, failed, meta FROM value_points "
                              "WHERE session = ?", (sid,)).fetchall()
        missing = [n for n, *_ in points if n not in heads]
        for nid, key, head in _rows_in(
                conn, "SELECT id, key, head FROM value_names WHERE id IN ({marks})", missing):
            heads[nid] = (tuple(json.loads(key)), json.loads(head))
        for nid, value, samples, failed, meta in points:
            if (s := out.get(nid)) is None:
                key, (build, check, placement, var, unit, hib, ref_key, what) = heads[nid]
                out[nid] = s = Series(key, build, check, placement, var, unit, hib,
                                      ref_key=ref_key, what=what)
            lock, bhash, injected = metas[meta]
            s.points.append(Point(start, value, uuid, lock, bhash, injected,
                                  tuple(json.loads(samples)), bool(failed)))
    return list(out.values())
