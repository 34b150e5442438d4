"""The OSU Micro-Benchmarks the checks run: kind, ranks and metrics of each.

The studies this suite replaces ran all 41 MPI benchmarks of OSU 5.6.1 (6
point-to-point, 9 one-sided, 13 blocking and 13 non-blocking collectives);
osu_init and osu_hello (startup) come on top. Per benchmark this module knows
its kind (which table it prints and which performance variables come out of
it) and how many ranks it takes; options.py knows the sizes and options per
profile and OSU version, known_issues.py the faults of MPIs and OSU versions.

Performance variables: point-to-point latency at 8 B, bandwidth at 4 MiB; every
collective at a small (8 B) and a large (1 MiB) size, plus the sizes of
interest of the collective scaling studies (allreduce 4 B, 8 B, 1 KiB, 32 KiB:
checksums and the Ring/Recursive-Doubling switch; alltoall 1, 4, 16, 32 KiB).
The whole curve is kept in the run record (OsuCheck.curve).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...units import SHARE_UNIT, KiB, MiB, human_size
from ..common import Metric, is_reduction

SMALL = 8
LARGE_BW = 4 * MiB  # point-to-point and one-sided: OSU's default maximum
LARGE_COLL = 1 * MiB  # collectives: OSU's default maximum (buffers grow with ranks)


def _m(quantity: str, size: int | None, unit: str = "us", better_higher: bool = False,
       name: str = "") -> Metric:
    """A metric on the canonical column `quantity` (output.canonical_column)."""
    name = name or (quantity if size is None else f"{quantity}_{human_size(size)}")
    return Metric(name, quantity, (quantity,), size, unit, better_higher)


def _lat(size: int) -> Metric:
    return _m("latency", size)


#: Performance variables per kind of OSU output.
METRICS_OF_KIND: dict[str, tuple[Metric, ...]] = {
    "latency": (_lat(SMALL),),
    "bandwidth": (_m("bandwidth", LARGE_BW, "MB/s", True),),
    "mbw_mr": (_m("bandwidth", LARGE_BW, "MB/s", True),
               _m("message_rate", SMALL, "msg/s", True)),
    "atomic": (_m("latency", None),),
    "coll": (_lat(SMALL), _lat(LARGE_COLL)),
    "coll_unsized": (_m("latency", None),),
    "nbc": (_m("pure_comm", SMALL), _m("pure_comm", LARGE_COLL),
            _m("overlap", LARGE_COLL, SHARE_UNIT, True)),
    "nbc_unsized": (_m("pure_comm", None), _m("overlap", None, SHARE_UNIT, True)),
    "init": (_m("avg", None, "ms", name="init_avg"), _m("max", None, "ms", name="init_max")),
    "hello": (),
}

#: Sizes of interest of the collective scaling studies, on top of the kind's metrics.
EXTRA_SIZES = {
    "allreduce": (4, 1 * KiB, 32 * KiB),  # + 8 B, already there
    "alltoall": (1 * KiB, 4 * KiB, 16 * KiB, 32 * KiB),
}

# Rank rules: "pair" exactly 2; "pairs" an even count (OSU pairs ranks up; the
# checks keep them on the point-to-point layouts); "any" 2 or more; "startup" 1+.
RANKS = ("pair", "pairs", "any", "startup")

@dataclass(frozen=True)
class OsuBenchmark:
    name: str  # without osu_: "latency", "allreduce", ...
    group: str  # pt2pt, one-sided, collective, nbc, startup (7.x: install subdir)
    kind: str
    ranks: str = "any"
    quick: bool = False

    @property
    def binary(self) -> str:
        return f"osu_{self.name}"

    @property
    def metrics(self) -> tuple[Metric, ...]:
        base = METRICS_OF_KIND[self.kind]
        extra = tuple(_lat(s) for s in EXTRA_SIZES.get(self.name, ()))
        return base + extra

    @property
    def sized(self) -> bool:
        return self.kind not in ("atomic", "coll_unsized", "nbc_unsized", "init", "hello")

    @property
    def element(self) -> int:
        """Smallest message and size granularity in bytes: reductions count 4-byte
        elements (MPI_FLOAT in 5.x; 7.x is told -T mpi_float so both reduce the same data)."""
        return 4 if is_reduction(self.name) else 1

    def fits(self, ranks: int) -> bool:
        if self.ranks in ("pair", "pairs"):
            return ranks == 2
        if self.ranks == "startup":
            return ranks >= 1
        return ranks >= 2


def _b(name, group, kind, **kw) -> OsuBenchmark:
    return OsuBenchmark(name, group, kind, **kw)


CATALOGUE: tuple[OsuBenchmark, ...] = (
    # point-to-point (6)
    _b("latency", "pt2pt", "latency", ranks="pair", quick=True),
    _b("bw", "pt2pt", "bandwidth", ranks="pair", quick=True),
    _b("bibw", "pt2pt", "bandwidth", ranks="pair", quick=True),
    _b("latency_mt", "pt2pt", "latency", ranks="pair"),
    _b("mbw_mr", "pt2pt", "mbw_mr", ranks="pairs", quick=True),
    _b("multi_lat", "pt2pt", "latency", ranks="pairs"),
    # one-sided (9)
    _b("acc_latency", "one-sided", "latency", ranks="pair"),
    _b("cas_latency", "one-sided", "atomic", ranks="pair", quick=True),
    _b("fop_latency", "one-sided", "atomic", ranks="pair"),
    _b("get_acc_latency", "one-sided", "latency", ranks="pair"),
    _b("get_bw", "one-sided", "bandwidth", ranks="pair", quick=True),
    _b("get_latency", "one-sided", "latency", ranks="pair"),
    _b("put_bibw", "one-sided", "bandwidth", ranks="pair"),
    _b("put_bw", "one-sided", "bandwidth", ranks="pair"),
    _b("put_latency", "one-sided", "latency", ranks="pair", quick=True),
    # blocking collectives (13)
    _b("allgather", "collective", "coll"),
    _b("allgatherv", "collective", "coll", quick=True),
    _b("allreduce", "collective", "coll", quick=True),
    _b("alltoall", "collective", "coll", quick=True),
    _b("alltoallv", "collective", "coll"),
    _b("barrier", "collective", "coll_unsized", quick=True),
    _b("bcast", "collective", "coll", quick=True),
    _b("gather", "collective", "coll"),
    _b("gatherv", "collective", "coll"),
    _b("reduce", "collective", "coll"),
    _b("reduce_scatter", "collective", "coll"),
    _b("scatter", "collective", "coll"),
    _b("scatterv", "collective", "coll"),
    # non-blocking collectives (13)
    *(_b(n, "nbc", "nbc", quick=n in ("iallreduce", "ialltoall")) for n in (
        "iallgather", "iallgatherv", "iallreduce", "ialltoall", "ialltoallv", "ialltoallw")),
    _b("ibarrier", "nbc", "nbc_unsized", quick=True),
    *(_b(n, "nbc", "nbc") for n in (
        "ibcast", "igather", "igatherv", "ireduce", "iscatter", "iscatterv")),
    # startup (2)
    _b("init", "startup", "init", ranks="startup", quick=True),
    _b("hello", "startup", "hello", ranks="startup", quick=True),
)

BY_NAME = {b.name: b for b in CATALOGUE}
SEED_002 = tuple(b.name for b in CATALOGUE if b.group != "startup")  # the 41




def version_from_path(path: str) -> str:
    """OSU version from an install path (Spack: .../osu-micro-benchmarks-7.4-<hash>/...)."""
    m = re.search(r"osu-micro-benchmarks[-@](\d+(?:\.\d+)*)", path or "")
    return m.group(1) if m else ""
