"""The ReFrame plugin every check shares: the build it runs on, the placement, the
launcher, the references, the output it parses once, and the provenance it records."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, run_before, variable
from reframe.core.exceptions import ExpectedFailureError, ReframeError, SanityError
from reframe.core.runtime import runtime

from ..builds.known_faults import HANG_AFTER_RESULTS, known_fault
from ..builds.record import BenchmarkInstall, BuildRecord
from ..paths import references_dir
from ..placement import Placement, rank_host_problems
from ..reference_file import ReferenceFileError, checked_once
from ..shell import quote_argv, shell_value
from ..suites.crash import crash_report
from . import hang_budget as budget
from . import job_outcome
from .inject import InjectError, injection_for
from .launch import (
    BUILD_MPIEXEC,
    SRUN,
    BuildMpiexecLauncher,
    binds_ranks,
    launch_command,
    own_launcher_argv,
    partition_method,
    rank_env_options,
    srun_options,
    srun_plugin,
)
from .limits import MachineLimits
from .placements import hosting_partitions, partition_shape, runtime_placements


class BuildCheck(MachineLimits):
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

    #: "core" when each rank is pinned to a core of its own, else "none".
    cpu_binding = variable(str, value="none")

    #: The regression injected into this run (MPIMATRIX_INJECT), "" for none.
    injected = variable(str, value="")

    #: What other programs used on the job's nodes while the benchmark ran
    #: (job_outcome.node_load; batch partitions only, {} elsewhere).
    node_load = variable(typ.Dict[str, float], value={})

    #: Why this run is expected to fail (a known fault), or why it failed as expected
    #: ("" = neither).
    expected_failure = variable(str, value="")

    #: Bytes through the first node's network interfaces (all but lo) while the
    #: program ran; -1 = not measured (only partitions with extras net_counters).
    net_bytes = variable(int, value=-1)

    #: Written by hostname_probe_cmd(): one line per rank.
    HOSTS_FILE = "rank_hosts.txt"

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
        hosting = self.limit_partitions(hosting_partitions(self.placement))
        self.valid_systems = [f"+{self.placement.feature}"] if hosting is None else hosting
        self.num_tasks = self.placement.ranks
        self.num_tasks_per_node = self.placement.ppn
        self.tags.add(self.placement.name)

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
            try:
                checked_once(Path(path))
            except ReferenceFileError as err:
                raise ReframeError(str(err)) from None
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

    def binds(self, placement: Placement) -> bool:
        return binds_ranks(self.current_partition, placement,
                           partition_shape(self.current_partition)[1])

    def launch_cmd(self, placement: Placement | None = None) -> str:
        """The build's launch command for a placement (default: this test's), as a
        shell string, exactly as the main program is launched."""
        placement = placement or self.main_placement
        return launch_command(self.build, placement, self.launch_method, self.binds(placement))

    @run_before("run")
    def _launch_with_the_build(self):
        launcher = self.job.launcher
        bind = self.binds(self.main_placement)
        self.cpu_binding = "core" if bind else "none"
        if self.launch_method == SRUN:
            plugin, _ = srun_plugin(self.build)
            launcher.options = [*srun_options(plugin, self.main_placement, bind),
                                *launcher.options]
            return
        if partition_method(self.current_partition) == SRUN:
            self.launch_note = srun_plugin(self.build)[1]
        if not isinstance(launcher, BuildMpiexecLauncher):
            launcher = self.job.launcher = BuildMpiexecLauncher()
        launcher.argv = own_launcher_argv(self.build, self.main_placement, bind)

    def inject_into_benchmark(self, injector: str, meter: bool = True) -> None:
        """Preload the injector library into the benchmark's ranks (the launcher passes
        it to the ranks only): its regression when MPIMATRIX_INJECT names this build,
        and its node meter on batch partitions (node_load; `meter` False for a benchmark
        that times MPI_Init itself, where the meter's barrier would count)."""
        try:
            spec = injection_for(self.build.name)
        except InjectError as err:
            raise ReframeError(str(err)) from None
        env = {}
        if spec:
            self.injected = spec
            env["MPIMATRIX_INJECT_SPEC"] = spec
        if meter and self.current_partition.scheduler.registered_name != "local":
            env["MPIMATRIX_METER"] = "1"
        if env:
            env = {"LD_PRELOAD": injector, **env}
            self.job.launcher.options += quote_argv(
                rank_env_options(self.build, self.launch_method, env))

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
        self.node_load = job_outcome.node_load(self.stdout_text(), job_outcome.kernel_id())
        stderr = self.stderr_text()
        if job_outcome.bad_end(self.job.state) or job_outcome.node_failure(stderr):
            hung_for = getattr(self.job.scheduler, "hung_for", lambda job: None)(self.job)
            if hung_for is not None:
                budget.record_hang(self.build.name, self.case_label, hung_for)
            complete = self.results_complete()
            problems = [job_outcome.failure_reason(self.job.jobid, self.job.state, nodes,
                                                   stderr, complete, hung_for)]
            fault = (job_outcome.hung_after_results(self.job.state, complete, hung_for)
                     and known_fault(self.build, self.placement.nodes, HANG_AFTER_RESULTS))
            if fault:
                # ReFrame reports an ExpectedFailureError from any stage as XFAIL, and
                # keeps no reason of an XFAIL in its report: the variable keeps it
                self.expected_failure = self.failure_message(
                    [*problems, f"known fault of {self.build.name}: {fault.reason}"])
                raise ExpectedFailureError(self.expected_failure)
            raise SanityError(self.failure_message(problems))

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
        """parse_output(), once per test case (until forget_parsed_output())."""
        if not hasattr(self, "_parsed_output"):
            self._parsed_output = self.parse_output()
        return self._parsed_output

    def forget_parsed_output(self) -> None:
        """Drop the cached parse: the next `parsed` parses the output again (as it is
        then, e.g. while the program still runs)."""
        vars(self).pop("_parsed_output", None)

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
