"""Change points in the history of each performance value, for the nightly.

A series is one value (system, partition, build, test case, variable) over the
stored sessions, one point per session (the best of its passes, as the gate
judges it).
Confirmation sessions are not points of their own. Steps are found with Apache
Otava's E-Divisive means with a Student t-test on each candidate (the method of
MongoDB's Hunter, "Using Change Point Detection to Hunt for Performance
Regressions", ICPE 2023), which finds steps smaller than a reference tolerance
once a few sessions after the step agree.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..atomic import atomic_write
from .sessions import (
    build_label,
    case_name,
    check_label,
    perf_values,
    session_info,
    testcases,
)
from .statistics import best

#: Significance of a step (two-sided t-test of the points before and after it).
MAX_PVALUE = 0.01
#: Sessions considered around a candidate step (Otava's sliding window).
WINDOW = 30
#: A series needs this many sessions before any step can be found.
MIN_POINTS = 5


@dataclass
class Point:
    time: float  # session start, seconds since the epoch
    value: float
    session: str
    lock_sha256: str = ""
    build_hash: str = ""
    injected: str = ""


@dataclass
class Series:
    key: tuple  # (system:partition, environ, test name, var)
    build: str
    check: str
    placement: str
    var: str
    unit: str
    higher_is_better: bool
    points: list[Point] = field(default_factory=list)


@dataclass
class Change:
    series: Series
    index: int  # first point after the step
    before: float  # mean before and after
    after: float
    pvalue: float

    @property
    def point(self) -> Point:
        return self.series.points[self.index]

    @property
    def change(self) -> float:
        return self.after / self.before - 1 if self.before else float("inf")

    @property
    def worse(self) -> bool:
        return (self.change < 0) if self.series.higher_is_better else (self.change > 0)

    @property
    def ident(self) -> str:
        s = self.series
        return "|".join([*map(str, s.key), self.point.session])

    def line(self) -> str:
        s, p = self.series, self.point
        word = "SLOWER" if self.worse else "FASTER"
        return (f"{word} {s.build} {s.check} {s.placement} {s.var}: {self.change:+.1%} "
                f"({self.before:.4g} -> {self.after:.4g} {s.unit}, p={self.pvalue:.1g}) from "
                f"session {p.session} ({_date(p.time)}; lock {p.lock_sha256[:12] or '-'}, "
                f"build {p.build_hash[:12] or '-'})")


def _date(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def _undefined(value) -> str:
    return "" if value in (None, "<undefined>") else str(value)


def series_of(sessions: list[dict]) -> list[Series]:
    """Every value's series over the sessions, oldest first (confirmations left out)."""
    out: dict[tuple, Series] = {}
    ordered = sorted(sessions, key=lambda s: s.get("session_info", {}).get("time_start_unix", 0))
    for s in ordered:
        info = session_info(s)
        if info.get("confirms"):
            continue
        samples: dict[tuple, tuple[list[float], tuple[str, str, str]]] = {}
        for tc in testcases([s]):
            name = case_name(tc)
            meta = (_undefined(tc.get("lock_sha256")) or _undefined(info.get("spack_lock")),
                    _undefined(tc.get("build_hash")), _undefined(tc.get("injected")))
            for pv in perf_values(tc):
                if pv.value is None:
                    continue
                key = (f"{tc.get('system')}:{tc.get('partition')}", tc.get("environ"), name,
                       pv.var)
                if key not in out:
                    out[key] = Series(key, build_label(tc), check_label(tc),
                                      str(tc.get("placement", "")), pv.var, pv.unit,
                                      pv.higher_is_better)
                samples.setdefault(key, ([], meta))[0].append(float(pv.value))
        for key, (vals, (lock, bhash, injected)) in samples.items():
            out[key].points.append(Point(info.get("time_start_unix", 0.0),
                                         best(vals, out[key].higher_is_better),
                                         info.get("uuid", "?"),
                                         lock, bhash, injected))
    return list(out.values())


def change_points(series: Series, max_pvalue: float = MAX_PVALUE) -> list[Change]:
    from otava.analysis import compute_change_points  # imports numpy and scipy

    values = [p.value for p in series.points]
    if len(values) < MIN_POINTS:
        return []
    found, _ = compute_change_points(values, window_len=WINDOW, max_pvalue=max_pvalue)
    out = []
    for cp in found:
        i = int(cp.index)
        if 0 < i < len(values):
            out.append(Change(series, i, float(cp.stats.mean_1), float(cp.stats.mean_2),
                              float(cp.stats.pvalue)))
    return out


def all_changes(sessions: list[dict], max_pvalue: float = MAX_PVALUE) -> list[Change]:
    return [c for s in series_of(sessions) for c in change_points(s, max_pvalue)]


def reported(path: Path) -> set[str]:
    """Changes already reported by earlier runs of `mpimatrix changes`."""
    try:
        return set(json.loads(path.read_text()))
    except (OSError, ValueError):
        return set()


def record_reported(path: Path, idents: set[str]) -> None:
    atomic_write(path, json.dumps(sorted(idents), indent=1) + "\n")
