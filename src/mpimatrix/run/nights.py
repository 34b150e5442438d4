"""The sessions `mpimatrix run` stored before this one, as the gate looks back at them:
for what changed since a build last passed (results/changed_since.py) and for whether a
value on watch was outside the night before too (results/watch.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..paths import reports_dir, results_db
from ..results.measurements import Session, load
from ..results.sessions import SessionError, load_report
from . import machine


def load_record_path() -> Path:
    """Where `mpimatrix run` records the CPU time other programs used per session."""
    return results_db().parent / "machine-load.json"


def _newest_first(confirmations: bool, skip: Path | None = None) -> list[Path]:
    files = [p for p in reports_dir().glob("*.json") if p != skip and not p.is_symlink()
             and p.name.endswith("-confirm.json") == confirmations]
    return sorted(files, key=lambda p: p.stat().st_mtime, reverse=True)


def _loaded(paths: list[Path]) -> Iterator[Session]:
    for path in paths:
        try:
            yield load(load_report(path))
        except SessionError:
            continue


def earlier_sessions(skip: Path | None = None) -> Iterator[Session]:
    """The sessions `mpimatrix run` stored (not confirmations, not `skip`), newest first,
    read one at a time (a regression's last good session is usually recent)."""
    yield from _loaded(_newest_first(False, skip))


def previous_nights(skip: Path | None = None) -> Iterator[tuple[Session, list[Session]]]:
    """The stored sessions that were not disturbed by other programs, newest first, each
    with its confirmation sessions (a confirmation runs right after its session, so the
    confirmations are read newest first only as far as the sessions asked for)."""
    disturbed = {u for u, rec in machine.loads(load_record_path()).items()
                 if isinstance(rec, dict) and rec.get("disturbed")}
    confirmations = _loaded(_newest_first(True))
    seen: dict[str, list[Session]] = {}
    oldest_seen = float("inf")
    for session in earlier_sessions(skip):
        if session.uuid in disturbed:
            continue
        while oldest_seen > session.start:
            conf = next(confirmations, None)
            if conf is None:
                break
            seen.setdefault(conf.confirms, []).append(conf)
            oldest_seen = conf.start
        yield session, seen.get(session.uuid, [])


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
    for conf in _loaded(_newest_first(True)):
        if conf.start < oldest:
            break
        if conf.confirms in wanted:
            out.append(conf)
    return out
