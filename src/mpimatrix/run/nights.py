"""The sessions stored before this one, as the gate looks back at them:
for what changed since a build last passed (results/changed_since.py) and for whether a
value on watch was outside the night before too (results/watch.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..paths import results_db
from ..results.measurements import Session, load
from ..results.night import Night, judge_night
from ..results.reference_set import ReferenceSet
from ..results.sessions import SessionError
from . import machine, session_index
from .stored import stored_index


def load_record_path() -> Path:
    """Where `mpimatrix run` records the CPU time other programs used per session."""
    return results_db().parent / "machine-load.json"


#: sessions read from the index at a time (the newest are usually all that is needed)
_CHUNK = 2


def _stored_newest_first(confirmations: bool, skip: str = "",
                         before: float | None = None) -> Iterator[Session]:
    """The stored sessions that are (or are not) confirmations, but `skip` (a UUID) and
    those started at or after `before`, newest first, read a few at a time; the index
    says which are confirmations without reading them. None when the results database
    cannot be read (the night is then judged alone)."""
    try:
        uuids = [u for u, t in reversed(stored_index())
                 if u != skip and (before is None or t < before)]
    except SessionError:
        return
    known = session_index.listed()
    uuids = [u for u in uuids if u not in known or bool(known[u][1]) == confirmations]
    for i in range(0, len(uuids), _CHUNK):
        try:
            found = session_index.sessions(uuids[i:i + _CHUNK])
        except SessionError:
            return
        for raw in found:
            session = load(raw)
            if bool(session.confirms) == confirmations:
                yield session


def earlier_sessions(skip: str = "", before: float | None = None) -> Iterator[Session]:
    """The stored sessions (not confirmations, not the one with UUID `skip`, started
    before `before`), newest first, read a few at a time (a regression's last good
    session is usually recent)."""
    yield from _stored_newest_first(False, skip, before)


def previous_nights(skip: str = "", before: float | None = None
                    ) -> Iterator[tuple[Session, list[Session]]]:
    """The stored sessions, newest first, each with its confirmation sessions (a
    confirmation runs right after its session, so the confirmations are read newest
    first only as far as the sessions asked for). Which of them count as earlier nights
    is the gate's choice (results.night.earlier_nights), given disturbed_uuids()."""
    confirmations = _stored_newest_first(True)
    seen: dict[str, list[Session]] = {}
    oldest_seen = float("inf")
    for session in earlier_sessions(skip, before):
        while oldest_seen > session.start:
            conf = next(confirmations, None)
            if conf is None:
                break
            seen.setdefault(conf.confirms, []).append(conf)
            oldest_seen = conf.start
        yield session, seen.get(session.uuid, [])


def disturbed_uuids() -> set[str]:
    """The sessions other programs disturbed, as `mpimatrix run` recorded them."""
    return machine.disturbed_uuids(load_record_path())


def system_of(session: Session) -> str:
    """The system a session ran on ('local' for none or several)."""
    systems = {c.system for c in session.cases}
    return systems.pop() if len(systems) == 1 else "local"


def judge_stored(session: Session, confirmations: list[Session],
                 references: ReferenceSet) -> Night:
    """A night judged as `mpimatrix run` judges it: against the stored nights before it
    and the machine-load record, with what changed since a regressed build last
    passed."""
    return judge_night(session, confirmations, references,
                       previous_nights(session.uuid, session.start),
                       disturbed=disturbed_uuids(), what_changed=True)


def with_their_confirmations(sessions: list[Session]) -> list[Session]:
    """The sessions and the stored confirmation of each, where the selection left it out
    (`--session latest`): the gate's verdicts pool its samples in."""
    have = {s.uuid for s in sessions}
    return sessions + [c for c in confirmations_of(sessions) if c.uuid not in have]


def confirmations_of(sessions: list[Session]) -> list[Session]:
    """The stored confirmation sessions of these sessions (read newest first, down to the
    oldest of them)."""
    wanted = {s.uuid for s in sessions if not s.confirms}
    oldest = min((s.start for s in sessions), default=0.0)
    out = []
    for conf in _stored_newest_first(True):
        if conf.start < oldest:
            break
        if conf.confirms in wanted:
            out.append(conf)
    return out
