"""Launch commands per build, placement and partition.

Local partitions use the build's own launcher with explicit mapping flags.
Slurm partitions launch directly with srun and the build's PMI (Open MPI:
pmix, MPICH family: pmi2), or, with partition extra launch=mpirun, with the
build's launcher inside the allocation. A build with no srun PMI (MPICH >= 4.1,
see build_record.SRUN_PMI1_LINE_NOTE) always uses its launcher.
"""

from __future__ import annotations

from reframe.core.launchers import JobLauncher

from .build_record import BuildRecord
from .placement import Layout


def launcher_argv(build: BuildRecord, layout: Layout, launch: str = "mpiexec") -> list[str]:
    if launch == "srun" and build.pmi:
        return ["srun", f"--mpi={build.pmi}", f"--nodes={layout.nodes}",
                f"--ntasks={layout.ranks}", f"--ntasks-per-node={layout.ppn}"]
    if build.launcher_style == "openmpi":
        # --bind-to none: emulated nodes share physical cores, and binding two
        # busy-polling ranks to the same core stalls them (platform.md fix 4).
        return [build.launcher, "-np", str(layout.ranks), "--map-by",
                f"ppr:{layout.ppn}:node", "--bind-to", "none"]
    return [build.launcher, "-n", str(layout.ranks), "-ppn", str(layout.ppn)]


class BuildLauncher(JobLauncher):
    """A launcher whose command line is fixed by the build and the placement."""

    def __init__(self, argv: list[str]):
        super().__init__()
        self.argv = list(argv)

    def command(self, job):
        return list(self.argv)
