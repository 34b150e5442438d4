"""Where a test case's ranks go and how they are started: the check's side of launch.py.

A check defines nothing to be launched right; it may:

- in a post-init hook (its own run after `place_ranks`): set `time_limit` (place_ranks
  sets 10 minutes), or `valid_systems = []` for a placement its benchmark cannot run on;
- override the `main_placement` property (from the init phase on) when the job runs
  several placements in one allocation (node_latency.py);
- in a pre-run hook: set `executable` and its options, call `use_benchmark(install)` for
  a benchmark install's environment, and launch helper programs exactly like the main
  one with `launch_cmd()` or `hostname_probe_cmd()` (in `prerun_cmds`; a check may
  replace the list: `frame_the_launch` adds its commands after every other hook).

Hooks, by phase:

- post-init `place_ranks`: tasks and tasks per node from the `placement` parameter, the
  partitions that can host it (limits.py `limit_partitions`), the placement's tag;
- pre-run `launch_with_the_build`: the build's launcher (srun with its PMI plugin, or its
  own mpirun/mpiexec), pinning, the variables every rank gets (launch_env);
- pre-run, last `frame_the_launch`: network counter snapshots around the launch, Hydra's
  `unset SLURM_NTASKS_PER_NODE`.

Needs `build` (provenance.py) and `limit_partitions` (limits.py).
"""

from __future__ import annotations

import os
import shlex

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, run_before, variable

from ..builds.record import BenchmarkInstall
from ..placement import Placement
from ..shell import shell_value
from . import slurm_job
from .launchers import (
    BUILD_MPIEXEC,
    SRUN,
    BuildMpiexecLauncher,
    binds_ranks,
    launch_command,
    own_launcher_argv,
    partition_method,
    rank_env,
    srun_options,
    srun_plugin,
)
from .placements import hosting_partitions, partition_shape, runtime_placements


class LaunchMixin(rfm.RegressionTestPlugin):
    #: Where ranks go: nodes x ranks per node. One shared parameter for all
    #: checks: intranode, internode, and the collective placements the current
    #: system's partitions can host; a placement runs only on partitions with
    #: enough nodes and cores.
    placement = parameter(runtime_placements(), fmt=lambda p: p.name)

    #: Why the build is not launched the partition's way ("" when it is).
    launch_note = variable(str, value="")

    #: Variables the launch sets for every rank of this build (launch.rank_env: e.g.
    #: OMPI_MCA_osc where Debian's MCA defaults leave Open MPI 4.1 no one-sided
    #: component between nodes); recorded with the result.
    launch_env = variable(typ.Dict[str, str], value={})

    #: "core" when each rank is pinned to a core of its own, else "none".
    cpu_binding = variable(str, value="none")

    #: Written by hostname_probe_cmd(): one line per rank.
    HOSTS_FILE = "rank_hosts.txt"

    @run_after("init")
    def place_ranks(self):
        # An MPI that hangs (e.g. in MPI_Finalize) must not stall the session.
        self.time_limit = "10m"
        hosting = self.limit_partitions(hosting_partitions(self.placement))
        self.valid_systems = [f"+{self.placement.feature}"] if hosting is None else hosting
        self.num_tasks = self.placement.ranks
        self.num_tasks_per_node = self.placement.ppn
        self.tags.add(self.placement.name)

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

    def hostname_probe_cmd(self) -> str:
        """`hostname` launched exactly like the program (same launcher, placement
        and environment), for programs that do not print where their ranks ran."""
        return f"{self.launch_cmd()} hostname > {shlex.quote(self.HOSTS_FILE)}"

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

    @run_before("run")
    def launch_with_the_build(self):
        self.launch_env = rank_env(self.build)
        self.env_vars.update({k: shell_value(v) for k, v in self.launch_env.items()})
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

    @run_before("run", always_last=True)
    def frame_the_launch(self):
        if self.current_partition.extras.get("net_counters"):
            self.prerun_cmds = [*self.prerun_cmds, slurm_job.net_snapshot_cmd("before")]
            self.postrun_cmds = [slurm_job.net_snapshot_cmd("after"), *self.postrun_cmds]
        if (self.launch_method == BUILD_MPIEXEC and self.build.launcher_style == "hydra"
                and self.current_partition.scheduler.registered_name != "local"):
            # Hydra starts one proxy per node with `srun -N<nodes> -n<nodes>`, which
            # inherits the job's --ntasks-per-node and warns "can't honor
            # --ntasks-per-node"; -ppn places the ranks.
            self.prerun_cmds = ["unset SLURM_NTASKS_PER_NODE", *self.prerun_cmds]
