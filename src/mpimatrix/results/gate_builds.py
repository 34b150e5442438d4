"""The gate above single values: the host of each partition, and each build as a whole.

A build's factor is the median over its gated time and rate values of how much
slower than its reference each ran (host.py), against the least-slowed build. It has far
less noise than any one value: on this project's 2-core VM the builds left alone
stayed within -7 % .. +1 % of their references against the host while single values
moved by 10-30 %, so a build slowed by 10-25 % everywhere is found even where its
values' own tolerances let each of them pass. A build is a regression when its
factor is beyond the build tolerance (from its spread over the blessed sessions,
written by bless as `$builds` in the statistics file) in the session and again in
the confirmation.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import host
from .statistics import best

#: Every build this much slower than its references at once: reported (the machine).
HOST_TOLERANCE = 0.1
#: A build's tolerance when the statistics file has none for it (samples.BUILD_FLOOR).
DEFAULT_BUILD_TOLERANCE = 0.15
#: The key of the build statistics in the statistics file.
BUILDS_KEY = "$builds"


@dataclass
class Host:
    """The host factor of one partition in a session."""

    partition: str
    factor: float | None
    builds: dict[str, float]  # each build's median slowdown (not against the host)
    confirm_factor: float | None = None

    @property
    def least(self) -> float | None:
        """The least-slowed build's median slowdown (builds are judged against it), where
        there is a host factor (host.least)."""
        return min(self.builds.values()) if self.factor is not None else None

    @property
    def slow(self) -> bool:
        return self.factor is not None and self.factor > 1 + HOST_TOLERANCE

    def line(self) -> str:
        each = ", ".join(f"{b} {f:.2f}" for b, f in sorted(self.builds.items()))
        return (f"HOST {self.partition}: every build {self.factor - 1:+.0%} against its "
                f"references at once (median slowdown per build: {each}); values were "
                "judged against the host. The machine, not a build: run again on a quiet "
                "machine, or bless again if it changed for good")


@dataclass
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


def slowdowns(values, samples_of) -> dict[str, dict[str, dict[str, list[float]]]]:
    """{partition: {build: {environ: [slowdown of each gated time/rate value]}}} of the
    values' best samples against their references."""
    out: dict = {}
    for v in values:
        xs = samples_of(v)
        by_build = out.setdefault(v.partition, {})
        if v.host_judged and xs and v.reference > 0 and best(xs, v.higher_is_better) > 0:
            by_build.setdefault(v.build, {}).setdefault(v.environ, []).append(
                host.slowdown(best(xs, v.higher_is_better), v.reference, v.higher_is_better))
    return out


def hosts(slow: dict) -> dict[str, Host]:
    out = {}
    for part, by_build in slow.items():
        flat = {b: [x for xs in envs.values() for x in xs] for b, envs in by_build.items()}
        out[part] = Host(part, host.factor(flat), host.build_factors(flat))
    return out


def build_verdicts(slow: dict, hosts_: dict[str, Host], stats: dict | None
                   ) -> list[BuildVerdict]:
    """Each build's factor against its partition's least-slowed build (builds of
    partitions with a host factor and with host.MIN_BUILD_VALUES values)."""
    out = []
    for part, by_build in slow.items():
        h = host.judging(hosts_[part].least)
        if h is None:
            continue
        for build, envs in by_build.items():
            for env, xs in envs.items():
                if (factor := host.build_factor(xs, h)) is not None:
                    out.append(BuildVerdict(part, build, env, len(xs), factor,
                                            build_tolerance(stats, part, env)))
    return out


def build_tolerance(stats: dict | None, partition: str, environ: str) -> float:
    rec = (((stats or {}).get(BUILDS_KEY) or {}).get(partition) or {}).get(environ) or {}
    tol = rec.get("tolerance") if isinstance(rec, dict) else None
    return float(tol) if isinstance(tol, int | float) and tol > 0 else DEFAULT_BUILD_TOLERANCE
