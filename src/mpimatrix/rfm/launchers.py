"""How a build's ranks are launched on a partition: one vocabulary, two methods.

A partition's ReFrame `launcher` is one of
- `srun`: Slurm direct launch, `srun --mpi=<plugin>` with the plugin for the
  build's PMI wire protocol (ReFrame's own srun launcher; the check adds the
  plugin and the placement to its options and keeps every other option);
- `build-mpiexec` (registered here): each build's own mpiexec/mpirun with
  explicit placement flags, on this machine or inside a Slurm allocation.

ReFrame's mpirun/mpiexec launchers pass no mapping flags, so they are not used.
A build whose PMI cannot go through srun reliably is launched with
`build-mpiexec` on srun partitions too, and the check records why.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

from reframe.core.backends import register_launcher
from reframe.core.exceptions import ConfigError
from reframe.core.launchers import JobLauncher

from ..builds.record import BuildRecord
from ..placement import Placement
from ..shell import quote_argv
from ..units import version_tuple
from .placements import partition_shape

#: Overrides the partitions' cpu_binding (core|none), for experiments
#: (measure/noise_sources.py compares both).
BINDING_ENV = "MPIMATRIX_CPU_BINDING"

SRUN = "srun"
BUILD_MPIEXEC = "build-mpiexec"
METHODS = (SRUN, BUILD_MPIEXEC)

#: srun --mpi= plugin per PMI wire protocol (Slurm's pmi2 plugin serves PMI-1 too).
SRUN_PLUGIN_OF_PMI = {"pmix": "pmix", "pmi1": "pmi2", "pmi2": "pmi2", "cray": "cray_shasta"}

# Slurm's mpi/pmi2 plugin (22.05 and later: pmi1.c, "TODO: read until newline") reads
# a PMI-1 request with one read() of at most 1024 bytes, yet offers vallen_max=1024.
# MPICH >= 4.1 splits its PMI allgather into segments of up to vallen_max characters,
# so a `cmd=put ... value=<segment>` line can pass 1024 bytes: the stepd parses half a
# line ("mpi/pmi2: value not properly terminated in client request") and the job
# hangs. Measured on the emulated cluster: IMB-MPI1 on PyPI MPICH 5.0.2 under
# `srun --mpi=pmi2` hung or failed 100/100 times; under Hydra in the allocation 0/50.
SRUN_PMI1_LINE_NOTE = ("srun --mpi=pmi2 not used: MPICH >= 4.1 sends PMI-1 lines longer "
                       "than Slurm's 1024-byte PMI-1 read; launched by Hydra (mpiexec) "
                       "inside the allocation")


def mpich_base_version(build: BuildRecord) -> tuple[int, ...]:
    """The MPICH release an MPICH-derived build is based on (MVAPICH 4.x: MPICH 4.3)."""
    v = version_tuple(build.version, 2)
    if build.family == "mvapich":
        return (4, 3) if v >= (4,) else (3, 4)
    if build.family == "mvapich2":
        return (3, 2)
    return v


def srun_plugin(build: BuildRecord) -> tuple[str, str]:
    """(srun --mpi plugin, "") for direct launch, or ("", why not)."""
    if build.pmi == "pmi1" and build.family in ("mpich", "mvapich") \
            and mpich_base_version(build) >= (4, 1):
        return "", SRUN_PMI1_LINE_NOTE
    return SRUN_PLUGIN_OF_PMI[build.pmi], ""


# Open MPI 4.x makes a one-sided window (MPI_Win_allocate, MPI_Win_create) with the
# first osc component that takes it: rdma needs a BTL with put, get and atomics, and the
# TCP BTL has put only (4.x osc/rdma cannot fall back to active messages: its "alternate
# BTLs" came with 5.0); sm needs all ranks on one node; ucx needs UCX, and with UCX 1.13
# over TCP it fails its atomics (OSU cas/fop -c: "UCX ERROR invalid atomic operation
# datatype", data validation FAILED, ~10 ms a call); pt2pt works over any pml. Debian's
# /etc/openmpi/openmpi-mca-params.conf (openmpi-bin 4.1.4-3) sets `osc = ^ucx,pt2pt`, so
# between nodes over TCP none is left: MPI_Win_allocate fails with "MPI_ERR_WIN: invalid
# window", as IMB-RMA and the OSU one-sided benchmarks did on the emulated cluster.
# Jobs of an Open MPI 4.x whose MCA defaults exclude pt2pt allow it again, keeping the
# file's other exclusions: within a node rdma and sm still take the window first,
# between nodes pt2pt does (the one-sided benchmarks then pass between nodes, validation
# included). A user's own OMPI_MCA_osc (in the environment or the build record) wins.
OSC_VAR = "OMPI_MCA_osc"


def mca_params_file(build: BuildRecord) -> Path:
    """The system MCA defaults an Open MPI reads: <sysconfdir>/openmpi-mca-params.conf,
    /etc/openmpi for the distribution's package (its mpirun resolves to /usr/bin, found
    on the machine or as a Spack external), <prefix>/etc for a build of its own."""
    launcher = Path(build.launcher)
    if launcher.is_absolute() and launcher.resolve().parent == Path("/usr/bin"):
        return Path("/etc/openmpi/openmpi-mca-params.conf")
    return Path(build.prefix) / "etc" / "openmpi-mca-params.conf"


def osc_setting(text: str) -> str | None:
    """The `osc = ...` value of an MCA parameter file (the last one), None without."""
    value = None
    for line in text.splitlines():
        m = re.fullmatch(r"\s*osc\s*=\s*(\S*)\s*", line.split("#", 1)[0])
        if m:
            value = m.group(1)
    return value


def rank_env(build: BuildRecord) -> dict[str, str]:
    """Variables every job of this build sets for its ranks (see the comment above)."""
    if build.family != "openmpi" or version_tuple(build.version)[:1] != (4,) \
            or OSC_VAR in build.env or OSC_VAR in os.environ:
        return {}
    try:
        setting = osc_setting(mca_params_file(build).read_text())
    except OSError:  # no such file (Open MPI's defaults: every component) or unreadable
        return {}
    if not setting:
        return {}
    names = [n for n in setting.lstrip("^").split(",") if n]
    if setting.startswith("^"):
        if "pt2pt" not in names:
            return {}
        rest = [n for n in names if n != "pt2pt"]
        return {OSC_VAR: "^" + ",".join(rest) if rest else ""}  # "" = every component
    return {} if "pt2pt" in names else {OSC_VAR: ",".join([*names, "pt2pt"])}


def own_launcher_argv(build: BuildRecord, placement: Placement, bind: bool = False,
                      ranks: int | None = None) -> list[str]:
    """The build's own mpirun/mpiexec with explicit placement (and binding) flags;
    `ranks` fewer than the placement's fills its last node partly."""
    ranks = placement.ranks if ranks is None else ranks
    if build.launcher_style == "openmpi":
        # Open MPI binds by default: without binding it must be told.
        return [build.launcher, "-np", str(ranks), "--map-by",
                f"ppr:{placement.ppn}:node", "--bind-to", "core" if bind else "none"]
    binding = ["-bind-to", "core"] if bind else []
    return [build.launcher, "-n", str(ranks), "-ppn", str(placement.ppn), *binding]


def srun_options(plugin: str, placement: Placement, bind: bool = False) -> list[str]:
    return [f"--mpi={plugin}", f"--nodes={placement.nodes}", f"--ntasks={placement.ranks}",
            f"--ntasks-per-node={placement.ppn}", *(["--cpu-bind=cores"] if bind else [])]


def binds_ranks(partition, placement: Placement, cores: int | None) -> bool:
    """Pin each rank to a core of its own: where the partition's nodes have a core per
    rank and their cores are theirs (extras cpu_binding: none on partitions whose
    nodes share cores, such as the emulated cluster's, where two "nodes" would pin
    busy-polling ranks to the same core). Unbound ranks are scheduled by the OS, and
    on a 2-core machine that alone doubled the run-to-run spread of 8 B latencies."""
    setting = os.environ.get(BINDING_ENV) or (
        getattr(partition, "extras", None) or {}).get("cpu_binding", "core")
    return setting == "core" and cores is not None and placement.ppn <= cores


def rank_env_options(build: BuildRecord, method: str, env: dict[str, str]) -> list[str]:
    """Launcher options that set variables in the ranks only (not in the launcher)."""
    if method == SRUN and srun_plugin(build)[0]:
        return ["--export=ALL," + ",".join(f"{k}={v}" for k, v in env.items())]
    if build.launcher_style == "openmpi":
        return [a for k, v in env.items() for a in ("-x", f"{k}={v}")]
    return [a for k, v in env.items() for a in ("-genv", k, v)]


def launch_argv(build: BuildRecord, placement: Placement, method: str,
                bind: bool = False) -> list[str]:
    """The whole launch command of a build for a placement with a method."""
    if method == SRUN:
        plugin, _ = srun_plugin(build)
        if plugin:
            return ["srun", *srun_options(plugin, placement, bind)]
    return own_launcher_argv(build, placement, bind)


def launch_command(build: BuildRecord, placement: Placement, method: str,
                   bind: bool = False) -> str:
    """launch_argv as one shell string (for commands beside the main one)."""
    return shlex.join(launch_argv(build, placement, method, bind))


def partition_method(partition) -> str:
    name = partition.launcher_type.registered_name
    if name not in METHODS:
        raise ConfigError(f"partition {partition.fullname}: launcher {name!r}: use "
                          f"{SRUN!r} (Slurm direct launch with the build's PMI) or "
                          f"{BUILD_MPIEXEC!r} (each build's own mpiexec/mpirun)")
    return name


class BuildMpiexecLauncher(JobLauncher):
    """The build's own mpiexec/mpirun with placement flags (set by the check in
    `argv`); options set by anyone else follow them, as with every ReFrame launcher.
    A check that does not know its build (ReFrame's library checks such as hpctestlib's
    osu_run, a site's own) gets the build of the environment it runs in, launched with
    the job's ranks and ranks per node, unbound."""

    def __init__(self):
        super().__init__()
        self.argv: list[str] = []

    def command(self, job):
        return quote_argv(self.argv or any_check_argv(job, _launching_check()))


def _launching_check():
    """The check whose job is being launched: ReFrame hands a launcher the job only,
    from the check's run() (reframe.core.pipeline.RegressionTest.run)."""
    from reframe.core.pipeline import RegressionTest

    frame = sys._getframe(1)
    while frame is not None:
        check = frame.f_locals.get("self")
        if isinstance(check, RegressionTest):
            return check
        frame = frame.f_back
    return None


def any_check_argv(job, check) -> list[str]:
    """The launch of a check that does not know its build: its environment's build
    (the generated configuration's environments carry their build record), the job's
    ranks over the nodes it asks for, all on one node where the partition has one."""
    env = getattr(check, "current_environ", None)
    record = (getattr(env, "extras", None) or {}).get("build")
    if not record:
        raise ConfigError(
            f"launcher {BUILD_MPIEXEC!r}: the environment "
            f"{getattr(env, 'name', '?')!r} names no build; run the check in one of the "
            "environments site_config/reframe_config.py makes, one per build (`-p <build>`)")
    build = BuildRecord.from_dict(record, origin=f"environment {env.name}")
    ranks = max(1, int(job.num_tasks or 1))
    ppn = max(1, min(int(job.num_tasks_per_node or ranks), ranks))
    nodes = -(-ranks // ppn)
    partition = getattr(check, "current_partition", None)
    if nodes > partition_shape(partition)[0]:
        nodes, ppn = 1, ranks  # a one-node partition runs them side by side
    # the job's own count where the last node is not full (7 ranks, 2 per node)
    return own_launcher_argv(build, Placement(nodes, ppn), ranks=ranks)


try:
    register_launcher(BUILD_MPIEXEC)(BuildMpiexecLauncher)
except ConfigError:  # already registered in this process
    pass
