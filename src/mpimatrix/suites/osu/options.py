"""How to run each OSU benchmark: message sizes per profile (ReFrame mode quick
or full), iterations, and the options the OSU version at hand understands
(-c validation, -T datatype), measured on OSU 5.6.1, 5.9, 7.1 and 7.4
(tests/fixtures/osu/README.md)."""

from __future__ import annotations

from ...units import doubling_sizes, version_tuple
from ..common import is_reduction
from .catalogue import CATALOGUE, LARGE_BW, LARGE_COLL, OsuBenchmark

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


def size_range(bench: OsuBenchmark, profile: str, max_size: int = 0
               ) -> tuple[int, int] | None:
    """(min, max) bytes for -m, or None when the benchmark takes no size; `max_size`
    extends the full sweep (an acceptance requirement's size beyond it)."""
    if not bench.sized:
        return None
    if profile == "full":
        top = LARGE_COLL if bench.group in ("collective", "nbc") else LARGE_BW
        return (bench.element, max(top, max_size))
    sizes = [m.size for m in bench.metrics if m.size is not None]
    return (min(sizes), max(sizes))


def expected_sizes(bench: OsuBenchmark, profile: str, max_size: int = 0) -> list[int]:
    """The rows a complete table has (OSU doubles from the minimum)."""
    rng = size_range(bench, profile, max_size)
    if rng is None:
        return []
    lo, hi = rng
    return doubling_sizes(max(lo, bench.element), hi)


def options(bench: OsuBenchmark, profile: str, version: str, validate: bool = True,
            max_size: int = 0) -> list[str]:
    """The OSU command line options for this benchmark, profile and OSU version."""
    if bench.group == "startup":
        return []  # osu_init/osu_hello take no options (7.x rejects -m)
    opts: list[str] = []
    rng = size_range(bench, profile, max_size)
    if rng is not None:
        opts += ["-m", f"{rng[0]}:{rng[1]}"]
    opts += list(iterations(bench, profile))
    if bench.group in ("collective", "nbc"):
        opts.append("-f")  # min/max latency, iterations; NBC: init/test/wait too
    if is_reduction(bench.name) and version_tuple(version) >= DATATYPE_SINCE:
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
