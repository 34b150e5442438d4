"""Reproducible faults outside this project that the OSU checks handle explicitly."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...units import version_tuple
from .catalogue import OsuBenchmark


@dataclass(frozen=True)
class KnownIssue:
    """A reproducible fault outside this project, handled explicitly.

    action "xfail": a fault of the MPI that fails fast; the test runs and is an
    expected failure (ReFrame XFAIL), so a fixed MPI shows up as an unexpected
    pass (XPASS); "tolerate": a fault of the benchmark after its complete
    result: the runtime messages `tolerate` (regexes) and a non-zero exit are
    accepted; "env": run with the environment variables `env` (a workaround;
    recorded with the result); "skip": do not run (a hang that would only burn
    the time limit); the test case is reported as skipped with the reason.
    """

    benchmarks: tuple[str, ...]
    action: str
    reason: str
    family: str = ""  # build family ("" = any)
    tolerate: tuple[str, ...] = ()  # "tolerate": runtime messages (regexes) to accept
    mpi_version: str = ""  # regex on the build's version ("" = any)
    osu_versions: tuple[tuple[int, ...], tuple[int, ...]] = ((0,), (99,))  # [min, max]
    #: regex matched at the start of the build's fabric ("" = any; MPICH: device:netmod,
    #: "ch4:ucx"): a fault belongs to the MPI, whatever the build's name or provenance
    fabric: str = ""
    min_nodes: int = 1  # applies to layouts with at least this many nodes
    env: tuple[tuple[str, str], ...] = ()  # "env": variables to set

    def applies(self, bench: str, family: str, mpi_version: str, osu_version: str,
                nodes: int = 1, fabric: str = "") -> bool:
        v = version_tuple(osu_version)
        return (bench in self.benchmarks and nodes >= self.min_nodes
                and (not self.fabric or re.match(self.fabric, fabric) is not None)
                and (not self.family or family == self.family)
                and (not self.mpi_version or re.match(self.mpi_version, mpi_version) is not None)
                and bool(v) and self.osu_versions[0] <= v <= self.osu_versions[1])


#: MPICH's device ch4 with netmod ucx (alone or among others), the fabric the MPICH
#: 4.0 faults below were measured on (Debian's mpich 4.0.2, UCX 1.13.1 over TCP);
#: builds/known_faults.py matches the same way
MPICH_CH4_UCX = r"ch4:(\w+\+)*ucx\b"

KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue(("acc_latency",), "xfail",
               "MPICH 4.0.x (ch4:ucx): MPI_Accumulate(MPI_SUM) leaves the target "
               "unchanged in OSU's -c check at 10-11 of 11 sizes on every run (MPI_CHAR and "
               "MPI_INT; Open MPI 4.1/5.0 and MPICH 5.0 pass); fixture "
               "tests/fixtures/osu/7.4/acc_latency-validation-fail-mpich-4.0.2.out",
               family="mpich", mpi_version=r"4\.0\.", fabric=MPICH_CH4_UCX,
               osu_versions=((7, 3), (99,))),
    KnownIssue(("latency_mt",), "tolerate",
               "OSU 7.2-7.4 osu_latency_mt returns from main() without MPI_Finalize: after "
               "a complete table Open MPI's mpirun reports an improper exit (rc 1), Hydra "
               "(MPICH, Intel MPI) often kills the other rank (BAD TERMINATION, signal 9)",
               tolerate=(r"exiting improperly", r"BAD TERMINATION", r"KILLED BY SIGNAL",
                         r"killed by signal", r"Primary job\s+terminated normally"),
               osu_versions=((7, 2), (7, 4, 99))),
    KnownIssue(("init",), "skip",
               "MPICH 4.0.x ch4:ucx over TCP hangs in MPI_Finalize when ranks arrive at "
               "different times (osu_init has no barrier before MPI_Finalize): rank 0 spun "
               "in MPI_Finalize for minutes on the emulated cluster, 2 nodes",
               family="mpich", mpi_version=r"4\.0\.", fabric=MPICH_CH4_UCX, min_nodes=2),
)


def known_issues(bench: OsuBenchmark, family: str, mpi_version: str, osu_version: str,
                 nodes: int = 1, fabric: str = "") -> list[KnownIssue]:
    return [k for k in KNOWN_ISSUES
            if k.applies(bench.name, family, mpi_version, osu_version, nodes, fabric)]
