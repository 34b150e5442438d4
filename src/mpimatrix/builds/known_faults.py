"""Faults of an MPI build that show in any program, recognised by how a job ended.

A test case that ends with a known fault's signature is an expected failure (ReFrame
XFAIL, its own count in the session's summary line): it does not turn the night red,
and the night's red stays for what is new. Faults of one benchmark are in the suites'
tables (suites/osu/known_issues.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .record import BuildRecord

#: The job went on after the program had printed all of its results and was cancelled
#: (or ran into its time limit): a hang on the way out, in MPI_Finalize.
HANG_AFTER_RESULTS = "hang-after-results"


@dataclass(frozen=True)
class KnownFault:
    signature: str  # how the job ended, e.g. HANG_AFTER_RESULTS
    reason: str
    family: str = ""  # build family ("" = any)
    mpi_version: str = ""  # regex matched at the start of the build's version ("" = any)
    provenance: str = ""  # build provenance ("" = any)
    min_nodes: int = 1  # applies to placements with at least this many nodes

    def applies(self, build: BuildRecord, nodes: int, signature: str) -> bool:
        return (signature == self.signature and nodes >= self.min_nodes
                and (not self.family or build.family == self.family)
                and (not self.provenance or build.provenance == self.provenance)
                and (not self.mpi_version
                     or re.match(self.mpi_version, build.version) is not None))


KNOWN_FAULTS: tuple[KnownFault, ...] = (
    KnownFault(HANG_AFTER_RESULTS,
               "MPICH 4.0.x (Debian, ch4:ucx with UCX 1.13 over TCP) hangs in MPI_Finalize "
               "between nodes (3-10 % of runs on 2 nodes, up to 68 % on 4 nodes x 2 "
               "ranks), under srun and under Hydra alike: it "
               "disconnects its UCX endpoints before the PMI barrier, and a rank waiting "
               "in that barrier stops progressing the endpoint its peer is still closing",
               family="mpich", mpi_version=r"4\.0\.", provenance="debian", min_nodes=2),
)


def known_fault(build: BuildRecord, nodes: int, signature: str) -> KnownFault | None:
    """The known fault of this build that a job ending with `signature` shows, if any."""
    return next((f for f in KNOWN_FAULTS if f.applies(build, nodes, signature)), None)
