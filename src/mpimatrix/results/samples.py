"""The samples `mpimatrix bless` takes from stored sessions, per value, against the host.

One sample per session and value, the best of its passes (the gate judges a session
by the same statistic), or every pass when fewer than policy.min_samples sessions have the
value (one site-acceptance session of 3 passes). Where three or more builds ran,
each session's samples are divided by its host factor (host.py), as the gate
judges them, and each build's factor against the other builds is kept for the verdict on
whole builds (gate_builds.py).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from ..units import is_share
from . import host
from .measurements import Session, as_sessions
from .policy import DEFAULT_POLICY, GatePolicy
from .statistics import best, spread


@dataclass
class Samples:
    unit: str
    higher_is_better: bool
    by_session: dict[str, list[float]] = field(default_factory=dict)
    excluded: str = ""  # why this value is never gated (e.g. an oversubscribed placement)
    host: dict[str, float] = field(default_factory=dict)  # session: its host factor
    min_samples: int = DEFAULT_POLICY.min_samples  # sessions for one sample per session
    size: int | None = None  # message size: with the unit, the value's class (host.py)

    def add(self, session: str, value: float) -> None:
        self.by_session.setdefault(session, []).append(value)

    @property
    def is_share(self) -> bool:
        return is_share(self.unit)

    @property
    def per_session(self) -> bool:
        return len(self.by_session) >= self.min_samples

    @property
    def values(self) -> list[float]:
        """One sample per session (its best pass) when enough sessions have the value,
        else every pass."""
        hib = self.higher_is_better
        if self.per_session:
            return [host.against(best(v, hib), self.host.get(s), hib)
                    for s, v in self.by_session.items()]
        return [x for v in self.by_session.values() for x in v]

    @property
    def basis(self) -> str:
        passes = max(len(v) for v in self.by_session.values())
        against = ", against the host" if self.host else ""
        if self.per_session:
            return (f"best of each session's {passes} passes{against}" if passes > 1 else
                    f"one pass per session{against}")
        return f"every pass of {len(self.by_session)} session(s)"


#: {var: Samples} of one test case (its ref_key)
ByVar = dict[str, Samples]
#: what bless collects: {test class: {partition: {environ: {ref_key: {var: Samples}}}}}
Collected = dict[str, dict[str, dict[str, dict[str, ByVar]]]]
#: {partition: {session: its host factor}}
HostFactors = dict[str, dict[str, float]]
#: {partition: {environ: {session: the build's factor}}}
BuildFactors = dict[str, dict[str, dict[str, float]]]


class BuildStats(TypedDict):
    """One build's `$builds` statistics, as the .stats.yaml keeps them."""

    factors: list[float]  # one per session
    spread: float  # of the partition's builds
    tolerance: float  # of the verdict on the whole build


#: the `$builds` statistics: {partition: {environ: BuildStats}}
BuildsStats = dict[str, dict[str, BuildStats]]


def collect(sessions: Sequence[Session | Mapping[str, object]], system: str | None = None,
            policy: GatePolicy = DEFAULT_POLICY) -> Collected:
    """{test class: {partition: {environ: {ref_key: {var: Samples}}}}} of the test cases
    whose values are measurements (passed, or failed only their references); the
    sessions, or their ReFrame reports."""
    acc: Collected = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    for i, session in enumerate(as_sessions(sessions)):
        uuid = session.uuid if session.uuid != "?" else f"#{i}"
        for case in session.cases:
            if not case.measured or not case.ref_key:
                continue
            if system and case.system != system:
                continue
            for pv in case.values:
                if pv.value is None or not math.isfinite(pv.value):
                    continue
                slot = acc[case.test_class][case.partition][case.environ].setdefault(
                    case.ref_key, {}).setdefault(
                    pv.var, Samples(pv.unit, pv.higher_is_better,
                                    min_samples=policy.min_samples, size=pv.size))
                slot.add(uuid, float(pv.value))
                if case.oversubscribed:
                    slot.excluded = "oversubscribed placement: it measures the OS scheduler"
    return acc


def against_host(acc: Collected, policy: GatePolicy = DEFAULT_POLICY
                 ) -> tuple[HostFactors, BuildFactors]:
    """Each session's host factor per partition ({partition: {session: factor}}), from
    each build's times and rates against their median over the sessions, set on every
    time and rate value's Samples (percentages are judged as measured); and each build's
    factor per session as the gate judges builds (host.Slowdowns.build_factors at the
    policy's build floor: {partition: {environ: {session: factor}}}, builds with
    policy.min_build_values values).

    Values are divided by the partition's factor, not their class's as the gate divides
    them: over the blessed sessions, of one state of the machine, a class's factor from
    two or three values per build (large-message rates) adds more noise than it takes
    out (replayed on two stored experiments: 18 false alarms of 1524 values against 5,
    detection of +25 % 61 % against 77 %; docs/history.md)."""
    slots: dict[str, list[tuple[str, Samples]]] = defaultdict(list)
    for parts in acc.values():
        for part, envs in parts.items():
            for env, keys in envs.items():
                slots[part] += [(env, sm) for pvars in keys.values() for sm in pvars.values()
                                if not sm.is_share and sm.per_session]
    hosts: HostFactors = {}
    builds: BuildFactors = {}
    for part, items in slots.items():
        rows = _slowdowns(items, policy)
        if not rows:
            continue
        hosts[part] = {s: f for s, row in rows.items() if (f := row.whole.factor)}
        for _, sm in items:
            sm.host = hosts[part]
        # each session's build factors as the gate will judge a later session: against
        # references blessed from the other sessions (in-sample, a session is the median
        # of a fifth of the values, and the medians of the builds' factors came out 1.0000
        # in most sessions: a spread of 0)
        for s, row in _slowdowns(items, policy, leave_one_out=True).items():
            for env, factor in row.build_factors(lambda _: policy.build_floor).factors.items():
                builds.setdefault(part, {}).setdefault(env, {})[s] = factor
    return hosts, builds


def _slowdowns(items: list[tuple[str, Samples]], policy: GatePolicy,
               leave_one_out: bool = False) -> dict[str, host.Slowdowns]:
    """{session: host.Slowdowns} of each value's best against its usual, for the sessions
    with a host factor."""
    slow: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for env, sm in items:
        bests = {s: best(v, sm.higher_is_better) for s, v in sm.by_session.items()}
        for s, x in host.against_usual(bests, sm.higher_is_better, leave_one_out).items():
            slow[s][host.value_class(sm.size, sm.higher_is_better)][env].append(x)
    return {s: row for s, by_class in slow.items()
            if (row := host.Slowdowns(by_class, policy)).whole.factor}


def build_stats(builds: BuildFactors, policy: GatePolicy = DEFAULT_POLICY) -> BuildsStats:
    """The `$builds` statistics: each build's factors over the sessions, the spread of
    the partition's builds (the median of each build's own) and the tolerance of the
    gate's verdict on the whole build from it (gate_builds.py)."""
    out: BuildsStats = {}
    for part, envs in builds.items():
        # a spread from a handful of sessions is itself noisy, and the builds' levels
        # against each other move alike (2.7-2.9 % from night to night for three builds
        # here): their median is steadier
        cv = statistics.median(spread(list(by_session.values())).cv
                               for by_session in envs.values())
        for env, by_session in envs.items():
            out.setdefault(part, {})[env] = BuildStats(
                factors=[round(x, 4) for x in by_session.values()],
                spread=round(cv, 4),
                tolerance=round(max(policy.build_floor, policy.build_sigmas * cv), 4))
    return out
