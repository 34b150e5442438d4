"""Launch/placement sanity on every build.

Launches the placement probe (compiled once per build by the ProbeBuild
fixture) with the build's launcher and placement, and asserts world size,
ranks per host, distinct or equal hosts, and that the MPI library at run time
is the build's. A launcher that silently starts singletons (Open MPI under
Slurm without its PMI) fails here.
"""

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, run_after, run_before, sanity_function, variable

from mpimatrix.rfm.build_check import BuildCheck
from mpimatrix.rfm.fixtures import ProbeBuild
from mpimatrix.suites.common import stderr_tail
from mpimatrix.suites.probe import placement_output


@rfm.simple_test
class MpiPlacementCheck(rfm.RunOnlyRegressionTest, BuildCheck):
    descr = "MPI launch/placement sanity"
    sourcesdir = None  # nothing to copy: the programs come from the build or a fixture
    valid_prog_environs = ["+mpi"]
    checks_launch = True  # runs on every partition, also in the quick modes
    probes = fixture(ProbeBuild, scope="environment")
    tags = {"quick", "sanity", "placement"}
    library = variable(str, value="")

    @run_after("init")
    def set_ref_key_and_time_limit(self):
        self.ref_key = f"placement@{self.placement.name}"
        self.time_limit = "3m"  # a probe: seconds when healthy; a hang costs little

    @run_before("run")
    def set_executable(self):
        self.executable = self.probes.path("mpi_placement")

    def parse_output(self):
        text = self.stdout_text()
        return text, placement_output.parse(text)

    def _problems(self) -> list[str]:
        text, _ = self.parsed
        return placement_output.placement_output_problems(text, self.placement,
                                                          self.build.library_version_regex,
                                                          self.build.shared_memory)

    def results_complete(self):
        return not self._problems()

    @sanity_function
    def validate(self):
        _, rep = self.parsed
        self.hosts = rep.hosts
        self.library = rep.library.split("|")[0]
        errs = self._problems()
        if errs and stderr_tail(self.stderr_text()):
            errs.append(stderr_tail(self.stderr_text()))
        return sn.assert_true(not errs, msg=self.failure_message(errs))
