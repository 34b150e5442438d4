"""Nightly trends: each performance value over the sessions, its reference band, and where
something changed.

Seam for mpimatrix.results.history: `change_points` given to the report are drawn on the
series they name. A change point is a `ChangePoint` or a dict with the same keys. Without
a cause, the report names what changed between the sessions around it: the Spack lock or
the build's hash.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..history import Point, Series
from .model import ReportData, from_mapping


@dataclass(frozen=True)
class ChangePoint:
    """A detected shift of one series."""

    partition: str  # "system:partition"
    environ: str
    ref_key: str
    var: str
    session: str  # uuid of the first session after the change
    before: float | None = None  # typical value before and after
    after: float | None = None
    cause: str = ""  # e.g. "lock 1a2b3c → 4d5e6f"; empty: filled in from the sessions

    @classmethod
    def of(cls, item) -> ChangePoint:
        return from_mapping(cls, item)


@dataclass
class Trend:
    """One value's history (results.history.Series: the session's samples as measured,
    not against the host) as the report draws it: its reference band and change points."""

    series: Series
    ref: tuple[float, float | None, float | None] | None = None  # (ref, lower, upper)
    change_points: list[ChangePoint] = field(default_factory=list)

    @property
    def partition(self) -> str:
        return self.series.key[0]

    @property
    def environ(self) -> str:
        return self.series.key[1]

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.partition, self.environ, self.series.ref_key, self.series.var)

    @property
    def group(self) -> tuple[str, str, str]:
        return (self.series.check, self.series.placement, self.series.var)

    @property
    def points(self) -> list[Point]:
        return self.series.points

    @property
    def failed(self) -> int:
        """Sessions in which ReFrame failed the value against its reference."""
        return sum(p.failed for p in self.points)

    @property
    def drift(self) -> float:
        """The last session's best against the reference (or the first session's best),
        as a fraction: the gate's statistic."""
        if not self.points:
            return 0.0
        base = self.ref[0] if self.ref else self.points[0].value
        return self.points[-1].value / base - 1 if base else 0.0

    def band(self) -> tuple[float | None, float | None]:
        if not self.ref:
            return None, None
        ref, lo, hi = self.ref
        return (ref * (1 + lo) if lo is not None else None,
                ref * (1 + hi) if hi is not None else None)


def trends(data: ReportData, series: list[Series], gated_only: bool) -> list[Trend]:
    """One trend per performance value over the sessions, of their series (as
    history.series_of gives them; only the values that have a reference in some session
    when gated_only; their values before it count too)."""
    refs: dict[tuple, tuple[float, float | None, float | None]] = {}
    referenced = set()
    for s in data.sessions:
        for c in s.cases:
            for pv in c.values:
                key = (c.line.partition, c.environ, c.ref_key, pv.var)
                if pv.ref:
                    referenced.add(key)
                    if c.measured and pv.value is not None:
                        refs[key] = (pv.ref, pv.lower, pv.upper)  # the newest wins
    out = [Trend(s) for s in series]
    for t in out:
        t.ref = refs.get(t.key)
    return [t for t in out if not gated_only or t.key in referenced]


def provenance_changes(data: ReportData) -> dict[str, list[tuple[float, str]]]:
    """Per environment: (start of the first session after a change, what changed)."""
    out: dict[str, list[tuple[float, str]]] = defaultdict(list)
    prev_lock = None
    prev_hash: dict[str, str] = {}
    for s in data.summaries:
        lock = s.lock
        if prev_lock is not None and lock != prev_lock:
            out["*"].append((s.start, f"lock {short(prev_lock)} → {short(lock)}"))
        prev_lock = lock
        for env, h in s.build_hashes.items():
            if env in prev_hash and h != prev_hash[env]:
                out[env].append((s.start, f"{env} {short(prev_hash[env])} → {short(h)}"))
            prev_hash[env] = h
    return out


def short(sha: str) -> str:
    return sha[:8] if sha else "none"


def attach(all_trends: list[Trend], points: list, data: ReportData) -> list[ChangePoint]:
    """Put the change points on their trends, naming the cause when none is given."""
    by_key = {t.key: t for t in all_trends}
    starts = {s.uuid: s.start for s in data.summaries}
    changes = provenance_changes(data)
    out = []
    for item in points or []:
        cp = ChangePoint.of(item)
        ser = by_key.get((cp.partition, cp.environ, cp.ref_key, cp.var))
        if not cp.cause and cp.session in starts:
            at = starts[cp.session]
            causes = [w for t, w in changes.get("*", []) + changes.get(cp.environ, [])
                      if t == at]
            cp = ChangePoint(**{**cp.__dict__, "cause": "; ".join(causes) or
                                "no lock or build change between the sessions"})
        if ser is not None:
            ser.change_points.append(cp)
        out.append(cp)
    return out


def select(all_trends: list[Trend], limit: int) -> list[tuple[str, str, str]]:
    """The plot groups (check, placement, var) worth a figure, most telling first:
    change points, then failures, then the largest drift."""
    score: dict[tuple, tuple] = {}
    for t in all_trends:
        mine = (len(t.change_points), t.failed, abs(t.drift))
        score[t.group] = max(score.get(t.group, mine), mine)
    ranked = sorted(score, key=lambda g: score[g], reverse=True)
    return ranked[:limit]


def spans(data: ReportData) -> bool:
    return len(data.summaries) > 1
