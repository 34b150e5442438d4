"""The gate above single values: the host of each partition, and each build as a whole.

A build's level is the median over its time and rate values with a reference (gated or
not) of how much slower than its reference each ran, once its class's host factor is
taken out (host.py); its factor is its level over the median of the other builds' levels
(over the median build's where most builds would be outside at once: the machine moved
them together). A median over many values has far less noise than any one of them, so a
build slowed by 10 % everywhere is found even where each value's own tolerance lets it
pass (docs/history.md). A build is a regression when its factor is beyond the build
tolerance (from the builds' spreads over the blessed sessions, written by bless as
`$builds` in the statistics file) in the session, and the geometric mean of its session
and confirmation factors (one draw per round of measuring again) is beyond it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from . import host
from .policy import DEFAULT_POLICY, GatePolicy
from .reference_set import ReferenceSet
from .statistics import best
from .status import Status


@dataclass(frozen=True)
class Host:
    """The host factor of one partition in a session, and of each class of its values."""

    partition: str
    factor: float | None
    builds: dict[str, float]  # each build's median slowdown (not against the host)
    slowdowns: host.Slowdowns = field(repr=False, compare=False)
    judged: host.BuildFactors  # each build's factor as a whole, and against what
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
        return host.judging(self.slowdowns.factor_of(host.value_class(size, higher_is_better)))

    def with_build_divisor(self, size: int | None, higher_is_better: bool,
                           environ: str = "") -> float | None:
        """What a value of a build judged as a whole is divided by: what the level its
        build was judged against (the other builds' median, or the median build's) showed
        in its class (host.Slowdowns.expected)."""
        level = self.judged.levels.get(environ, self.judged.level)
        if level is None:
            return None
        return self.slowdowns.expected(host.value_class(size, higher_is_better), level)

    def line(self) -> str:
        each = ", ".join(f"{b} {f:.2f}" for b, f in sorted(self.builds.items()))
        what = []
        if self.factor is not None and self.factor > 1 + self.tolerance:
            what.append(f"every build {self.factor - 1:+.0%} against its references at once "
                        f"(median slowdown per build: {each})")
        what += [f"{c} {f - 1:+.0%} on every build at once"
                 for c, f in sorted(self.slow_classes.items())]
        if self.together:
            against = host.level_name(False)
            what.append(f"{', '.join(self.together)} outside together against {against}, "
                        "judged against the median build")
        return (f"HOST {self.partition}: {'; '.join(what)}; values were judged against "
                "the host of their class. The machine, not a build: run again on a quiet "
                "machine, or bless again if it changed for good")


@dataclass(frozen=True)
class BuildVerdict:
    """One build of one partition as a whole."""

    partition: str
    build: str
    environ: str
    values: int  # time and rate values with a reference its level was taken over
    factor: float  # its level over the other builds' median (or the median build's)
    tolerance: float
    confirm_factor: float | None = None
    regressed_values: int = 0
    status: Status = Status.PASS  # decided once the confirmation is in (gate.py)
    together: bool = False  # judged against the median build (host.BuildFactors)
    #: each confirmation round's factor, where the verdict pooled them (policy.confirm_*)
    confirm_rounds: tuple[float, ...] = ()
    pooled: float | None = None  # the geometric mean of the session's and the rounds' factors

    @property
    def first_failed(self) -> bool:
        return self.factor > 1 + self.tolerance

    def reason(self) -> str:
        conf = (f"; measured again {self.confirm_factor - 1:+.0%}"
                if self.confirm_factor is not None else "")
        if len(self.confirm_rounds) > 1 and self.pooled is not None:
            each = ", ".join(f"{f - 1:+.0%}" for f in self.confirm_rounds)
            conf = (f"; measured again in {len(self.confirm_rounds)} rounds ({each}), "
                    f"pooled with the session {self.pooled - 1:+.0%}")
        return (f"{self.factor - 1:+.0%} against {host.level_name(self.together)} (median "
                f"over its {self.values} values{conf}; tolerance +{self.tolerance:.0%}); "
                f"{self.regressed_values} of its values named with it")

    def line(self) -> str:
        return f"REGRESSION {self.build} (the whole build, {self.partition}): {self.reason()}"


def slowdown_table(values, samples_of, policy: GatePolicy = DEFAULT_POLICY
                   ) -> dict[str, host.Slowdowns]:
    """{partition: host.Slowdowns} of the values' best samples against their references
    (every time and rate value with a reference, gated or not); every partition of the
    values has one."""
    slow: dict[str, dict[str, dict[str, list[float]]]] = {}
    for v in values:
        xs = samples_of(v)
        by_class = slow.setdefault(v.partition, {})
        if (v.reference and not v.is_share and xs and v.reference > 0
                and best(xs, v.higher_is_better) > 0):
            by_class.setdefault(host.value_class(v.size, v.higher_is_better), {}).setdefault(
                v.environ, []).append(host.slowdown(best(xs, v.higher_is_better),
                                                    v.reference, v.higher_is_better))
    return {part: host.Slowdowns(by_class, policy) for part, by_class in slow.items()}


def hosts(rows: dict[str, host.Slowdowns], names: dict[str, str],
          references: ReferenceSet) -> dict[str, Host]:
    """The host of each partition, with its builds judged as a whole at the blessed build
    tolerances; names: each environ's build name."""
    out = {}
    for part, row in rows.items():
        judged = row.build_factors(partial(references.build_tolerance, part))
        out[part] = Host(part, row.whole.factor,
                         {names[e]: m for e, m in row.whole.medians.items()}, row, judged,
                         references.policy.host_tolerance,
                         class_tolerance=references.policy.host_class_tolerance,
                         together=tuple(names[e] for e in judged.together))
    return out


def build_verdicts(hosts_: dict[str, Host], names: dict[str, str],
                   references: ReferenceSet) -> list[BuildVerdict]:
    """Each build's factor (host.Slowdowns.build_factors, as its Host judged it) for the
    builds of partitions with a host factor and with policy.min_build_values values."""
    return [BuildVerdict(part, names[env], env, len(h.slowdowns.builds.slowdowns[env]),
                         factor, references.build_tolerance(part, env),
                         together=bool(h.judged.together))
            for part, h in hosts_.items() for env, factor in h.judged.factors.items()]
