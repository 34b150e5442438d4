"""The host factor: how much slower than usual every build of a session ran at once.

A shared machine, or a cluster after a kernel, firmware or fabric change, moves every
build together; a regression moves one. The host factor of a session and partition is
the median over its builds (three or more) of each build's median slowdown against its
references or usual values, so one build's regression does not move it. The gate,
bless and the history judge values against it; the gate never divides by less than 1
(that means references blessed on a slow machine). Builds as a whole are judged against
the least-slowed build, which no build's slow state of its own can raise; with fewer
than three builds values are judged as measured. Measurements: docs/validation.md.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cached_property

from .policy import DEFAULT_POLICY, GatePolicy


def slowdown(value: float, usual: float, higher_is_better: bool) -> float:
    """How many times slower than usual (> 1: slower), for times and rates alike."""
    return usual / value if higher_is_better else value / usual


def against_usual(by_session: dict[str, float], higher_is_better: bool) -> dict[str, float]:
    """Each session's slowdown against the value's usual (its median over the
    sessions); {} when a value is not positive (no time or rate to compare)."""
    usual = statistics.median(by_session.values())
    if usual <= 0 or min(by_session.values()) <= 0:
        return {}
    return {s: slowdown(x, usual, higher_is_better) for s, x in by_session.items()}


@dataclass(frozen=True)
class HostRow:
    """One session and partition: each build's slowdowns (one per gated time or rate
    value, against its reference or its usual) and what they give: the host factor, the
    least-slowed build, each build's own factor."""

    slowdowns: dict[str, list[float]]  # {environ: [slowdown of each value]}
    policy: GatePolicy = DEFAULT_POLICY

    @cached_property
    def medians(self) -> dict[str, float]:
        """Each build's median slowdown."""
        return {b: statistics.median(v) for b, v in self.slowdowns.items() if v}

    @property
    def factor(self) -> float | None:
        """The host factor: the median over the builds of their median slowdowns, or
        None with fewer than policy.min_builds builds."""
        if len(self.medians) < self.policy.min_builds:
            return None
        return statistics.median(self.medians.values())

    @property
    def least(self) -> float | None:
        """The least-slowed build's median slowdown (builds as a whole are judged against
        it), or None with fewer than policy.min_builds builds."""
        if len(self.medians) < self.policy.min_builds:
            return None
        return min(self.medians.values())

    def build_factor(self, environ: str, against: float) -> float | None:
        """A build's median slowdown over `against` (the host factor or the least-slowed
        build's), or None with fewer than policy.min_build_values values."""
        xs = self.slowdowns.get(environ) or []
        if len(xs) < self.policy.min_build_values:
            return None
        return statistics.median(xs) / against


def table(slowdowns: dict, policy: GatePolicy = DEFAULT_POLICY) -> dict:
    """{key: HostRow} of {key (a partition, or a session and partition): {environ:
    [slowdowns]}}: the one computation bless, the gate and the history share."""
    return {k: HostRow(by_env, policy) for k, by_env in slowdowns.items()}


def judging(factor: float | None) -> float | None:
    """The factor the gate divides by: never below 1."""
    return max(factor, 1.0) if factor else factor


def against(value: float, host: float | None, higher_is_better: bool) -> float:
    """The value as it would have been on a host running as usual."""
    if not host:
        return value
    return value * host if higher_is_better else value / host
