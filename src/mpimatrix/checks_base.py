"""What every check shares: the build it runs on, the placement, the launcher,
the references and the provenance it records.
"""

from __future__ import annotations

import os
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, run_before, variable
from reframe.core.exceptions import SanityError

from . import slurm_job
from .build_record import BuildRecord
from .launch import BuildLauncher, launcher_argv
from .paths import references_dir
from .placement import Layout, host_problems, hosting_partitions, runtime_layouts


class BuildCheck(rfm.RegressionTestPlugin):
    #: Where ranks go: nodes x ranks per node. One shared parameter for all
    #: checks: intranode, internode, and the collective layouts the current
    #: system's partitions can host (placement.runtime_layouts); a layout runs
    #: only on partitions with enough nodes and cores.
    placement = parameter(runtime_layouts(), fmt=lambda lay: lay.name)

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

    #: Bytes through the first node's network interfaces (all but lo) while the
    #: program ran; -1 = not measured (only partitions with extras net_counters).
    net_bytes = variable(int, value=-1)

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
        hosting = hosting_partitions(self.layout)
        self.valid_systems = [f"+{self.layout.feature}"] if hosting is None else hosting
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

    def launch_argv(self, layout: Layout | None = None) -> list[str]:
        """The build's launch command for a layout (default: this test's) on the
        current partition (its extras.launch: mpiexec, mpirun or srun)."""
        launch = self.current_partition.extras.get("launch", "mpiexec")
        return launcher_argv(self.build, layout or self.layout, launch)

    @run_before("run")
    def _use_build_launcher(self):
        self.job.launcher = BuildLauncher(self.launch_argv())

    @run_before("run", always_last=True)
    def _bracket_with_net_counters(self):
        if self.current_partition.extras.get("net_counters"):
            self.prerun_cmds = [*self.prerun_cmds, slurm_job.net_snapshot_cmd("before")]
            self.postrun_cmds = [slurm_job.net_snapshot_cmd("after"), *self.postrun_cmds]

    @run_before("sanity")
    def _job_outcome(self):
        """Where the job ran, what crossed the NIC, and a clear reason if Slurm killed it."""
        nodes = [n for n in (self.job.nodelist or []) if n and n != "None"]
        if not self.hosts and self.current_partition.scheduler.registered_name != "local":
            self.hosts = nodes
        self.net_bytes = slurm_job.net_bytes(self.stdout_text())
        stderr = self.stderr_text()
        if slurm_job.bad_end(self.job.state) or slurm_job.node_failure(stderr):
            raise SanityError(f"{self.build.name} {self.layout.name}: " + slurm_job.failure_reason(
                self.job.jobid, self.job.state, nodes, stderr,
                results_complete=self.results_complete(self.stdout_text())))

    def results_complete(self, stdout: str) -> bool:
        """Whether the program printed everything it had to (checks override this);
        tells a hang on the way out from one in the middle of the work."""
        return False

    #: Written by hostname_probe_cmd(): one line per rank.
    HOSTS_FILE = "rank_hosts.txt"

    def hostname_probe_cmd(self) -> str:
        """`hostname` launched exactly like the program (same launcher, placement
        and environment), for programs that do not print where their ranks ran."""
        return shlex.join(self.launch_argv()) + f" hostname > {self.HOSTS_FILE}"

    def probed_host_problems(self) -> list[str]:
        """Check the probe's hosts against the layout; record them in `hosts`."""
        try:
            with open(os.path.join(self.stagedir, self.HOSTS_FILE), errors="replace") as fp:
                hosts = [h.strip() for h in fp if h.strip()]
        except OSError:
            hosts = []
        if hosts:
            self.hosts = sorted(set(hosts))
        return host_problems(hosts, self.layout)

    def _job_file_text(self, name) -> str:
        try:
            with open(os.path.join(self.stagedir, str(name.evaluate())), errors="replace") as fp:
                return fp.read()
        except OSError:
            return ""

    def stdout_text(self) -> str:
        return self._job_file_text(self.stdout)

    def stderr_text(self) -> str:
        return self._job_file_text(self.stderr)


class CatalogueMetrics(rfm.RegressionTestPlugin):
    """Performance variables from a catalogue entry: `self.bench.metrics`, each read
    by the check's `_metric(metric)`."""

    @run_before("performance")
    def _perf_variables(self):
        for m in self.bench.metrics:
            self.perf_variables[m.name] = sn.make_performance_function(
                self._metric, m.unit, m)
