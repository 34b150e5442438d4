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

#: Builds a session and partition needs for a host factor.
MIN_BUILDS = 3
#: Gated time and rate values a build needs for a factor of its own (whole builds).
MIN_BUILD_VALUES = 5


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


def _build_medians(slowdowns: dict[str, list[float]]) -> list[float] | None:
    per_build = [statistics.median(v) for v in slowdowns.values() if v]
    return per_build if len(per_build) >= MIN_BUILDS else None


def factor(slowdowns: dict[str, list[float]]) -> float | None:
    """The host factor from {build: [slowdown of each of its values]}, or None with
    fewer than MIN_BUILDS builds."""
    per_build = _build_medians(slowdowns)
    return statistics.median(per_build) if per_build else None


def least(slowdowns: dict[str, list[float]]) -> float | None:
    """The least-slowed build's median slowdown (the factor builds as a whole are
    judged against), or None with fewer than MIN_BUILDS builds."""
    per_build = _build_medians(slowdowns)
    return min(per_build) if per_build else None


def judging(factor: float | None) -> float | None:
    """The factor the gate divides by: never below 1."""
    return max(factor, 1.0) if factor else factor


def build_factors(slowdowns: dict[str, list[float]]) -> dict[str, float]:
    """Each build's median slowdown."""
    return {b: statistics.median(v) for b, v in slowdowns.items() if v}


def build_factor(slowdowns: list[float], host_factor: float) -> float | None:
    """A build's factor against the host (its median slowdown over the host factor),
    or None with fewer than MIN_BUILD_VALUES values."""
    if len(slowdowns) < MIN_BUILD_VALUES:
        return None
    return statistics.median(slowdowns) / host_factor


def against(value: float, host: float | None, higher_is_better: bool) -> float:
    """The value as it would have been on a host running as usual."""
    if not host:
        return value
    return value * host if higher_is_better else value / host
