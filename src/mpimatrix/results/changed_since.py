"""What changed since a regressed build last passed: the session before this one in
which the build's regressed values (and, for a whole-build verdict, the build) passed
against today's references, and the difference between that session's software and
this one's (software_diff.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .gate import PASS, REGRESSION, Judgement, judge
from .measurements import Session
from .reference_set import ReferenceSet
from .software_diff import SoftwareChange, changes_for, software_changes
from .software_store import REWRITE, Store, software_dir

NO_RECORD = "no software record"


def session_changes(old: Session, new: Session, results: Path | None = None,
                    store: Store | None = None) -> list[SoftwareChange] | None:
    """Every software change from `old` to `new`; None when either session's software
    record is not in the store, or is damaged (`no_comparison` says which; `store`
    collects the damage found)."""
    store = store or Store(results)
    a = store.software(old.software)
    b = store.software(new.software)
    if a is None or b is None:
        return None
    return software_changes(a, b, store.lock)


def no_comparison(old: Session, new: Session, store: Store) -> str:
    """Why the software of two sessions cannot be compared (after session_changes)."""
    out = []
    for s in {s.uuid: s for s in (old, new)}.values():
        path = software_dir(store.results) / f"{s.software}.json"
        if not s.software:
            out.append(f"session {s.uuid[:8]} names {NO_RECORD} (run before mpimatrix kept "
                       "them, or by plain `reframe -r`)")
        elif str(path) in store.damage:
            out.append(f"the software record of session {s.uuid[:8]} is damaged: {path} "
                       f"({store.damage[str(path)]}); {REWRITE}")
        elif not path.is_file():
            out.append(f"the software record {s.software} of session {s.uuid[:8]} is not in "
                       f"{software_dir(store.results)} (removed, or kept in another results "
                       "store)")
    return "; ".join(out) or f"{NO_RECORD} for one of the two sessions"


@dataclass(frozen=True)
class ChangedSince:
    build: str
    since: Session | None  # the last earlier session where the build passed
    changes: tuple[SoftwareChange, ...] | None  # None: a session without a record
    looked_at: int = 0  # earlier sessions looked at
    why: str = ""  # why changes is None

    def heading(self) -> str:
        """One sentence: since when, and whether anything in the software changed."""
        if self.since is None:
            return (f"no earlier session where these values passed (of {self.looked_at} "
                    "stored): nothing to compare with")
        at = f"session {self.since.uuid[:8]} ({self.since.date} UTC)"
        if self.changes is None:
            return (f"changed since {at}, the last where these values passed: unknown "
                    f"({self.why or NO_RECORD + ' for one of the two sessions'})")
        if not self.changes:
            return (f"no recorded software change since {at}, the last where these values "
                    "passed: look at the machine")
        return f"changed since {at}, the last where these values passed:"

    def lines(self, indent: str = "  ") -> list[str]:
        return ([f"{indent}{self.build}: {self.heading()}"]
                + [f"{indent}  {c.text}" for c in self.changes or ()])


def _passed(prev: Judgement, build: str, keys: set, whole: bool) -> bool:
    """Whether a build passed in an earlier session: each of its regressed values that
    session measured (at least one, unless the verdict was on the whole build), and
    the whole build when that was the verdict."""
    mine = [v for v in prev.verdicts if v.key in keys]
    if any(v.status != PASS for v in mine):
        return False
    if whole:
        return any(b.build == build and b.status == PASS for b in prev.builds)
    return bool(mine)


def changed_since(session: Session, judged: Judgement, earlier: Iterable[Session],
                  references: ReferenceSet, results: Path | None = None
                  ) -> list[ChangedSince]:
    """For each build with a REGRESSION, in the order of the REGRESSION lines; `earlier`:
    the sessions of the nights before it that count (night.earlier_nights), newest first
    (read only as far as needed), each judged against today's references (those it ran
    with when there are none)."""
    regressed: dict[str, set] = {}
    whole = {b.build for b in judged.builds if b.status == REGRESSION}
    for b in judged.builds:
        if b.status == REGRESSION:
            regressed.setdefault(b.build, set())
    for v in judged.verdicts:
        if v.status == REGRESSION:
            regressed.setdefault(v.build, set()).add(v.key)
    source = iter(earlier)
    judged_before: list[tuple[Session, Judgement]] = []

    def candidates():
        yield from judged_before
        for prev in source:
            judged_before.append((prev, judge(prev, None, references)))
            yield judged_before[-1]

    out = []
    store = Store(results)
    for build, keys in regressed.items():
        since = next((prev for prev, j in candidates()
                      if _passed(j, build, keys, build in whole)), None)
        changes, why = None, ""
        if since is not None:
            every = session_changes(since, session, store=store)
            changes = tuple(changes_for(every, build)) if every is not None else None
            why = "" if every is not None else no_comparison(since, session, store)
        out.append(ChangedSince(build, since, changes, len(judged_before), why))
    return out
