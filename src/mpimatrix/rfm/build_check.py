"""The ReFrame plugin every check shares: the build it runs on, the placement, the
launcher, the references, the output it parses once, and the provenance it records."""

from __future__ import annotations

import os
import shlex

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, run_before, variable
from reframe.core.exceptions import SanityError
from reframe.core.runtime import runtime

from ..builds.record import BenchmarkInstall, BuildRecord
from ..paths import references_dir
from ..placement import Placement, rank_host_problems
from ..shell import shell_value
from ..suites.crash import crash_report
from . import hang_budget, job_outcome
from .launch import (
    BUILD_MPIEXEC,
    SRUN,
    BuildMpiexecLauncher,
    launch_command,
    own_launcher_argv,
    partition_method,
    srun_options,
    srun_plugin,
)
from .placements import (
    hosting_partitions,
    one_per_node_set,
    oversubscribes,
    oversubscribing_partitions,
    runtime_placements,
)


class BuildCheck(rfm.RegressionTestPlugin):
    #: Where ranks go: nodes x ranks per node. One shared parameter for all
    #: checks: intranode, internode, and the collective placements the current
    #: system's partitions can host; a placement runs only on partitions with
    #: enough nodes and cores.
    placement = parameter(runtime_placements(), fmt=lambda p: p.name)

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

    #: Per performance variable: quantity, unit, size in bytes, better (higher/lower).
    perf_info = variable(typ.Dict[str, typ.Dict[str, str]], value={})

    #: Hosts the job ran on, as reported by the job or the program.
    hosts = variable(typ.List[str], value=[])

    #: Why the build is not launched the partition's way ("" when it is).
    launch_note = variable(str, value="")

    #: More busy ranks than the cores the nodes really have (partition extras cores,
    #: shared_cores): reported, never checked against references; tagged
    #: `oversubscribed` (the quick modes leave such cases out).
    oversubscribed = variable(bool, value=False)

    #: What this build's hangs may cost the session (rfm/hang_budget.py): "3m",
    #: "1h30m", "0" (none); "" = hang_budget.DEFAULT.
    hang_budget = variable(str, value="")

    #: Also run on a partition that only launches differently on the same nodes as
    #: another (extras same_nodes_as); the quick modes set it false (checks of the
    #: launch itself, checks_launch, run on every partition anyway).
    every_launcher = variable(typ.Bool, value=True)

    #: Bytes through the first node's network interfaces (all but lo) while the
    #: program ran; -1 = not measured (only partitions with extras net_counters).
    net_bytes = variable(int, value=-1)

    #: Written by hostname_probe_cmd(): one line per rank.
    HOSTS_FILE = "rank_hosts.txt"

    #: Whether this check is about how ranks are launched (it then runs on every
    #: partition, whatever every_launcher says).
    checks_launch = False

    @property
    def build(self) -> BuildRecord:
        rec = getattr(self, "_build_record", None)
        if rec is None:
            rec = self._build_record = BuildRecord.from_dict(
                self.current_environ.extras["build"],
                origin=f"environment {self.current_environ.name}")
        return rec

    @run_after("init")
    def _place(self):
        # An MPI that hangs (e.g. in MPI_Finalize) must not stall the session.
        self.time_limit = "10m"
        hosting = hosting_partitions(self.placement)
        if hosting is not None and not (self.every_launcher or self.checks_launch):
            hosting = one_per_node_set(hosting)
        self.valid_systems = [f"+{self.placement.feature}"] if hosting is None else hosting
        self.num_tasks = self.placement.ranks
        self.num_tasks_per_node = self.placement.ppn
        self.tags.add(self.placement.name)
        if oversubscribing_partitions(self.main_placement):
            self.tags.add("oversubscribed")

    @run_after("setup")
    def _machine_limits(self):
        part = self.current_partition
        self.oversubscribed = oversubscribes(part, self.main_placement)
        pending = part.extras.get("max_pending_time")
        if pending and self.max_pending_time is None:
            self.max_pending_time = pending  # e.g. the emulated cluster: minutes, not days

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
        # One file per system, in ReFrame's external reference format, under
        # ReFrame's reference prefix (RFM_REFERENCE_PREFIX or --reference-prefix:
        # ReFrame 4.10.4's configuration schema has no general/reference_prefix;
        # `mpimatrix run` sets it to results/references). Without a prefix, the
        # project's results/references. A system, build or benchmark without an
        # entry runs and reports without a check.
        if self.oversubscribed:
            return  # measures the OS scheduler: reported, never gated
        name = f"{self.current_system.name}.yaml"
        prefix = runtime().get_option("general/0/reference_prefix")
        path = os.path.join(prefix or references_dir(), name)
        if os.path.isfile(path):
            self.reference = {"$ref": name if prefix else path}

    def record_metrics(self, metrics) -> None:
        """Declare the catalogue's metrics as data of the run record."""
        self.perf_info = {m.name: m.info() for m in metrics}

    def use_benchmark(self, install: BenchmarkInstall) -> None:
        """Run with a benchmark install: its variables, and its ABI links made in
        this test's stage directory and put first on the library path."""
        env = dict(install.env)
        if install.abi_links:
            abi = os.path.join(self.stagedir, "abi")
            os.makedirs(abi, exist_ok=True)
            for link, target in install.abi_links.items():
                path = os.path.join(abi, link)
                if not os.path.islink(path):
                    os.symlink(target, path)
            env["LD_LIBRARY_PATH"] = abi.replace("$", "$$") + ":" + env.get(
                "LD_LIBRARY_PATH", "$LD_LIBRARY_PATH")
        self.env_vars.update({k: shell_value(v) for k, v in env.items()})

    # -- launching ---------------------------------------------------------------------------
    @property
    def launch_method(self) -> str:
        method = partition_method(self.current_partition)
        if method == SRUN and not srun_plugin(self.build)[0]:
            return BUILD_MPIEXEC
        return method

    @property
    def main_placement(self) -> Placement:
        """The placement the main command is launched with (the allocation's, unless
        a check runs several placements in one allocation)."""
        return self.placement

    def launch_cmd(self, placement: Placement | None = None) -> str:
        """The build's launch command for a placement (default: this test's), as a
        shell string, exactly as the main program is launched."""
        return launch_command(self.build, placement or self.main_placement, self.launch_method)

    @run_before("run")
    def _launch_with_the_build(self):
        launcher = self.job.launcher
        if self.launch_method == SRUN:
            plugin, _ = srun_plugin(self.build)
            launcher.options = [*srun_options(plugin, self.main_placement), *launcher.options]
            return
        if partition_method(self.current_partition) == SRUN:
            self.launch_note = srun_plugin(self.build)[1]
        if not isinstance(launcher, BuildMpiexecLauncher):
            launcher = self.job.launcher = BuildMpiexecLauncher()
        launcher.argv = own_launcher_argv(self.build, self.main_placement)

    @run_before("run")
    def _within_hang_budget(self):
        local = self.current_partition.scheduler.registered_name == "local"
        self.time_limit = hang_budget.time_limit(self.build.name, self.hang_budget,
                                                 self.time_limit, unit=1 if local else 60)
        hang_budget.watch(self.build.name, f"{self.display_name} @"
                          f"{self.current_partition.fullname}", self.job)

    @run_before("run", always_last=True)
    def _frame_the_launch(self):
        if self.current_partition.extras.get("net_counters"):
            self.prerun_cmds = [*self.prerun_cmds, job_outcome.net_snapshot_cmd("before")]
            self.postrun_cmds = [job_outcome.net_snapshot_cmd("after"), *self.postrun_cmds]
        if (self.launch_method == BUILD_MPIEXEC and self.build.launcher_style == "hydra"
                and self.current_partition.scheduler.registered_name != "local"):
            # Hydra starts one proxy per node with `srun -N<nodes> -n<nodes>`, which
            # inherits the job's --ntasks-per-node and warns "can't honor
            # --ntasks-per-node"; -ppn places the ranks.
            self.prerun_cmds = ["unset SLURM_NTASKS_PER_NODE", *self.prerun_cmds]

    # -- outcome -----------------------------------------------------------------------------
    @run_before("sanity")
    def _job_outcome(self):
        """Where the job ran, what crossed the NIC, and a clear reason if Slurm killed it."""
        nodes = [n for n in (self.job.nodelist or []) if n and n != "None"]
        if not self.hosts and self.current_partition.scheduler.registered_name != "local":
            self.hosts = nodes
        self.net_bytes = job_outcome.net_bytes(self.stdout_text())
        stderr = self.stderr_text()
        if job_outcome.bad_end(self.job.state) or job_outcome.node_failure(stderr):
            raise SanityError(self.failure_message([job_outcome.failure_reason(
                self.job.jobid, self.job.state, nodes, stderr,
                results_complete=self.results_complete())]))

    def failure_message(self, problems: list[str]) -> str:
        """'<build> <placement>: <a rank's crash, if any>; <problems>': the cause first
        ('' without problems)."""
        if not problems:
            return ""
        crash = crash_report(self.stderr_text() + "\n" + self.stdout_text())
        return f"{self.build.name} {self.placement.name}: " + "; ".join(
            [crash, *problems] if crash else problems)

    def parse_output(self):
        """The program's output, parsed (checks override this)."""
        return None

    @property
    def parsed(self):
        """parse_output(), once per test case."""
        if not hasattr(self, "_parsed_output"):
            self._parsed_output = self.parse_output()
        return self._parsed_output

    def results_complete(self) -> bool:
        """Whether the program printed everything it had to (checks override this);
        tells a hang on the way out from one in the middle of the work."""
        return False

    def hostname_probe_cmd(self) -> str:
        """`hostname` launched exactly like the program (same launcher, placement
        and environment), for programs that do not print where their ranks ran."""
        return f"{self.launch_cmd()} hostname > {shlex.quote(self.HOSTS_FILE)}"

    def probed_host_problems(self) -> list[str]:
        """Check the probe's hosts against the placement; record them in `hosts`."""
        try:
            with open(os.path.join(self.stagedir, self.HOSTS_FILE), errors="replace") as fp:
                hosts = [h.strip() for h in fp if h.strip()]
        except OSError:
            hosts = []
        if hosts:
            self.hosts = sorted(set(hosts))
        return rank_host_problems(hosts, self.placement)

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
