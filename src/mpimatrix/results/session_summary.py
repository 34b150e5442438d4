"""What a trend report shows of a session other than its newest: its row in the sessions
table, its node-hours per partition (the cost per session) and its builds' hashes (what
changed between sessions). Made from the session once, so a report over many nights
holds one night whole, not all of them (14 nights of 40 builds decoded: 2 GB)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .measurements import Case, Session


@dataclass(frozen=True)
class SessionSummary:
    uuid: str
    start: float
    date: str
    mode: str
    runs: int
    elapsed: float | None
    cases: int  # distinct test cases (a case run in 3 passes counts once)
    failures: int  # failed or aborted test-case runs
    lock: str
    reframe: str
    host: str
    confirms: str
    systems: tuple[str, ...] = ()
    node_hours: dict[str, float] = field(default_factory=dict)  # per system:partition
    build_hashes: dict[str, str] = field(default_factory=dict)  # per environment

    def to_json(self) -> Mapping[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionSummary:
        """The summary to_json gave (ValueError when it is not one)."""
        try:
            return cls(**{**data, "systems": tuple(data.get("systems") or ())})
        except TypeError as err:
            raise ValueError(f"not a session summary: {err}") from None


def node_hours(c: Case) -> float:
    """What a test case costs: its run time (the job, launcher included) x its nodes."""
    return c.time_run * c.nodes / 3600


def summarise(s: Session) -> SessionSummary:
    counts = Counter(c.result for c in s.cases)
    hours: dict[str, float] = {}
    hashes: dict[str, str] = {}
    for c in s.cases:
        part = c.line.partition
        hours[part] = hours.get(part, 0.0) + node_hours(c)
        if c.build_hash:
            hashes[c.environ] = c.build_hash
    elapsed = s.info.get("time_elapsed")
    return SessionSummary(
        uuid=s.uuid, start=s.start, date=s.date, mode=s.mode, runs=s.runs,
        elapsed=float(elapsed) if isinstance(elapsed, (int, float)) else None,
        cases=len({c.key for c in s.cases}), failures=counts["fail"] + counts["abort"],
        lock=s.lock, reframe=str(s.info.get("version", "")),
        host=str(s.info.get("hostname", "")), confirms=s.confirms,
        systems=tuple(sorted(s.systems)), node_hours=hours, build_hashes=hashes)
