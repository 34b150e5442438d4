"""Change points in the history of each performance value, for the nightly.

A series is one value over the stored sessions, one point per session (the best of
its passes, as the gate judges it; confirmations are no points). Steps are found with
Apache Otava's E-Divisive means and a t-test per candidate (the method of MongoDB's
Hunter, ICPE 2023), which finds steps smaller than a reference tolerance once a few
sessions after the step agree.

The host moves every build at once (a shared machine, a kernel, firmware or fabric
change), so each build's series is divided by the host's level: the mean, between the
host series' own steps, of each session's host factor (host.py). A step of the whole
host then leaves every build's series, one build's step stays in its own.

As in the gate, a whole build is tested before its values. A value's own steps must
be significant at lone_pvalue_share of the p-value (some 80 value series per partition
each get the chance of a false step); where its build stepped, a value is named when
it moved the same way at that session (steps.moved_at). Thresholds: the GatePolicy.
"""

from __future__ import annotations

import itertools
import statistics
import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from ..units import is_share
from . import host, steps
from .measurements import Session
from .policy import DEFAULT_POLICY, GatePolicy
from .statistics import best
from .steps import MIN_SEGMENT
from .values import value_label

#: The build name of the host series.
HOST = "host"
#: The check name of a build's series as a whole.
WHOLE_BUILD = "(whole build)"


@dataclass
class Point:
    time: float  # session start, seconds since the epoch
    value: float  # the best of the session's samples (as judged: maybe against the host)
    session: str
    lock_sha256: str = ""
    build_hash: str = ""
    injected: str = ""
    samples: tuple[float, ...] = ()  # the session's samples as measured
    failed: bool = False  # ReFrame failed the value against its reference in some pass

    @property
    def spread(self) -> tuple[float, float, float]:
        """(min, median, max) of the session's samples as measured."""
        xs = self.samples or (self.value,)
        return min(xs), statistics.median(xs), max(xs)


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
    against_host: bool = False  # values divided by their session's host factor
    whole_build: bool = False  # the build's factor against the host, not one value
    ref_key: str = ""  # the test case's reference key, "MPI1:PingPong@intranode"
    what: str = ""  # "latency at 8 B"

    @property
    def is_share(self) -> bool:
        return is_share(self.unit)


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
        if s.build == HOST:
            what = (f"{word} host {s.key[0]}: every build {self.change:+.1%} (median over "
                    f"the builds of their values against their usual, {self.before:.3g} -> "
                    f"{self.after:.3g}, p={self.pvalue:.1g})")
        elif s.whole_build:
            what = (f"{word} {s.build} (the whole build, {s.key[0]}): {self.change:+.1%} "
                    f"against the host (median over its values against their usual, "
                    f"{self.before:.3g} -> {self.after:.3g}, p={self.pvalue:.1g})")
        else:
            against = " against the host" if s.against_host else ""
            what = (f"{word} {s.build} {s.check} {s.placement} {s.var}: {self.change:+.1%}"
                    f"{against} ({self.before:.4g} -> {self.after:.4g} {s.unit}, "
                    f"p={self.pvalue:.1g})")
        return (f"{what} from session {p.session} ({_date(p.time)}; lock "
                f"{p.lock_sha256[:12] or '-'}, build {p.build_hash[:12] or '-'})")


def _date(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def series_of(sessions: Sequence[Session]) -> list[Series]:
    """Every value's series over the sessions, oldest first (confirmations left out, and
    the values of a test case that failed before its performance stage)."""
    return merged(session_series(s) for s in sorted(sessions, key=lambda s: s.start))


def merged(per_session: Iterable[list[Series]]) -> list[Series]:
    """The series of several sessions (each as session_series gives it, oldest first)
    joined: one series per value, its points in the order given."""
    out: dict[tuple, Series] = {}
    for ones in per_session:
        for one in ones:
            if (s := out.get(one.key)) is None:
                out[one.key] = s = replace(one, points=[])
            s.points.extend(one.points)
    return list(out.values())


#: each loaded session's own series, made once (the report asks for them three times)
_SESSION_SERIES: weakref.WeakKeyDictionary[Session, list[Series]] = \
    weakref.WeakKeyDictionary()


def session_series(s: Session) -> list[Series]:
    """The session's own point of each value, one series each ([] for a confirmation):
    what the session index keeps of it for the history (run/session_index.py). The
    series are shared: callers make new ones (merged) rather than change them."""
    if (made := _SESSION_SERIES.get(s)) is None:
        made = _SESSION_SERIES[s] = _own_series(s)
    return made


def _own_series(s: Session) -> list[Series]:
    if s.confirms:
        return []
    out: dict[tuple, Series] = {}
    samples: dict[tuple, tuple[list[float], list[bool], tuple[str, str, str]]] = {}
    for case in s.cases:
        if not case.measured:
            continue
        meta = (case.lock_sha256 or s.spack_lock, case.build_hash, case.injected)
        for pv in case.values:
            if pv.value is None:
                continue
            key = tuple(case.value_key(pv.var))
            if key not in out:
                out[key] = Series(key, case.build, case.check, case.placement, pv.var,
                                  pv.unit, pv.higher_is_better, ref_key=case.ref_key,
                                  what=value_label(pv.quantity, pv.size))
            vals, failed, _ = samples.setdefault(key, ([], [], meta))
            vals.append(float(pv.value))
            failed.append(pv.result == "fail")
    for key, (vals, failed, (lock, bhash, injected)) in samples.items():
        out[key].points.append(Point(s.start, best(vals, out[key].higher_is_better),
                                     s.uuid, lock, bhash, injected, tuple(vals),
                                     any(failed)))
    return list(out.values())


def _slowdowns(series: list[Series]) -> dict[tuple[str, str], dict[str, list[float]]]:
    """{(session, system:partition): {environ: [slowdown of each time/rate value against
    its usual (its median over the history)]}}"""
    out: dict[tuple[str, str], dict[str, list[float]]] = {}
    for s in series:
        if s.is_share or s.build == HOST or s.whole_build:
            continue  # overlaps are neither times nor rates
        by_session = {p.session: p.value for p in s.points}  # one point per session
        for session, x in host.against_usual(by_session, s.higher_is_better).items():
            out.setdefault((session, s.key[0]), {}).setdefault(s.key[1], []).append(x)
    return out


def against_host(series: list[Series], policy: GatePolicy = DEFAULT_POLICY) -> list[Series]:
    """Each build's series judged against the host, one host series per partition (the
    sessions' host factors) and one series per build as a whole (its factor against the
    host, gate_builds.py). Each point is divided by the host's level (the mean of its
    factors between the host's own steps), not by its own session's factor: that takes a
    step of the whole host out but leaves the session-to-session jitter alone."""
    rows = {at: row for at, row in host.table(_slowdowns(series), policy).items()
            if row.factor}
    starts = {p.session: p for s in series for p in s.points}
    names = {s.key[1]: s.build for s in series}
    extra: dict[tuple, Series] = {}
    for (session, part), row in sorted(rows.items(), key=lambda kv: starts[kv[0][0]].time):
        f = row.factor
        h = extra.setdefault((part, HOST), Series((part, HOST, HOST, "factor"), HOST,
                                                  "all builds", "", "factor", "x", False))
        h.points.append(replace(starts[session], value=f, build_hash="", injected="",
                                samples=(), failed=False))
        for env in row.slowdowns:
            if (build := row.build_factor(env, f)) is not None:
                b = extra.setdefault((part, env), Series(
                    (part, env, WHOLE_BUILD, "factor"), names[env], WHOLE_BUILD, "", "factor",
                    "x", False, against_host=True, whole_build=True))
                b.points.append(replace(starts[session], value=build, samples=(),
                                        failed=False))
    levels = {}
    for (part, env), h in extra.items():
        if env != HOST:
            continue
        bounds = [0, *sorted(c.index for c in change_points(h, policy=policy)),
                  len(h.points)]
        for lo, hi in itertools.pairwise(bounds):
            level = statistics.mean(p.value for p in h.points[lo:hi])
            levels.update({(p.session, part): level for p in h.points[lo:hi]})
    out = []
    for s in series:
        fs = [levels.get((p.session, s.key[0])) for p in s.points]
        if s.is_share or None in fs:
            out.append(s)
            continue
        points = [replace(p, value=host.against(p.value, f, s.higher_is_better))
                  for p, f in zip(s.points, fs, strict=True)]
        out.append(replace(s, points=points, against_host=True))
    return out + list(extra.values())


def change_points(series: Series, max_pvalue: float | None = None,
                  policy: GatePolicy = DEFAULT_POLICY) -> list[Change]:
    """The steps of a series: significant (two-sided t-test of the segments on either
    side, at max_pvalue, default the policy's), at least the series' smallest step
    (min_step), and held for MIN_SEGMENT sessions on either side: one odd session, or
    one at either end, is no step. Found by steps.significant_steps (Apache Otava's
    E-Divisive and t-test). Percentages (IMB's overlap) are no times or rates and move
    by tens of points between sessions: not judged."""
    values = [p.value for p in series.points]
    if len(values) < policy.min_points or series.is_share:
        return []
    pvalue = policy.max_pvalue if max_pvalue is None else max_pvalue
    return [Change(series, int(cp.index), float(cp.stats.mean_1), float(cp.stats.mean_2),
                   float(cp.stats.pvalue))
            for cp in steps.significant_steps(values, pvalue, min_step(series, policy))]


def min_step(series: Series, policy: GatePolicy = DEFAULT_POLICY) -> float:
    """The smallest step reported: a whole build's factor has ~1 % of noise, the host's
    and a single value's move by 5-10 % between hours on a shared machine."""
    return policy.min_build_step if series.whole_build else policy.min_step


@dataclass(frozen=True)
class Steps:
    series: list[Series]
    changes: list[Change]


def steps_of(sessions: Sequence[Session], policy: GatePolicy = DEFAULT_POLICY) -> Steps:
    """Every value's series (and each build's, the host's) against the host, and the
    steps of each."""
    return steps_in(series_of(sessions), policy)


def steps_in(series: list[Series], policy: GatePolicy = DEFAULT_POLICY) -> Steps:
    """The series (as series_of gives them) against the host, and the steps of each."""
    judged = against_host(series, policy)
    return Steps(judged, changes_of(judged, policy))


def all_changes(sessions: Sequence[Session], policy: GatePolicy = DEFAULT_POLICY) -> list[Change]:
    """The steps of every build's series against the host, and of the host."""
    return steps_of(sessions, policy).changes


def changes_of(series: list[Series], policy: GatePolicy = DEFAULT_POLICY) -> list[Change]:
    """The host's and each whole build's steps; each value's steps with its build's
    (moved_with), and its own at the policy's lone_pvalue_share of the p-value elsewhere."""
    builds = {s.key[:2]: change_points(s, policy=policy) for s in series if s.whole_build}
    out = [c for s in series if s.build == HOST for c in change_points(s, policy=policy)]
    out += [c for cs in builds.values() for c in cs]
    for s in series:
        if s.whole_build or s.build == HOST:
            continue
        mine = builds.get(s.key[:2], [])
        moved = [c for step in mine if (c := moved_with(s, step, mine, policy))]
        # near a step of its build, a value's step is that step (located a session off)
        near = [step.point.time for step in mine]
        lone = policy.lone_pvalue_share * policy.max_pvalue
        out += moved + [c for c in change_points(s, lone, policy)
                        if not any(_within(s, c.index, t) for t in near)]
    return out


def _within(series: Series, index: int, time: float) -> bool:
    """The point at index is fewer than MIN_SEGMENT points from the session at time."""
    at = next((k for k, p in enumerate(series.points) if p.time >= time), len(series.points))
    return abs(index - at) < MIN_SEGMENT


def moved_with(series: Series, step: Change, build_steps: list[Change],
               policy: GatePolicy = DEFAULT_POLICY) -> Change | None:
    """The value's step at its whole build's step, when it moved the same way, by the
    policy's min_build_step at least, between the build's neighbouring steps (sessions
    matched by their start: a value may be missing from some)."""
    at, times = step.point.time, [p.time for p in series.points]
    others = [c.point.time for c in build_steps if c is not step]
    start = max([float("-inf"), *(t for t in others if t < at)])
    end = min([float("inf"), *(t for t in others if t > at)])
    part = [k for k, t in enumerate(times) if start <= t < end]
    index = next((k for k in part if times[k] >= at), None)
    if series.is_share or index is None or not part[0] < index:
        return None
    upward = step.worse != series.higher_is_better  # slower: times up, rates down
    pvalue, before, after = steps.moved_at([series.points[k].value for k in part],
                                           index - part[0], upward)
    change = Change(series, index, before, after, pvalue)
    if pvalue > policy.with_build_pvalue or abs(change.change) < policy.min_build_step:
        return None
    return change if change.worse == step.worse else None
