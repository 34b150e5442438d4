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

from dataclasses import dataclass
from functools import partial

from . import host
from .host import Host
from .policy import DEFAULT_POLICY, GatePolicy
from .reference_set import ReferenceSet
from .statistics import best
from .status import Status


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
