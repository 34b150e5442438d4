"""The IMB benchmarks the checks run, and the performance variables of each.

Sizes of interest: point-to-point latency at 8 B and bandwidth at 4 MiB;
collectives t_avg at 8 B and 1 MiB. The whole size curve is kept in the run
record besides these variables.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...units import SHARE_UNIT, KiB, MiB, human_size
from ..common import Metric, is_reduction

SMALL, LARGE_COLL, LARGE_BW = 8, 1 * MiB, 4 * MiB

# Message sizes per profile (ReFrame mode): quick = a few sizes, full = the
# whole 1 B .. 4 MiB sweep. Both contain the sizes of the performance variables.
SIZES = {
    "quick": [SMALL, 1 * KiB, 64 * KiB, LARGE_COLL, LARGE_BW],
    "full": [1 << i for i in range(0, 23)],
}
# -iter / -time per profile. 2000 repetitions (at most 400 MB per size, so 100 at
# 4 MiB): with IMB's default 1000 (40 MB), or the 200 used before, Intel MPI's
# 8 B PingPong reported a start-up transient (2.8 us instead of 0.19) and the
# run-to-run spread of the quick catalogue on a 2-core VM was 16 % (robust CV,
# median over values) instead of 11 %, at no measurable cost in run time (a
# quick session is dominated by launches). -time is IMB's budget per size.
ITERATIONS = {
    "quick": ["-iter", "2000,400", "-time", "2"],
    "full": ["-iter", "2000,400", "-time", "10"],
}

# Latency-like column: the first of these a table has.
LAT = ("t_avg[usec]", "t[usec]", "t_pure[usec]")


def _m(quantity: str, columns: tuple[str, ...], size: int | None, unit: str = "us",
       better_higher: bool = False) -> Metric:
    name = quantity if size is None else f"{quantity}_{human_size(size)}"
    return Metric(name, quantity, columns, size, unit, better_higher)


#: Performance variables per kind of IMB table.
METRICS_OF_KIND = {
    "p2p": (_m("latency", LAT, SMALL), _m("bandwidth", ("Mbytes/sec",), LARGE_BW, "MB/s", True)),
    "coll": (_m("t_avg", LAT, SMALL), _m("t_avg", LAT, LARGE_COLL)),
    "unsized": (_m("t_avg", LAT, None),),
    "nbc": (_m("t_pure", ("t_pure[usec]",), SMALL), _m("t_pure", ("t_pure[usec]",), LARGE_COLL),
            _m("overlap", ("overlap[%]",), LARGE_COLL, SHARE_UNIT, True)),
    "nbc_unsized": (_m("t_pure", ("t_pure[usec]",), None),
                    _m("overlap", ("overlap[%]",), None, SHARE_UNIT, True)),
    "atomic": (_m("latency", ("t[usec]",), None),),
    "passive": (_m("t_pure", ("t_pure[usec]",), SMALL), _m("t_ovrl", ("t_ovrl[usec]",), SMALL)),
    # IMB-IO: the time of an 8 B access and the bandwidth at 4 MiB (t[usec] in the
    # single-process S_ tables, t_avg[usec] in the P_ and C_ ones).
    "io": (_m("t_avg", LAT, SMALL), _m("bandwidth", ("Mbytes/sec",), LARGE_BW, "MB/s", True)),
}


@dataclass(frozen=True)
class ImbBenchmark:
    suite: str  # MPI1, P2P, NBC, RMA, EXT, IO -> binary IMB-<suite>
    name: str
    kind: str
    min_ranks: int = 2
    max_ranks: int | None = None  # PingPong & co. use exactly 2 ranks
    quick: bool = False
    modes: tuple[str, ...] = ()  # RMA/EXT/IO modes the table comes in; metrics use the first
    # Reductions work on MPI_FLOAT: IMB rounds every size up to a multiple of 4 B.
    elem_size: int = 1
    #: IMB-IO's S_ benchmarks: one process accesses the file, the others wait in a
    #: barrier; the table says "#processes = 1" whatever the rank count
    single: bool = False

    @property
    def key(self) -> str:
        return f"{self.suite}:{self.name}"

    @property
    def binary(self) -> str:
        return f"IMB-{self.suite}"

    @property
    def metrics(self) -> tuple[Metric, ...]:
        return METRICS_OF_KIND[self.kind]

    @property
    def sized(self) -> bool:
        return self.kind not in ("unsized", "nbc_unsized", "atomic")

    def table_procs(self, ranks: int) -> int:
        """The "#processes" of this benchmark's table on `ranks` ranks."""
        return 1 if self.single else ranks

    def iterations(self, profile: str) -> list[str]:
        """-iter and -time of a profile (ITERATIONS), with this suite's NON-AGGREGATE
        message count if it has its own (NONAGGR_MESSAGES)."""
        opts = list(ITERATIONS[profile])
        n = NONAGGR_MESSAGES.get(self.suite)
        if n and "-iter" in opts:
            i = opts.index("-iter") + 1
            opts[i] = f"{opts[i]},{n}"
        return opts

    def table_sizes(self, sizes: list[int]) -> list[int]:
        """The sizes IMB prints for the requested ones."""
        e = self.elem_size
        return sorted({max(e, -(-s // e) * e) for s in sizes})


def _b(suite, name, kind, **kw):
    kw.setdefault("elem_size", 4 if is_reduction(name) else 1)
    return ImbBenchmark(suite, name, kind, **kw)


RMA_MODES = ("NON-AGGREGATE", "AGGREGATE")
#: IMB-IO's modes, AGGREGATE first (the metrics' table): NON-AGGREGATE syncs the file
#: after every access, which measures the disk's flush more than MPI-IO.
IO_MODES = ("AGGREGATE", "NON-AGGREGATE")
#: The IMB-IO benchmarks a site gates: each file access (S_ one process on its own
#: file, P_ every process, C_ collective) written and read, through the individual file
#: pointer (indv), the shared one (shared) and each process's own file (priv). The
#: nonblocking (S_IWrite_...), explicit-offset (_expl) and Open_Close ones are left.
IO_BENCHMARKS = ("S_Write_Indv", "S_Read_Indv", "P_Write_Indv", "P_Read_Indv",
                 "P_Write_Shared", "P_Read_Shared", "P_Write_Priv", "P_Read_Priv",
                 "C_Write_Indv", "C_Read_Indv", "C_Write_Shared", "C_Read_Shared")
#: Messages per size in IMB-IO's NON-AGGREGATE tables (the third -iter field; IMB's
#: default is 100): every access there is followed by a file sync, 8-30 ms on this
#: machine's disk, so 100 of them per size took one benchmark 30-40 s in the full profile.
NONAGGR_MESSAGES = {"IO": 10}

CATALOGUE: tuple[ImbBenchmark, ...] = (
    # IMB-MPI1: the 19 default benchmarks
    _b("MPI1", "PingPong", "p2p", max_ranks=2, quick=True),
    _b("MPI1", "PingPing", "p2p", max_ranks=2),
    _b("MPI1", "Sendrecv", "p2p", quick=True),
    _b("MPI1", "Exchange", "p2p"),
    _b("MPI1", "Allreduce", "coll", quick=True),
    _b("MPI1", "Reduce", "coll"),
    _b("MPI1", "Reduce_local", "coll"),
    _b("MPI1", "Reduce_scatter", "coll", quick=True),
    _b("MPI1", "Reduce_scatter_block", "coll"),
    _b("MPI1", "Allgather", "coll"),
    _b("MPI1", "Allgatherv", "coll", quick=True),
    _b("MPI1", "Gather", "coll", quick=True),
    _b("MPI1", "Gatherv", "coll"),
    _b("MPI1", "Scatter", "coll"),
    _b("MPI1", "Scatterv", "coll"),
    _b("MPI1", "Alltoall", "coll", quick=True),
    _b("MPI1", "Alltoallv", "coll"),
    _b("MPI1", "Bcast", "coll", quick=True),
    _b("MPI1", "Barrier", "unsized", quick=True),
    # IMB-P2P
    _b("P2P", "PingPong", "p2p", quick=True),
    _b("P2P", "PingPing", "p2p"),
    _b("P2P", "Unirandom", "p2p"),
    _b("P2P", "Birandom", "p2p"),
    _b("P2P", "Corandom", "p2p"),
    _b("P2P", "Stencil2D", "p2p", min_ranks=4),
    _b("P2P", "Stencil3D", "p2p", min_ranks=8),
    _b("P2P", "SendRecv_Replace", "p2p"),
    # IMB-NBC (the default, overlapping variants)
    *(_b("NBC", n, "nbc", quick=n in ("Iallreduce", "Ibcast")) for n in (
        "Iallgather", "Iallgatherv", "Iallreduce", "Ialltoall", "Ialltoallv", "Ibcast",
        "Igather", "Igatherv", "Ireduce", "Ireduce_scatter", "Iscatter", "Iscatterv")),
    _b("NBC", "Ibarrier", "nbc_unsized"),
    # IMB-RMA (the default set)
    *(_b("RMA", n, "p2p", modes=RMA_MODES, quick=n == "Unidir_put") for n in (
        "Unidir_put", "Unidir_get", "Bidir_put", "Bidir_get", "Put_local", "Accumulate",
        "Get_accumulate")),
    *(_b("RMA", n, "coll") for n in (
        "Put_all_local", "One_put_all", "One_get_all", "All_put_all", "All_get_all",
        "Exchange_put", "Exchange_get")),
    _b("RMA", "Compare_and_swap", "atomic", modes=RMA_MODES, quick=True),
    _b("RMA", "Fetch_and_op", "atomic", modes=RMA_MODES),
    _b("RMA", "Truly_passive_put", "passive"),
    # IMB-EXT (MPI-2 one-sided; names as IMB prints them). IMB rounds every size up to
    # a multiple of 4 B. Unidir/Bidir are between two processes.
    *(_b("EXT", n, "p2p", modes=RMA_MODES, max_ranks=2, elem_size=4) for n in (
        "Unidir_Put", "Unidir_Get", "Bidir_Put", "Bidir_Get")),
    _b("EXT", "Accumulate", "coll", modes=RMA_MODES, elem_size=4),
    _b("EXT", "Window", "coll", elem_size=4),
    # IMB-IO (MPI-IO): files in the working directory, ReFrame's stage directory
    # (a Read prints an AGGREGATE table only)
    *(_b("IO", n, "io", modes=IO_MODES if "_Write_" in n else IO_MODES[:1],
         single=n.startswith("S_")) for n in IO_BENCHMARKS),
)

BY_KEY = {b.key: b for b in CATALOGUE}
