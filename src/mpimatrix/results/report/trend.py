"""Nightly trends: each performance value over the sessions, its reference band, and where
something changed.

Seam for mpimatrix.results.history: `change_points` given to the report are drawn on the
series they name. A change point is a `ChangePoint` or a dict with the same keys. Without
a cause, the report names what changed between the sessions around it: the Spack lock or
the build's hash.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from ...units import human_size
from .model import ReportData, Session, from_mapping


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
class Series:
    partition: str
    environ: str
    build: str
    check: str
    placement: str
    ref_key: str
    var: str
    what: str  # "latency at 8 B"
    unit: str
    higher_is_better: bool = False
    points: list[tuple[float, float, float, float]] = field(default_factory=list)
    # (session start, min, median, max)
    ref: tuple[float, float | None, float | None] | None = None  # (ref, lower, upper)
    failed: int = 0  # sessions in which ReFrame failed the value
    change_points: list[ChangePoint] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.partition, self.environ, self.ref_key, self.var)

    @property
    def group(self) -> tuple[str, str, str]:
        return (self.check, self.placement, self.var)

    def best(self, point: tuple[float, float, float, float]) -> float:
        """A session's best sample: what the gate judges, and bless blessed."""
        return point[3] if self.higher_is_better else point[1]

    @property
    def drift(self) -> float:
        """The last session's best against the reference (or the first session's best),
        as a fraction: the gate's statistic."""
        if not self.points:
            return 0.0
        base = self.ref[0] if self.ref else self.best(self.points[0])
        return self.best(self.points[-1]) / base - 1 if base else 0.0

    def band(self) -> tuple[float | None, float | None]:
        if not self.ref:
            return None, None
        ref, lo, hi = self.ref
        return (ref * (1 + lo) if lo is not None else None,
                ref * (1 + hi) if hi is not None else None)


def series(data: ReportData, gated_only: bool) -> list[Series]:
    """One series per performance value over the sessions (only the values that have a
    reference in some session when gated_only; their values before it count too)."""
    referenced = {(c.line.partition, c.environ, c.ref_key, pv.var)
                  for s in data.sessions for c in s.cases for pv in c.values
                  if pv.ref}
    acc: dict[tuple, Series] = {}
    per_session: dict[tuple, dict[float, list]] = defaultdict(lambda: defaultdict(list))
    for s in data.sessions:
        for c in s.cases:
            if not c.measured:
                continue
            for pv in c.values:
                key = (c.line.partition, c.environ, c.ref_key, pv.var)
                if pv.value is None or (gated_only and key not in referenced):
                    continue
                if key not in acc:
                    size = f" at {human_size(pv.size, ' ')}" if pv.size is not None else ""
                    acc[key] = Series(key[0], key[1], c.line.build, c.check, c.placement,
                                      key[2], pv.var, f"{pv.quantity}{size}", pv.unit,
                                      pv.higher_is_better)
                if pv.ref:
                    acc[key].ref = (pv.ref, pv.lower, pv.upper)  # the newest wins
                per_session[key][s.start].append((pv.value, pv.result == "fail"))
    for key, by_start in per_session.items():
        ser = acc[key]
        for start, vals in sorted(by_start.items()):
            v = [x for x, _ in vals]
            ser.points.append((start, min(v), statistics.median(v), max(v)))
            ser.failed += any(f for _, f in vals)
    return list(acc.values())


def provenance_changes(data: ReportData) -> dict[str, list[tuple[float, str]]]:
    """Per environment: (start of the first session after a change, what changed)."""
    out: dict[str, list[tuple[float, str]]] = defaultdict(list)
    prev_lock = None
    prev_hash: dict[str, str] = {}
    for s in data.sessions:
        lock = s.lock
        if prev_lock is not None and lock != prev_lock:
            out["*"].append((s.start, f"lock {short(prev_lock)} → {short(lock)}"))
        prev_lock = lock
        for env, h in build_hashes(s).items():
            if env in prev_hash and h != prev_hash[env]:
                out[env].append((s.start, f"{env} {short(prev_hash[env])} → {short(h)}"))
            prev_hash[env] = h
    return out


def build_hashes(s: Session) -> dict[str, str]:
    out = {}
    for c in s.cases:
        if c.build_hash:
            out[c.environ] = c.build_hash
    return out


def short(sha: str) -> str:
    return sha[:8] if sha else "none"


def attach(all_series: list[Series], points: list, data: ReportData) -> list[ChangePoint]:
    """Put the change points on their series, naming the cause when none is given."""
    by_key = {s.key: s for s in all_series}
    starts = {s.uuid: s.start for s in data.sessions}
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


def select(all_series: list[Series], limit: int) -> list[tuple[str, str, str]]:
    """The plot groups (check, placement, var) worth a figure, most telling first:
    change points, then failures, then the largest drift."""
    score: dict[tuple, tuple] = {}
    for s in all_series:
        mine = (len(s.change_points), s.failed, abs(s.drift))
        score[s.group] = max(score.get(s.group, mine), mine)
    ranked = sorted(score, key=lambda g: score[g], reverse=True)
    return ranked[:limit]


def spans(data: ReportData) -> bool:
    return len(data.sessions) > 1
