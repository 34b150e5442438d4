"""The ReFrame system of the emulated cluster.

ReFrame runs inside the head namespace (`mpimatrix cluster reframe -- ...`),
where the hostname is `head`, so the system is selected automatically there.
Two partitions over the same nodes, both with the `squeue-all` scheduler
(ReFrame's `squeue` backend, for Slurm without accounting, which its `slurm`
backend needs; it also sees finished jobs, see squeue_backend.py):

- compute: every check launches with `srun --mpi=<the build's PMI>` (pmix for
  Open MPI, pmi2 for the MPICH family; see launch.py and the build record);
- compute_mpirun: the build's own mpirun/mpiexec inside the allocation (Open
  MPI with --bind-to none: emulated nodes share physical cores).

The partitions' launcher is only a placeholder: every check replaces it with
the build's (checks_base.BuildCheck._use_build_launcher).
"""

from __future__ import annotations

from ..paths import results_dir
from ..placement import node_features
from .cluster import is_up
from .layout import Layout, default_dir
from .slurm_conf import NODE_CPUS
from .squeue_backend import NAME as SCHEDULER

SYSTEM = "vcluster"


def partition(name: str, descr: str, launch: str, nodes: int, envs: list[str],
              lay: Layout) -> dict:
    return {
        "name": name,
        "descr": descr,
        "scheduler": SCHEDULER,
        "launcher": "local",
        "environs": envs,
        "max_jobs": 1,
        "time_limit": "10m",
        "features": [*node_features(nodes), "slurm", "vcluster"],
        "env_vars": [["SLURM_CONF", str(lay.slurm_conf)]],
        "sched_options": {"use_nodes_option": True, "job_submit_timeout": 60},
        "extras": {"launch": launch, "nodes": nodes, "cores": NODE_CPUS,
                   "cluster_dir": str(lay.dir), "net_counters": True},
    }


def system(envs: list[str], nodes: int, directory=None) -> dict:
    lay = Layout.at(directory or default_dir(), nodes)
    return {
        "name": SYSTEM,
        "descr": f"Emulated {nodes}-node Slurm cluster (namespaces on one machine)",
        "hostnames": ["^head$"],
        "modules_system": "nomod",
        # Stage and output on the shared file system, never /dev/shm or TmpFS.
        "prefix": str(results_dir()),
        "partitions": [
            partition("compute", "srun direct launch, PMI per build", "srun", nodes,
                      envs, lay),
            partition("compute_mpirun", "the build's mpirun/mpiexec inside the allocation",
                      "mpirun", nodes, envs, lay),
        ],
    }


def systems_if_up(envs: list[str]) -> list[dict]:
    """[the cluster's system] when a cluster is up in the default directory, else []."""
    state = is_up()
    if not state:
        return []
    return [system(envs, state["nodes"], state["dir"])]
