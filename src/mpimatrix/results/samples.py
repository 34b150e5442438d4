"""The samples `mpimatrix bless` takes from stored sessions, per value, against the host.

One sample per session and value, the best of its passes (the gate judges a session
by the same statistic), or every pass when fewer than MIN_SAMPLES sessions have the
value (one site-acceptance session of 3 passes). Where three or more builds ran,
each session's samples are divided by its host factor (host.py), as the gate
judges them, and each build's factor against the least-slowed build is kept for the verdict on
whole builds (gate_builds.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from . import host
from .sessions import perf_values, testcases
from .statistics import MIN_SAMPLES, best, spread

#: The smallest tolerance of the verdict on a whole build: above the slow states a build
#: left alone can hold through a session and its confirmation, below what a build slowed
#: by 25 % reads (docs/validation.md). Smaller steps are the history's (history.py).
BUILD_FLOOR = 0.15


@dataclass
class Samples:
    unit: str
    higher_is_better: bool
    by_session: dict[str, list[float]] = field(default_factory=dict)
    excluded: str = ""  # why this value is never gated (e.g. an oversubscribed placement)
    host: dict[str, float] = field(default_factory=dict)  # session: its host factor

    def add(self, session: str, value: float) -> None:
        self.by_session.setdefault(session, []).append(value)

    @property
    def values(self) -> list[float]:
        """One sample per session (its best pass) when enough sessions have the value,
        else every pass."""
        hib = self.higher_is_better
        if len(self.by_session) >= MIN_SAMPLES:
            return [host.against(best(v, hib), self.host.get(s), hib)
                    for s, v in self.by_session.items()]
        return [x for v in self.by_session.values() for x in v]

    @property
    def basis(self) -> str:
        passes = max(len(v) for v in self.by_session.values())
        against = ", against the host" if self.host else ""
        if len(self.by_session) >= MIN_SAMPLES:
            return (f"best of each session's {passes} passes{against}" if passes > 1 else
                    f"one pass per session{against}")
        return f"every pass of {len(self.by_session)} session(s)"


def blessable(tc: dict) -> bool:
    """Test cases whose values are measurements: passed, or failed only their references."""
    return tc.get("result") == "pass" or tc.get("fail_phase") == "performance"


def collect(sessions: list[dict], system: str | None = None) -> dict:
    """{test class: {partition: {environ: {ref_key: {var: Samples}}}}}"""
    acc: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    for i, session in enumerate(sessions):
        uuid = str(session.get("session_info", {}).get("uuid") or f"#{i}")
        for tc in testcases([session]):
            key = tc.get("ref_key")
            if not blessable(tc) or not key or key == "<undefined>":
                continue
            if system and tc.get("system") != system:
                continue
            cls = tc["name"].split()[0]
            part = f"{tc['system']}:{tc['partition']}"
            for pv in perf_values(tc):
                if pv.value is None or not math.isfinite(pv.value):
                    continue
                slot = acc[cls][part][tc["environ"]].setdefault(key, {}).setdefault(
                    pv.var, Samples(pv.unit, pv.higher_is_better))
                slot.add(uuid, float(pv.value))
                if tc.get("oversubscribed") is True:
                    slot.excluded = "oversubscribed placement: it measures the OS scheduler"
    return acc


def against_host(acc: dict) -> tuple[dict, dict]:
    """Each session's host factor per partition ({partition: {session: factor}}), from
    each build's times and rates against their median over the sessions, set on every
    time and rate value's Samples (percentages are judged as measured); and each
    build's factor against the least-slowed build per session, as the gate judges
    builds ({partition: {environ: {session: factor}}}, builds with
    host.MIN_BUILD_VALUES values)."""
    slots: dict[str, list[tuple[str, Samples]]] = defaultdict(list)
    for parts in acc.values():
        for part, envs in parts.items():
            for env, keys in envs.items():
                slots[part] += [(env, sm) for pvars in keys.values() for sm in pvars.values()
                                if sm.unit != "%" and len(sm.by_session) >= MIN_SAMPLES]
    hosts: dict[str, dict[str, float]] = {}
    builds: dict[str, dict[str, dict[str, float]]] = {}
    for part, items in slots.items():
        slow: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for env, sm in items:
            bests = {s: best(v, sm.higher_is_better) for s, v in sm.by_session.items()}
            for s, x in host.against_usual(bests, sm.higher_is_better).items():
                slow[s][env].append(x)
        factors = {s: f for s, by_env in slow.items() if (f := host.factor(by_env))}
        if not factors:
            continue
        hosts[part] = factors
        for _, sm in items:
            sm.host = factors
        for s in factors:
            least = host.least(slow[s])
            for env, xs in slow[s].items():
                if (build := host.build_factor(xs, least)) is not None:
                    builds.setdefault(part, {}).setdefault(env, {})[s] = build
    return hosts, builds


def build_stats(builds: dict, k_sigma: float) -> dict:
    """The `$builds` statistics: each build's factors over the sessions and the
    tolerance of the gate's verdict on the whole build (gate_builds.py)."""
    out: dict = {}
    for part, envs in builds.items():
        for env, by_session in envs.items():
            factors = list(by_session.values())
            sp = spread(factors)
            out.setdefault(part, {})[env] = {
                "factors": [round(x, 4) for x in factors], "spread": round(sp.cv, 4),
                "tolerance": round(max(BUILD_FLOOR, k_sigma * sp.cv), 4)}
    return out
