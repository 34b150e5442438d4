"""The host factor: how much slower than usual every build of a session ran at once.

A shared machine, or a cluster after a kernel, firmware or fabric change, moves every
build together; a regression moves one. The host factor of a session and partition is
the median over its builds (three or more) of each build's median slowdown against its
references or usual values, so one build's regression does not move it. A machine moves
classes of values, not all of them: on this VM a change of core placement made 8 B
latencies 4.6x slower on every build while bandwidths moved 30 %. So the gate takes a
host factor per class of values too (value_class: times or rates, small or large
messages) and judges each value against its class's (bless divides by the partition's:
samples.py). The gate never divides by less than 1 (that means references blessed on a
slow machine). Host factors and builds' levels are taken over every time and rate value
with a reference, gated or not. Builds as a whole are judged on what is left of their
values once each class's host factor is taken out (a build's level), each against the
median of the other builds' levels; but where most builds would be outside at once, the
machine moved them together and they are judged against the median build
(Slowdowns.build_factors). With fewer than three builds values are judged as measured.
Measurements: docs/history.md.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from .policy import DEFAULT_POLICY, GatePolicy


def slowdown(value: float, usual: float, higher_is_better: bool) -> float:
    """How many times slower than usual (> 1: slower), for times and rates alike."""
    return usual / value if higher_is_better else value / usual


def against_usual(by_session: dict[str, float], higher_is_better: bool,
                  leave_one_out: bool = False) -> dict[str, float]:
    """Each session's slowdown against the value's usual (its median over the
    sessions; with leave_one_out, over the other sessions, as a later session is judged
    against references it was not part of); {} when a value is not positive (no time or
    rate to compare)."""
    if min(by_session.values()) <= 0 or statistics.median(by_session.values()) <= 0:
        return {}
    if not leave_one_out or len(by_session) < 3:
        usual = statistics.median(by_session.values())
        return {s: slowdown(x, usual, higher_is_better) for s, x in by_session.items()}
    return {s: slowdown(x, statistics.median(y for t, y in by_session.items() if t != s),
                        higher_is_better) for s, x in by_session.items()}


@dataclass(frozen=True)
class HostRow:
    """One session and partition: each build's slowdowns (one per time or rate value,
    against its reference or its usual) and what they give: the host factor, the
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
        """The least-slowed build's median slowdown, or None with fewer than
        policy.min_builds builds."""
        if len(self.medians) < self.policy.min_builds:
            return None
        return min(self.medians.values())

    def build_factor(self, environ: str, against: float) -> float | None:
        """A build's median slowdown over `against` (the history's host factor), or None
        with fewer than policy.min_build_values values."""
        xs = self.slowdowns.get(environ) or []
        if len(xs) < self.policy.min_build_values:
            return None
        return statistics.median(xs) / against


#: Messages up to this size are latency-bound (eager protocols on shared memory and
#: networks); above it, bandwidth-bound. The two move apart when a machine changes.
SMALL_MESSAGE = 4096


def value_class(size: int | None, higher_is_better: bool) -> str:
    """The class of values a host factor is taken over: "small-message times" (a value
    with no size counts as small: a barrier, an atomic), "large-message rates", ..."""
    band = "small" if size is None or size <= SMALL_MESSAGE else "large"
    return f"{band}-message {'rates' if higher_is_better else 'times'}"


@dataclass(frozen=True)
class BuildFactors:
    """Each build's factor as a whole and what it was judged against."""

    factors: dict[str, float]  # {environ: median slowdown over the level}
    #: the median build's level where the builds were judged together; otherwise the
    #: least-slowed build's, for a build with no level in `levels`
    level: float | None
    together: tuple[str, ...] = ()  # builds the machine moved at once (against the median)
    #: the level each build was judged against, the median of the other builds' levels
    #: ({} where judged together: `level` for every build)
    levels: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Slowdowns:
    """One session and partition: the slowdown of each time and rate value with a
    reference, by class of values and build, and what they give: the host factor of each
    class and of the partition, and each build's own factor."""

    by_class: dict[str, dict[str, list[float]]]  # {class: {environ: [slowdowns]}}
    policy: GatePolicy = DEFAULT_POLICY

    @cached_property
    def whole(self) -> HostRow:
        """Every value of a build pooled: the partition's host factor."""
        pooled: dict[str, list[float]] = {}
        for by_env in self.by_class.values():
            for env, xs in by_env.items():
                pooled.setdefault(env, []).extend(xs)
        return HostRow(pooled, self.policy)

    @cached_property
    def classes(self) -> dict[str, float]:
        """The host factor of each class measured on policy.min_builds builds or more."""
        return {c: f for c, by_env in sorted(self.by_class.items())
                if (f := HostRow(by_env, self.policy).factor) is not None}

    def factor_of(self, cls: str) -> float | None:
        """The host factor a value of the class is judged against: its class's, else the
        partition's (None with fewer than policy.min_builds builds)."""
        return self.classes.get(cls, self.whole.factor)

    @cached_property
    def builds(self) -> HostRow:
        """What is left of each value's slowdown once its class's host factor is taken
        out: a build's own."""
        own: dict[str, list[float]] = {}
        for cls, by_env in self.by_class.items():
            f = self.factor_of(cls) or 1.0
            for env, xs in by_env.items():
                own.setdefault(env, []).extend(x / f for x in xs)
        return HostRow(own, self.policy)

    def build_factors(self, tolerance: Callable[[str], float]) -> BuildFactors:
        """Each build's factor: its level over the median of the other builds' levels;
        where more than half the builds would be outside their tolerance so, against the
        median build: the machine moved them together (two of three builds sharing a
        shared-memory path moved 15-25 % together for an hour on this VM, nothing changed
        in them). Builds with fewer than policy.min_build_values values get none."""
        row = self.builds
        if row.least is None:
            return BuildFactors({}, None)
        levels = self._others_levels()
        factors = {e: row.medians[e] / lv for e, lv in levels.items()}
        outside = tuple(sorted(e for e, f in factors.items() if f > 1 + tolerance(e)))
        if 2 * len(outside) <= len(factors):
            return BuildFactors(factors, row.least, levels=levels)
        mid = statistics.median(row.medians.values())
        return BuildFactors(self._against(mid), mid, outside)

    def expected(self, cls: str, level: float) -> float:
        """The slowdown a build at `level` (its median over its classes' host factors)
        shows in a class: the class's host factor times the level, the level never below
        the references' own (1 over the median class factor: builds faster than their
        references hold no other build to that), and never below 1 (a value at its
        reference is no regression)."""
        usual = statistics.median(self.classes.values()) if self.classes else self.whole.factor
        floor = 1 / usual if usual else 0.0
        return judging((self.factor_of(cls) or 1.0) * max(level, floor)) or 1.0

    def _others_levels(self) -> dict[str, float]:
        """For each build with enough values, the median of the other builds' levels
        (their medians once their classes' host factors are out): a build's factor is its
        own level over it."""
        row = self.builds
        return {e: statistics.median(x for o, x in row.medians.items() if o != e)
                for e in row.medians if len(row.slowdowns[e]) >= self.policy.min_build_values}

    def _against(self, level: float) -> dict[str, float]:
        """Each build's median slowdown over what a build at `level` shows in each
        value's class (expected)."""
        over: dict[str, list[float]] = {}
        for cls, by_env in self.by_class.items():
            expected = self.expected(cls, level)
            for env, xs in by_env.items():
                over.setdefault(env, []).extend(x / expected for x in xs)
        return {e: statistics.median(xs) for e, xs in over.items()
                if len(xs) >= self.policy.min_build_values}


def table(slowdowns: dict, policy: GatePolicy = DEFAULT_POLICY) -> dict:
    """{key: HostRow} of {key (a partition, or a session and partition): {environ:
    [slowdowns]}}: the one computation bless, the gate and the history share."""
    return {k: HostRow(by_env, policy) for k, by_env in slowdowns.items()}


def level_name(together: bool) -> str:
    """What a whole build (and a value named with it) was judged against, for its line:
    the median build where most builds were outside together, else the other builds'
    median."""
    return "the median build" if together else "the other builds' median"


def judging(factor: float | None) -> float | None:
    """The factor the gate divides by: never below 1."""
    return max(factor, 1.0) if factor else factor


def against(value: float, host: float | None, higher_is_better: bool) -> float:
    """The value as it would have been on a host running as usual."""
    if not host:
        return value
    return value * host if higher_is_better else value / host


@dataclass(frozen=True)
class Host:
    """The host factor of one partition in a session, and of each class of its values."""

    partition: str
    factor: float | None
    builds: dict[str, float]  # each build's median slowdown (not against the host)
    slowdowns: Slowdowns = field(repr=False, compare=False)
    judged: BuildFactors  # each build's factor as a whole, and against what
    tolerance: float = DEFAULT_POLICY.host_tolerance  # slower than this: a HOST line
    confirm_factor: float | None = None
    class_tolerance: float = DEFAULT_POLICY.host_class_tolerance  # a class's HOST line
    #: builds most of which were outside at once: judged against the median build
    together: tuple[str, ...] = ()

    @property
    def classes(self) -> dict[str, float]:
        """Each class's host factor."""
        return self.slowdowns.classes

    @property
    def slow_classes(self) -> dict[str, float]:
        return {c: f for c, f in self.classes.items() if f > 1 + self.class_tolerance}

    @property
    def slow(self) -> bool:
        """The machine: every build slow at once, over all values or in a class of
        them, or most builds outside together."""
        return ((self.factor is not None and self.factor > 1 + self.tolerance)
                or bool(self.slow_classes) or bool(self.together))

    @property
    def fast(self) -> bool:
        """Every build faster than its references at once, beyond the host tolerance: the
        gate never divides by a host factor below 1, so that much of a step is hidden."""
        return self.factor is not None and self.factor < 1 - self.tolerance

    def fast_line(self) -> str:
        assert self.factor is not None
        return (f"host {self.partition}: every build {self.factor - 1:+.0%} against its "
                f"references at once: the machine runs faster than when blessed, so a step "
                f"of up to {1 / self.factor - 1:.0%} reads at or below the references and "
                "is not seen (on top of each tolerance). If it stays so for several "
                "nights, bless again from recent sessions (mpimatrix bless --session ...)")

    def divisor(self, size: int | None, higher_is_better: bool) -> float | None:
        """The host factor a value is judged against: its class's (never below 1)."""
        return judging(self.slowdowns.factor_of(value_class(size, higher_is_better)))

    def with_build_divisor(self, size: int | None, higher_is_better: bool,
                           environ: str = "") -> float | None:
        """What a value of a build judged as a whole is divided by: what the level its
        build was judged against (the other builds' median, or the median build's) showed
        in its class (Slowdowns.expected)."""
        level = self.judged.levels.get(environ, self.judged.level)
        if level is None:
            return None
        return self.slowdowns.expected(value_class(size, higher_is_better), level)

    def line(self) -> str:
        each = ", ".join(f"{b} {f:.2f}" for b, f in sorted(self.builds.items()))
        what = []
        if self.factor is not None and self.factor > 1 + self.tolerance:
            what.append(f"every build {self.factor - 1:+.0%} against its references at once "
                        f"(median slowdown per build: {each})")
        what += [f"{c} {f - 1:+.0%} on every build at once"
                 for c, f in sorted(self.slow_classes.items())]
        if self.together:
            against = level_name(False)
            what.append(f"{', '.join(self.together)} outside together against {against}, "
                        "judged against the median build")
        return (f"HOST {self.partition}: {'; '.join(what)}; values were judged against "
                "the host of their class. The machine, not a build: run again on a quiet "
                "machine, or bless again if it changed for good")
