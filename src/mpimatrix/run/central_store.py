"""The shared store (store_db.py) kept up to date from the local session index: every
session of the local index goes up, row for row, with the system it is of; a night the
database is down stays in the local index and goes up with the next command that reads
the store, `mpimatrix store sync`, or the next night. Reads of the shared store see one
system: MPIMATRIX_SYSTEM_NAME, else the systems of the sessions this checkout holds."""

from __future__ import annotations

import json
import sqlite3
import sys
import time
import zlib

from ..paths import results_db
from ..results.history import Series
from ..results.measurements import Session, load
from ..results.night import Night
from ..results.sessions import SessionError
from ..urls import shown_url
from . import store_db, value_index
from .store_db import ERRORS, PgConnection, StoreDown

LOCAL_NAME = "sessions-index.db"
_CHUNK = 500
#: per URL, what this process found: the systems it reads, or why the server is down
_READ: dict[str, tuple[str, ...]] = {}
_DOWN: dict[str, str] = {}
#: the sessions this process uploaded
_SENT: set[str] = set()
#: whether a shared store that cannot be used (a wrong URL, user or password) is read as
#: one that does not answer: while a night is judged, its verdict must not depend on it
_LOCAL_WHEN_UNUSABLE = [False]


def judge_locally_when_unusable() -> None:
    """From now on this process reads the local store when the shared one cannot be used
    (saying why on stderr) instead of stopping with exit 2: `mpimatrix run` calls it
    before judging the night."""
    _LOCAL_WHEN_UNUSABLE[0] = True


def local_path():
    return results_db().parent / LOCAL_NAME


def _local():
    """The local index, read-only (None when there is none)."""
    return store_db.sqlite_read_only(local_path())


def system_of_raw(session: dict) -> str:
    """The name the shared store gives a session's system: MPIMATRIX_SYSTEM_NAME, else
    the one ReFrame system it ran on ('local' for none or several)."""
    systems = {tc.get("system") for run in session.get("runs") or []
               for tc in run.get("testcases") or [] if tc.get("system")}
    return store_db.named_system() or (systems.pop() if len(systems) == 1 else "local")


def _in_shared(pg: PgConnection, uuids: list[str]) -> set[str]:
    out: set[str] = set()
    for i in range(0, len(uuids), _CHUNK):
        chunk = uuids[i:i + _CHUNK]
        out |= {u for (u,) in pg.execute("SELECT uuid FROM sessions WHERE uuid IN ("
                                         + ",".join("?" * len(chunk)) + ")", chunk)}
    pg.commit()
    return out


def pending(local: sqlite3.Connection, pg: PgConnection) -> list[str]:
    """The sessions of the local index the shared store does not hold, oldest first."""
    local_uuids = [u for (u,) in local.execute("SELECT uuid FROM sessions ORDER BY start")]
    have = _in_shared(pg, local_uuids)
    return [u for u in local_uuids if u not in have]


def _push_one(local: sqlite3.Connection, pg: PgConnection, uuid: str) -> bool:
    row = local.execute("SELECT start, confirms, data FROM sessions WHERE uuid = ?",
                        (uuid,)).fetchone()
    if row is None:
        return False
    start, confirms, data = row
    raw = None if store_db.named_system() else json.loads(zlib.decompress(data))
    system = system_of_raw(raw or {})
    with pg:  # a transaction a session, its names added in key order: writers wait, never deadlock
        had = pg.execute("SELECT system FROM sessions WHERE uuid = ?", (uuid,)).fetchone()
        if had and had[0] != system:
            raise SessionError(f"session {uuid} is in the shared store {shown_url(pg.url)}"
                               f" as system {had[0]}, not {system}: a session is of one "
                               f"system (is {store_db.SYSTEM_ENV} what it was?)")
        pg.execute("INSERT OR REPLACE INTO sessions(uuid, system, start, confirms, data) "
                   "VALUES(?, ?, ?, ?, ?)", (uuid, system, start, confirms, data))
        if not value_index.copy(local, pg, uuid):  # indexed before it kept values
            value_index.write(pg, load(raw or json.loads(zlib.decompress(data))))
    return True


def push(pg: PgConnection, uuids: list[str] | None = None) -> list[str]:
    """Upload these sessions of the local index (None: those the shared store lacks);
    the ones uploaded."""
    with _local() as local:
        if local is None:
            return []
        todo = pending(local, pg) if uuids is None else uuids
        sent = [u for u in todo if _push_one(local, pg, u)]
    _SENT.update(sent)
    return sent


def local_uuids() -> set[str]:
    """The sessions of the local index."""
    with _local() as local:
        return {u for (u,) in local.execute("SELECT uuid FROM sessions")} if local else set()


def _systems(pg: PgConnection) -> tuple[str, ...]:
    if store_db.named_system():
        return (store_db.named_system(),)
    with _local() as local:
        uuids = [u for (u,) in local.execute("SELECT uuid FROM sessions")] if local else []
    found: set[str] = set()
    for i in range(0, len(uuids), _CHUNK):
        chunk = uuids[i:i + _CHUNK]
        found |= {s for (s,) in pg.execute("SELECT DISTINCT system FROM sessions WHERE uuid "
                                           "IN (" + ",".join("?" * len(chunk)) + ")", chunk)}
    pg.commit()
    return tuple(sorted(found))


def _down_note(address: str, why: str) -> None:
    if address not in _DOWN:
        _DOWN[address] = why
        print(f"mpimatrix: the shared store {shown_url(address)} does not answer ({why});"
              " reading the local store; what is new goes up with the next command "
              "(`mpimatrix store sync`)", file=sys.stderr)


def _unusable_note(address: str, err: SessionError) -> None:
    if address not in _DOWN:
        _DOWN[address] = str(err)
        print(f"mpimatrix: {err}; the night is judged on the local store and stays there "
              "until the setting is fixed (`mpimatrix store sync`)", file=sys.stderr)


def reading() -> PgConnection | None:
    """The shared store to read, listing the sessions of this system, with what the local
    index holds and it does not uploaded first (once a process); None without a URL or
    when its server does not answer (the local index is read then). A wrong URL, user or
    password raises SessionError, and so does a server that stops answering after this
    process read from it (its row ids are not the local file's)."""
    address = store_db.url()
    if not address or address in _DOWN:
        return None
    try:
        pg = store_db.connect(address)
    except StoreDown as err:
        if address in _READ:
            raise SessionError(f"the shared store {shown_url(address)} stopped "
                               f"answering ({err}); try again") from None
        _down_note(address, str(err))
        return None
    except SessionError as err:
        if not _LOCAL_WHEN_UNUSABLE[0] or address in _READ:
            raise
        _unusable_note(address, err)
        return None
    try:
        if address not in _READ:
            push(pg)
            _READ[address] = _systems(pg)
    except ERRORS as err:
        pg.close()
        _down_note(address, " ".join(str(err).split()))
        return None
    pg.systems = _READ[address]
    return pg


def upload(uuids: list[str]) -> bool:
    """After the local index kept these sessions: upload them when this process reads the
    shared store (False when that failed: readers read the sessions whole then)."""
    address = store_db.url()
    if address not in _READ:
        return True  # the next reader uploads them first
    try:
        pg = store_db.connect(address)
    except (StoreDown, SessionError):
        return False
    try:
        return len(push(pg, uuids)) == len(uuids)
    except ERRORS:
        return False
    finally:
        pg.close()


def sync() -> tuple[str, list[str]]:
    """(the store as shown, the sessions uploaded); raises StoreDown, SessionError."""
    address = store_db.url()
    if not address:
        raise SessionError(f"no shared store: set {store_db.SETTING}")
    pg = store_db.connect(address)
    try:
        return shown_url(address), push(pg)
    except ERRORS as err:
        raise SessionError(f"the shared store {shown_url(address)}: {err}") from None
    finally:
        pg.close()


def upload_night(session: Session, night: Night) -> list[str]:
    """The night's session, and every session of the local index not yet there, to the
    shared store; never raises for a database problem (the night's verdict stands)."""
    address = store_db.url()
    if not address:
        return []
    try:
        pg = store_db.connect(address)
        try:
            sent = set(push(pg))
            if session.uuid not in _SENT:  # not uploaded when this process read the store
                sent |= set(push(pg, [session.uuid]))
            sent |= {session.uuid} & _SENT
        finally:
            pg.close()
    except (StoreDown, SessionError, *ERRORS) as err:
        why = " ".join(str(err).split())
        return [f"{shown_url(address)}: {why}; the night stays in the local store and "
                "goes up with the next command (`mpimatrix store sync`)"]
    system = store_db.named_system() or system_of_raw(session.raw)
    return [f"uploaded {len(sent)} session(s) to {shown_url(address)} (system {system})"]


def status() -> list[str]:
    """What the shared store holds per system, and what of the local index it lacks."""
    address = store_db.url()
    if not address:
        raise SessionError(f"no shared store: set {store_db.SETTING}")
    pg = store_db.connect(address)
    try:
        rows = pg.execute("SELECT system, COUNT(*), MAX(start) FROM sessions GROUP BY system "
                          "ORDER BY system").fetchall()
        with _local() as local:
            left = pending(local, pg) if local else []
    except ERRORS as err:
        raise SessionError(f"the shared store {shown_url(address)}: {err}") from None
    finally:
        pg.close()
    out = [f"{shown_url(address)}: {len(rows)} system(s)"]
    for system, count, newest in rows:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(newest or 0))
        out.append(f"  {system}: {count} session(s), the newest started {when}")
    out.append(f"local index {local_path()}: {len(left)} session(s) not uploaded"
               + (" (`mpimatrix store sync`)" if left else ""))
    return out


def systems_series(systems: list[str], since: float) -> dict[str, list[Series]]:
    """Each system's values over its sessions that started after `since` (Unix seconds;
    confirmations left out), from the shared store."""
    address = store_db.url()
    if not address:
        raise SessionError(f"comparing systems reads the shared store: set {store_db.SETTING}")
    try:
        pg = store_db.connect(address)
    except StoreDown as err:
        raise SessionError(f"the shared store {shown_url(address)} does not answer "
                           f"({err})") from None
    out = {}
    try:
        push(pg)
        for system in systems:
            uuids = [u for (u,) in pg.execute(
                "SELECT uuid FROM sessions WHERE system = ? AND start >= ? AND "
                "COALESCE(confirms, '') = '' ORDER BY start", (system, since))]
            held = value_index.held(pg, uuids)
            out[system] = value_index.read(pg, [sid for sid, _, _ in held.values()])
    except ERRORS as err:
        raise SessionError(f"the shared store {shown_url(address)}: {err}") from None
    finally:
        pg.close()
    return out
