"""Launch/placement sanity on every build.

Compiles a probe with the build's own wrapper, launches it with the build's
launcher and placement, and asserts world size, ranks per host, distinct or
equal hosts, and that the MPI library at run time is the build's. A launcher
that silently starts singletons (seed 002: Open MPI under Slurm) fails here.
"""

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, sanity_function, variable

from mpimatrix import placement_sanity
from mpimatrix.checks_base import BuildCheck


@rfm.simple_test
class MpiPlacementCheck(rfm.RegressionTest, BuildCheck):
    descr = "MPI launch/placement sanity"
    valid_prog_environs = ["+mpi"]
    build_system = "SingleSource"
    sourcepath = "mpi_placement.c"
    executable = "./mpi_placement"
    tags = {"quick", "sanity", "placement"}
    library = variable(str, value="")

    @run_after("init")
    def _key(self):
        self.ref_key = f"placement@{self.layout.name}"
        self.time_limit = "3m"  # a probe: seconds when healthy; a hang costs little

    def results_complete(self, stdout):
        return not placement_sanity.problems(stdout, self.layout,
                                             self.build.library_version_regex)

    @run_after("setup")
    def _exe_name(self):
        self.build_system.executable = "mpi_placement"

    @sanity_function
    def validate(self):
        text = self.stdout_text()
        rep = placement_sanity.parse(text)
        self.hosts = rep.hosts
        self.library = rep.library.split("|")[0]
        errs = placement_sanity.problems(text, self.layout, self.build.library_version_regex)
        if errs:
            tail = self.stderr_text().strip().splitlines()[-3:]
            if tail:
                errs.append("stderr: " + " / ".join(tail))
        return sn.assert_true(not errs, msg=f"{self.build.name} {self.layout.name}: "
                              + "; ".join(errs))
