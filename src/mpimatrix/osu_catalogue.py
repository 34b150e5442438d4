"""The OSU Micro-Benchmarks the checks run, and how to run each.

Seed 002 ran all 41 MPI benchmarks of OSU 5.6.1 (6 point-to-point, 9 one-sided,
13 blocking and 13 non-blocking collectives); osu_init and osu_hello (startup)
come on top. Per benchmark this module knows: its kind (which table it prints
and which performance variables come out of it), how many ranks it takes, the
message sizes per profile (ReFrame mode quick/full), and which options the OSU
version at hand understands (-c validation, -T datatype), measured on OSU 5.6.1,
5.9, 7.1 and 7.4 (see tests/fixtures/osu/README.md).

Performance variables: point-to-point latency at 8 B, bandwidth at 4 MiB; every
collective at a small (8 B) and a large (1 MiB) size, plus the seeds' sizes of
interest (allreduce 4 B, 8 B, 1 KiB, 32 KiB; alltoall 1, 4, 16, 32 KiB, seed
003). The whole curve is kept in the run record (OsuCheck.curve).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KiB, MiB = 1 << 10, 1 << 20
SMALL = 8
LARGE_BW = 4 * MiB  # point-to-point and one-sided: OSU's default maximum
LARGE_COLL = 1 * MiB  # collectives: OSU's default maximum (buffers grow with ranks)


@dataclass(frozen=True)
class Metric:
    name: str  # performance variable name
    column: str  # canonical column key (osu_output.canonical_column)
    size: int | None  # None: single-value output (first row)
    unit: str
    higher_is_better: bool = False


def _lat(size: int, prefix: str = "latency") -> Metric:
    return Metric(f"{prefix}_{human(size)}", "latency", size, "us")


def human(n: int) -> str:
    for unit, scale in (("MiB", MiB), ("KiB", KiB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


KINDS: dict[str, tuple[Metric, ...]] = {
    "latency": (_lat(SMALL),),
    "bandwidth": (Metric("bandwidth_4MiB", "bandwidth", LARGE_BW, "MB/s", True),),
    "mbw_mr": (Metric("bandwidth_4MiB", "bandwidth", LARGE_BW, "MB/s", True),
               Metric("message_rate_8B", "message_rate", SMALL, "msg/s", True)),
    "atomic": (Metric("latency", "latency", None, "us"),),
    "coll": (_lat(SMALL), _lat(LARGE_COLL)),
    "coll_unsized": (Metric("latency", "latency", None, "us"),),
    "nbc": (Metric("pure_comm_8B", "pure_comm", SMALL, "us"),
            Metric("pure_comm_1MiB", "pure_comm", LARGE_COLL, "us"),
            Metric("overlap_1MiB", "overlap", LARGE_COLL, "%", True)),
    "nbc_unsized": (Metric("pure_comm", "pure_comm", None, "us"),
                    Metric("overlap", "overlap", None, "%", True)),
    "init": (Metric("init_avg", "avg", None, "ms"), Metric("init_max", "max", None, "ms")),
    "hello": (),
}

#: The seeds' sizes of interest, on top of the kind's metrics.
EXTRA_SIZES = {
    "allreduce": (4, 1 * KiB, 32 * KiB),  # seed 003 (+ 8 B, already there)
    "alltoall": (1 * KiB, 4 * KiB, 16 * KiB, 32 * KiB),  # seed 003
}

# Rank rules: "pair" exactly 2; "pairs" an even count (OSU pairs ranks up; the
# checks keep them on the point-to-point layouts); "any" 2 or more; "startup" 1+.
RANKS = ("pair", "pairs", "any", "startup")

#: Benchmarks whose message sizes count elements of 4 bytes (MPI_FLOAT in 5.x;
#: 7.x is told -T mpi_float so that both versions reduce the same data).
REDUCTIONS = ("allreduce", "reduce", "reduce_scatter", "iallreduce", "ireduce")

#: Collectives whose buffers grow with the number of ranks.
RANK_SCALED = ("allgather", "allgatherv", "alltoall", "alltoallv", "gather", "gatherv",
               "scatter", "scatterv", "iallgather", "iallgatherv", "ialltoall",
               "ialltoallv", "ialltoallw", "igather", "igatherv", "iscatter", "iscatterv")


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
        base = KINDS[self.kind]
        extra = tuple(_lat(s) for s in EXTRA_SIZES.get(self.name, ()))
        return base + extra

    @property
    def sized(self) -> bool:
        return self.kind not in ("atomic", "coll_unsized", "nbc_unsized", "init", "hello")

    @property
    def element(self) -> int:
        """Smallest message and size granularity in bytes."""
        return 4 if self.name in REDUCTIONS else 1

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


# -- versions ------------------------------------------------------------------------------
def version_tuple(version: str) -> tuple[int, ...]:
    """'5.6.1' -> (5, 6, 1); '7.1-1' -> (7, 1, 1); '' or junk -> ()."""
    return tuple(int(x) for x in re.findall(r"\d+", version or "")[:3])


def version_from_path(path: str) -> str:
    """OSU version from an install path (Spack: .../osu-micro-benchmarks-7.4-<hash>/...)."""
    m = re.search(r"osu-micro-benchmarks[-@](\d+(?:\.\d+)*)", path or "")
    return m.group(1) if m else ""


# First OSU version whose -c validates the benchmark (measured: 5.6.1 rejects -c
# everywhere; 5.9 and 7.x validate point-to-point and collectives; osu_barrier
# and osu_ibarrier have nothing to validate (5.9 prints an empty Validation
# column, 7.x rejects -c); one-sided acc/cas/fop validate from 7.1, but 7.1's
# osu_cas_latency -c segfaults and 7.3 fixed fop validation: used from 7.3;
# osu_latency_mt -c needs equal sender/receiver threads: not used). 5.8 had
# allreduce, reduce and alltoall only (CHANGES; not measured).
_V59 = ("latency", "bw", "bibw", "mbw_mr", "multi_lat",
        *(b.name for b in CATALOGUE if b.kind in ("coll", "nbc")))
VALIDATION_SINCE: dict[str, tuple[int, ...]] = {
    **dict.fromkeys(_V59, (5, 9)),
    **dict.fromkeys(("allreduce", "reduce", "alltoall"), (5, 8)),
    **dict.fromkeys(("acc_latency", "cas_latency", "fop_latency"), (7, 3)),
}
#: -T <datatype> exists from 7.1 on.
DATATYPE_SINCE = (7, 1)


def supports_validation(bench: OsuBenchmark, version: str) -> bool:
    since = VALIDATION_SINCE.get(bench.name)
    v = version_tuple(version)
    return bool(since and v and v >= since)


# -- known problems ------------------------------------------------------------------------
@dataclass(frozen=True)
class KnownIssue:
    """A reproducible fault outside this project, handled explicitly.

    action "no-validation": run without -c (the result stays a performance
    number; `OsuCheck.validation` says why validation is off); "no-finalize":
    accept the launcher's complaint about a rank exiting without MPI_Finalize
    when the table is complete; "env": run with the environment variables
    `env` (a workaround; recorded with the result); "skip": do not run (a
    hang that would only burn the time limit); the test case is reported as
    skipped with the reason.
    """

    benchmarks: tuple[str, ...]
    action: str
    reason: str
    family: str = ""  # build family ("" = any)
    tolerate: tuple[str, ...] = ()  # "no-finalize": runtime messages (regexes) to accept
    mpi_version: str = ""  # regex on the build's version ("" = any)
    osu_versions: tuple[tuple[int, ...], tuple[int, ...]] = ((0,), (99,))  # [min, max]
    provenance: str = ""  # build provenance ("" = any)
    min_nodes: int = 1  # applies to layouts with at least this many nodes
    env: tuple[tuple[str, str], ...] = ()  # "env": variables to set

    def applies(self, bench: str, family: str, mpi_version: str, osu_version: str,
                nodes: int = 1, provenance: str = "") -> bool:
        v = version_tuple(osu_version)
        return (bench in self.benchmarks and nodes >= self.min_nodes
                and (not self.provenance or provenance == self.provenance)
                and (not self.family or family == self.family)
                and (not self.mpi_version or re.match(self.mpi_version, mpi_version) is not None)
                and bool(v) and self.osu_versions[0] <= v <= self.osu_versions[1])


KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue(("acc_latency",), "no-validation",
               "MPICH 4.0.x (Debian, ch4:ucx): MPI_Accumulate(MPI_SUM) leaves the target "
               "unchanged in OSU's -c check at 10-11 of 11 sizes on every run (MPI_CHAR and "
               "MPI_INT; Open MPI 4.1/5.0 and MPICH 5.0 pass); fixture "
               "tests/fixtures/osu/7.4/acc_latency-validation-fail-mpich-4.0.2.out",
               family="mpich", mpi_version=r"4\.0\.", osu_versions=((7, 3), (99,))),
    KnownIssue(("latency_mt",), "no-finalize",
               "OSU 7.4 osu_latency_mt returns from main() without MPI_Finalize: after a "
               "complete table Open MPI's mpirun reports an improper exit (rc 1), Hydra "
               "(MPICH, Intel MPI) often kills the other rank (BAD TERMINATION, signal 9)",
               tolerate=(r"exiting improperly", r"BAD TERMINATION", r"KILLED BY SIGNAL",
                         r"killed by signal", r"Primary job\s+terminated normally"),
               osu_versions=((7, 4), (7, 4, 99))),
    KnownIssue(tuple(b.name for b in CATALOGUE if b.group == "one-sided"), "env",
               "Debian Open MPI 4.1: /etc/openmpi/openmpi-mca-params.conf disables the osc "
               "components pt2pt and ucx, and osc/rdma cannot use the TCP BTL, so "
               "MPI_Win_allocate fails between nodes (MPI_ERR_WIN: invalid window); "
               "OMPI_MCA_osc=pt2pt makes one-sided work there (measured on the emulated "
               "cluster)", family="openmpi", mpi_version=r"4\.", provenance="debian",
               min_nodes=2, env=(("OMPI_MCA_osc", "pt2pt"),)),
    KnownIssue(("init",), "skip",
               "MPICH 4.0.x ch4:ucx over TCP hangs in MPI_Finalize when ranks arrive at "
               "different times (platform notes 6.5; a barrier before MPI_Finalize avoids "
               "it, osu_init has none): rank 0 spun in MPI_Finalize for minutes on the "
               "emulated cluster, 2 nodes", family="mpich", mpi_version=r"4\.0\.",
               provenance="debian", min_nodes=2),
)


def known_issues(bench: OsuBenchmark, family: str, mpi_version: str, osu_version: str,
                 nodes: int = 1, provenance: str = "") -> list[KnownIssue]:
    return [k for k in KNOWN_ISSUES
            if k.applies(bench.name, family, mpi_version, osu_version, nodes, provenance)]


# -- sizes and options -------------------------------------------------------------------------
#: -i/-x for collectives in the quick profile. OSU's -i sets the iterations of
#: small and large messages alike, so it is left to OSU's defaults (latency
#: 10000/1000, bandwidth 100/20 x window 64, collectives 1000/100) wherever the
#: large sizes dominate: point-to-point and one-sided quick runs have one or
#: two sizes only, and full runs are OSU's own sweep.
QUICK_COLL_ITERATIONS = ("-i", "100", "-x", "10")
#: osu_latency_mt busy-polls 1 sender + 2 receiver threads per rank: on small
#: (or shared) nodes one iteration takes milliseconds, and OSU's 10000 take
#: minutes per size (measured: 107 s for the 8 B size alone on 2 cores).
LATENCY_MT_ITERATIONS = {"quick": ("-i", "200", "-x", "20"), "full": ("-i", "1000", "-x", "100")}
PROFILES = ("quick", "full")


def iterations(bench: OsuBenchmark, profile: str) -> tuple[str, ...]:
    if bench.name == "latency_mt":
        return LATENCY_MT_ITERATIONS[profile]
    if profile == "quick" and bench.group in ("collective", "nbc"):
        return QUICK_COLL_ITERATIONS
    return ()


def size_range(bench: OsuBenchmark, profile: str) -> tuple[int, int] | None:
    """(min, max) bytes for -m, or None when the benchmark takes no size."""
    if not bench.sized:
        return None
    if profile == "full":
        top = LARGE_COLL if bench.group in ("collective", "nbc") else LARGE_BW
        return (bench.element, top)
    sizes = [m.size for m in bench.metrics if m.size is not None]
    return (min(sizes), max(sizes))


def expected_sizes(bench: OsuBenchmark, profile: str) -> list[int]:
    """The rows a complete table has (OSU doubles from the minimum)."""
    rng = size_range(bench, profile)
    if rng is None:
        return []
    lo, hi = rng
    lo = max(lo, bench.element)
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= 2
    return out


def options(bench: OsuBenchmark, profile: str, version: str, validate: bool = True) -> list[str]:
    """The OSU command line options for this benchmark, profile and OSU version."""
    if bench.group == "startup":
        return []  # osu_init/osu_hello take no options (7.x rejects -m)
    opts: list[str] = []
    rng = size_range(bench, profile)
    if rng is not None:
        opts += ["-m", f"{rng[0]}:{rng[1]}"]
    opts += list(iterations(bench, profile))
    if bench.group in ("collective", "nbc"):
        opts.append("-f")  # min/max latency, iterations; NBC: init/test/wait too
    if bench.name in REDUCTIONS and version_tuple(version) >= DATATYPE_SINCE:
        opts += ["-T", "mpi_float"]  # 5.x semantics; MPI_CHAR is no type for MPI_SUM
    if validate and supports_validation(bench, version):
        opts.append("-c")
        if bench.group != "one-sided" and version_tuple(version) >= (5, 9):
            # No extra validation warm-up rounds: with OSU's default (-u 5) each
            # timed iteration follows 5 untimed ones, 6x the traffic (measured:
            # osu_mbw_mr 4 MiB 3 min instead of 36 s with -u 0). The timed
            # communication is then the same as without -c.
            opts += ["-u", "0"]
    return opts
