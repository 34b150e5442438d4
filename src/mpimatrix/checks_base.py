"""What every check shares: the build it runs on, the placement, the launcher,
the references and the provenance it records.
"""

from __future__ import annotations

import os

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, run_before, variable

from .build_record import BuildRecord
from .launch import BuildLauncher, launcher_argv
from .paths import references_dir
from .placement import POINT_TO_POINT, Layout


class BuildCheck(rfm.RegressionTestPlugin):
    #: Where ranks go: nodes x ranks per node. One shared parameter for all
    #: checks; a layout runs only on partitions with enough nodes.
    placement = parameter(POINT_TO_POINT, fmt=lambda lay: lay.name)

    #: quick or full (set by the ReFrame mode: -S profile=...)
    profile = variable(str, value="quick")

    #: Provenance of the build, recorded with every result.
    build_name = variable(str, value="")
    build_hash = variable(str, value="")
    build_spec = variable(str, value="")
    build_provenance = variable(str, value="")
    lock_sha256 = variable(str, value="")

    #: Key of this test case in the reference file (benchmark@placement).
    ref_key = variable(str, value="")

    #: Hosts the job ran on, as reported by the job or the program.
    hosts = variable(typ.List[str], value=[])

    @property
    def layout(self) -> Layout:
        return self.placement

    @property
    def build(self) -> BuildRecord:
        return BuildRecord.from_dict(self.current_environ.extras["build"],
                                     origin=f"environment {self.current_environ.name}")

    @run_after("init")
    def _place(self):
        # An MPI that hangs (e.g. in MPI_Finalize) must not stall the session.
        self.time_limit = "10m"
        self.valid_systems = [f"+{self.layout.feature}"]
        self.num_tasks = self.layout.ranks
        self.num_tasks_per_node = self.layout.ppn
        self.tags.add(self.layout.name)

    @run_after("setup")
    def _record_build(self):
        b = self.build
        self.build_name = b.name
        self.build_hash = b.dag_hash
        self.build_spec = b.spec
        self.build_provenance = b.provenance
        self.lock_sha256 = b.lock_sha256

    @run_after("setup")
    def _external_references(self):
        # One file per system, in ReFrame's external reference format. A system,
        # build or benchmark without an entry runs and reports without a check.
        path = references_dir() / f"{self.current_system.name}.yaml"
        if path.is_file():
            self.reference = {"$ref": str(path)}

    @run_before("run")
    def _use_build_launcher(self):
        launch = self.current_partition.extras.get("launch", "mpiexec")
        self.job.launcher = BuildLauncher(launcher_argv(self.build, self.layout, launch))

    def stdout_text(self) -> str:
        path = os.path.join(self.stagedir, str(self.stdout.evaluate()))
        try:
            with open(path, errors="replace") as fp:
                return fp.read()
        except OSError:
            return ""

    def stderr_text(self) -> str:
        path = os.path.join(self.stagedir, str(self.stderr.evaluate()))
        try:
            with open(path, errors="replace") as fp:
                return fp.read()
        except OSError:
            return ""
