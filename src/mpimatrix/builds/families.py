"""What mpimatrix knows per MPI family, in one table.

Every source of builds (discovery, a Spack lock, a builds file) takes launcher
names, launcher style, run-time environment and the PMI wire protocol from
here, so that two sources never describe the same MPI differently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Open MPI refuses to run as root and to oversubscribe unless told; both are
# harmless for normal users and needed on 2-core CI machines run as root.
OPENMPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
}


@dataclass(frozen=True)
class Family:
    name: str
    #: launcher program in the build's bin/ (Spack prefixes, PyPI wheels)
    launcher: str
    #: how placement flags are spelled: "openmpi" (mpirun --map-by) or "hydra" (-ppn)
    launcher_style: str
    #: regex MPI_Get_library_version() matches first ({v} = the version)
    library_version: str
    #: libmpi.so.12 speaks the MPICH ABI: binaries linked against one run on the others
    mpich_abi: bool
    #: the PMI wire protocol a default build speaks: pmix, pmi1 (MPICH's simple PMI), pmi2
    pmi: str
    #: variables that choose the compiler behind the wrappers (C, C++)
    compiler_vars: tuple[str, str] = ("", "")
    env: dict[str, str] = field(default_factory=dict)

    def library_version_regex(self, version: str) -> str:
        """The library's own version is the release's numbers: a package version carries
        more (MVAPICH2 2.3.7-1 reports 2.3.7; Spack's 2.3.7-1-kit is that release)."""
        release = re.match(r"\d+(?:\.\d+)*", version)
        return self.library_version.format(v=re.escape(release.group(0) if release
                                                       else version))


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("openmpi", "mpirun", "openmpi", r"Open MPI v{v}\b", False, "pmix",
           ("OMPI_CC", "OMPI_CXX"), OPENMPI_ENV),
    Family("mpich", "mpiexec", "hydra", r"MPICH Version:\s+{v}\b", True, "pmi1",
           ("MPICH_CC", "MPICH_CXX")),
    Family("mvapich2", "mpiexec", "hydra", r"MVAPICH2 Version\s*:?\s+{v}", True, "pmi1",
           ("MPICH_CC", "MPICH_CXX")),
    Family("mvapich", "mpiexec", "hydra", r"MVAPICH Version\s*:?\s+{v}", True, "pmi1",
           ("MPICH_CC", "MPICH_CXX")),
    # Intel MPI's Hydra and its libmpi speak PMI-2 to Slurm (I_MPI_PMI2).
    Family("impi", "mpiexec", "hydra", r"Intel\(R\) MPI Library {v}\b", True, "pmi2",
           ("I_MPI_CC", "I_MPI_CXX")),
)}

PROVENANCES = ("debian", "pypi", "spack", "site", "module")
LAUNCHER_STYLES = ("openmpi", "hydra")
PMI_WIRES = ("pmix", "pmi1", "pmi2", "cray")
