"""Faults of an MPI that show in any program, recognised by how a job ended.

A test case that ends with a known fault's signature is an expected failure (ReFrame
XFAIL, its own count in the session's summary line): it does not turn the night red,
and the night's red stays for what is new. Faults of one benchmark are in the suites'
tables (suites/osu/known_issues.py).

A fault belongs to the MPI, not to a build's name or to where the build came from: it
matches the MPI's family, its version and, where the evidence ties it to one device or
network module, the build's fabric. Debian's MPICH found on the machine, the same
MPICH as a Spack external and an MPICH of that version built by Spack with that fabric
all match; a build whose record does not name its fabric does not match a fault that
needs one (its hang fails as new rather than being excused on a guess).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .record import BuildRecord

#: The job went on after the program had printed all of its results and was cancelled
#: (or ran into its time limit): a hang on the way out, in MPI_Finalize.
HANG_AFTER_RESULTS = "hang-after-results"
#: The MPI-IO layer asked the file system for an fcntl lock and got none (ROMIO's "File
#: locking failed in ADIOI_..."), and aborted (reframe_checks/mpiio.py).
FILE_LOCKS_REFUSED = "file-locks-refused"


@dataclass(frozen=True)
class KnownFault:
    signature: str  # how the job ended, e.g. HANG_AFTER_RESULTS
    reason: str  # shown with the expected failure
    family: str  # the MPI family (builds/families.py)
    mpi_version: str = ""  # regex matched at the start of the build's version ("" = any)
    #: regex matched at the start of the build's fabric ("" = any): MPICH records name
    #: it device:netmod ("ch4:ucx", "ch3:tcp"; ch4 with several netmods "ch4:ucx+ofi")
    fabric: str = ""
    min_nodes: int = 1  # applies to placements with at least this many nodes
    evidence: str = ""  # where it was measured and how, for the reader of this table

    def applies(self, build: BuildRecord, nodes: int, signature: str) -> bool:
        return (signature == self.signature and nodes >= self.min_nodes
                and build.family == self.family
                and (not self.mpi_version
                     or re.match(self.mpi_version, build.version) is not None)
                and (not self.fabric or re.match(self.fabric, build.fabric) is not None))


KNOWN_FAULTS: tuple[KnownFault, ...] = (
    KnownFault(HANG_AFTER_RESULTS,
               "MPICH 4.0.x (ch4:ucx) hangs in MPI_Finalize between nodes: it "
               "disconnects its UCX endpoints before the PMI barrier, and a rank waiting "
               "in that barrier stops progressing the endpoint its peer is still closing "
               "(3-10 % of runs on 2 nodes, up to 68 % on 4 nodes x 2 ranks, under srun "
               "and under Hydra alike)",
               family="mpich", mpi_version=r"4\.0\.",
               # The disconnect-then-barrier order is ch4:ucx's finalize: netmod ucx of
               # device ch4 (ch3 and ch4:ofi have no UCX endpoints to close). Later
               # MPICH moved the PMI barrier before the disconnects.
               fabric=r"ch4:(\w+\+)*ucx\b", min_nodes=2,
               evidence="Debian mpich 4.0.2-3 (ch4:ucx, UCX 1.13.1 over TCP) on the "
                        "emulated cluster, 2026-11-23: measure/hang_rates.py, 40 runs "
                        "per layout and launcher, and gdb of a hung pair (one rank in the "
                        "PMI barrier's read, the other in ucp_worker_progress waiting for "
                        "its disconnect); no UCX setting helped. docs/cluster.md, "
                        "'Known MPI hangs and crashes'"),
    KnownFault(FILE_LOCKS_REFUSED,
               "ROMIO, MPICH's MPI-IO, locks the byte range of a data-sieving write (a "
               "noncontiguous write it turns into read-modify-write: a strided file view "
               "on one file per process) with fcntl, and aborts on a file system that "
               "gives no fcntl locks (NFS without lockd, Lustre without flock): a limit "
               "of the site's file system for MPICH's MPI-IO (hint romio_ds_write=disable "
               "avoids the lock); Open MPI's OMPIO writes the same without locks",
               family="mpich", mpi_version=r"(4\.0|5\.0)\.",
               evidence="Debian mpich 4.0.2-3 and the PyPI mpich 5.0.2 wheel on a FUSE "
                        "file system whose fcntl locks fail with ENOLCK "
                        "(tests/fixtures/mpiio/nolockfs.py), 2026-12-06: perfile-strided "
                        "aborted in ADIOI_GEN_SetLock, the other five ways of writing "
                        "passed; Open MPI 4.1.4 and 5.0.11 passed all six (docs/mpiio.md)"),
    KnownFault(FILE_LOCKS_REFUSED,
               "Intel MPI's ROMIO locks every MPI-IO write with fcntl, contiguous ones too "
               "(ADIOI_GEN_SetLockDirect64), and aborts on a file system that gives no "
               "fcntl locks (NFS without lockd, Lustre without flock): a limit of the "
               "site's file system for Intel MPI's MPI-IO",
               family="impi", mpi_version=r"2021\.",
               evidence="the PyPI impi 2021.18.1 wheel on the FUSE file system without "
                         "locks (tests/fixtures/mpiio/nolockfs.py), 2026-12-06: all four "
                         "MPI-IO ways of writing (shared and perfile, contiguous and "
                         "strided) aborted, gather (POSIX) passed (docs/mpiio.md)"),
)


def known_fault(build: BuildRecord, nodes: int, signature: str) -> KnownFault | None:
    """The known fault of this build's MPI that a job ending with `signature` shows,
    if any."""
    return next((f for f in KNOWN_FAULTS if f.applies(build, nodes, signature)), None)
