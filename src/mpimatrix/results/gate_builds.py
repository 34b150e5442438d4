"""The gate above single values: the host of each partition, and each build as a whole.

A build's factor is the median over its gated time and rate values of how much
slower than its reference each ran (host.py), against the least-slowed build. A median
over many values has far less noise than any one of them, so a build slowed by 10-25 %
everywhere is found even where each value's own tolerance lets it pass
(docs/validation.md). A build is a regression when its
factor is beyond the build tolerance (from its spread over the blessed sessions,
written by bless as `$builds` in the statistics file) in the session and again in
the confirmation.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import host
from .policy import DEFAULT_POLICY, GatePolicy
from .reference_set import ReferenceSet
from .statistics import best


@dataclass(frozen=True)
class Host:
    """The host factor of one partition in a session."""

    partition: str
    factor: float | None
    builds: dict[str, float]  # each build's median slowdown (not against the host)
    tolerance: float = DEFAULT_POLICY.host_tolerance  # slower than this: a HOST line
    confirm_factor: float | None = None

    @property
    def least(self) -> float | None:
        """The least-slowed build's median slowdown (builds are judged against it), where
        there is a host factor (host.HostRow.least)."""
        return min(self.builds.values()) if self.factor is not None else None

    @property
    def slow(self) -> bool:
        return self.factor is not None and self.factor > 1 + self.tolerance

    def line(self) -> str:
        assert self.factor is not None  # a slow host's line (summary.host_lines)
        each = ", ".join(f"{b} {f:.2f}" for b, f in sorted(self.builds.items()))
        return (f"HOST {self.partition}: every build {self.factor - 1:+.0%} against its "
                f"references at once (median slowdown per build: {each}); values were "
                "judged against the host. The machine, not a build: run again on a quiet "
                "machine, or bless again if it changed for good")


@dataclass(frozen=True)
class BuildVerdict:
    """One build of one partition as a whole."""

    partition: str
    build: str
    environ: str
    values: int  # gated time and rate values of the build
    factor: float  # median slowdown against the least-slowed build (host.judging)
    tolerance: float
    confirm_factor: float | None = None
    regressed_values: int = 0
    status: str = ""

    @property
    def first_failed(self) -> bool:
        return self.factor > 1 + self.tolerance

    def reason(self) -> str:
        conf = (f"; measured again {self.confirm_factor - 1:+.0%}"
                if self.confirm_factor is not None else "")
        return (f"{self.factor - 1:+.0%} against the least-slowed build (median over "
                f"its {self.values} gated values{conf}; tolerance +{self.tolerance:.0%}); "
                f"{self.regressed_values} of its values named with it")

    def line(self) -> str:
        return f"REGRESSION {self.build} (the whole build, {self.partition}): {self.reason()}"


def slowdown_table(values, samples_of, policy: GatePolicy = DEFAULT_POLICY
                   ) -> dict[str, host.HostRow]:
    """{partition: host.HostRow} of the slowdowns of the values' best samples against
    their references (gated times and rates); every partition of the values has a row."""
    slow: dict[str, dict[str, list[float]]] = {}
    for v in values:
        xs = samples_of(v)
        by_env = slow.setdefault(v.partition, {})
        if v.host_judged and xs and v.reference > 0 and best(xs, v.higher_is_better) > 0:
            by_env.setdefault(v.environ, []).append(
                host.slowdown(best(xs, v.higher_is_better), v.reference, v.higher_is_better))
    return host.table(slow, policy)


def hosts(rows: dict[str, host.HostRow], names: dict[str, str],
          policy: GatePolicy = DEFAULT_POLICY) -> dict[str, Host]:
    """The host of each partition; names: each environ's build name."""
    return {part: Host(part, row.factor, {names[e]: m for e, m in row.medians.items()},
                       policy.host_tolerance)
            for part, row in rows.items()}


def build_verdicts(rows: dict[str, host.HostRow], names: dict[str, str],
                   references: ReferenceSet) -> list[BuildVerdict]:
    """Each build's factor against its partition's least-slowed build (builds of
    partitions with a host factor and with policy.min_build_values values)."""
    out = []
    for part, row in rows.items():
        least = host.judging(row.least)
        if least is None:
            continue
        for env, xs in row.slowdowns.items():
            if (factor := row.build_factor(env, least)) is not None:
                out.append(BuildVerdict(part, names[env], env, len(xs), factor,
                                        references.build_tolerance(part, env)))
    return out

