"""The ReFrame system of the emulated cluster.

ReFrame runs inside the head namespace (`mpimatrix cluster reframe -- ...`),
where the hostname is `head`, so the system is selected automatically there.
Two partitions over the same nodes, both with the `squeue-all` scheduler
(ReFrame's `squeue` backend, for Slurm without accounting, which its `slurm`
backend needs; it also sees finished jobs, see squeue_backend.py):

- compute: launcher `srun`, `srun --mpi=<plugin of the build's PMI>` (pmix for
  Open MPI, pmi2 for the MPICH family; rfm/launchers.py);
- compute_mpirun: launcher `build-mpiexec`, the build's own mpirun/mpiexec
  inside the allocation.

Where the machine has NODE_CPUS CPUs for every node, each node runs on CPUs of its
own and ranks are pinned to cores (vcluster/cpus.py); otherwise the nodes share the
machine's cores and no rank is pinned (Open MPI with --bind-to none).
"""

from __future__ import annotations

import os

from ..paths import results_dir
from ..placement import node_features
from ..rfm.launchers import BUILD_MPIEXEC, SRUN
from ..rfm.squeue_all import NAME as SCHEDULER
from ..vcluster.cluster import is_up
from ..vcluster.layout import Layout, default_dir
from ..vcluster.slurm_conf import NODE_CPUS

SYSTEM = "vcluster"
#: Longest a job may pend on the emulated cluster (rfm/squeue_all.py names the reason).
MAX_PENDING = "5m"


def partition(name: str, descr: str, launcher: str, nodes: int, envs: list[str],
              lay: Layout, same_nodes_as: str = "", own_cpus: bool = False) -> dict:
    extras = {"same_nodes_as": same_nodes_as} if same_nodes_as else {}
    # Nodes on CPUs of their own: ranks pinned inside them. Nodes sharing this
    # machine's cores: shared_cores marks layouts with more ranks as oversubscribed,
    # and no rank is pinned.
    cpu = ({"cpu_binding": "core"} if own_cpus else
           {"shared_cores": os.cpu_count() or 1, "cpu_binding": "none"})
    return {
        "name": name,
        "descr": descr,
        "scheduler": SCHEDULER,
        "launcher": launcher,
        "environs": envs,
        "max_jobs": 1,
        "time_limit": "10m",
        "features": [*node_features(nodes), "slurm", "vcluster"],
        "env_vars": [["SLURM_CONF", str(lay.slurm_conf)]],
        "sched_options": {"use_nodes_option": True, "job_submit_timeout": 60},
        # No job waits here for anything but the session's own previous job:
        # max_pending_time bounds what a stuck job can cost.
        "extras": {"nodes": nodes, "cores": NODE_CPUS, **cpu, "max_pending_time": MAX_PENDING,
                   "cluster_dir": str(lay.dir), "net_counters": True, **extras},
    }


def system(envs: list[str], nodes: int, directory=None, own_cpus: bool = False) -> dict:
    lay = Layout.at(directory or default_dir(), nodes)
    return {
        "name": SYSTEM,
        "descr": f"Emulated {nodes}-node Slurm cluster (namespaces on one machine)",
        "hostnames": ["^head$"],
        "modules_system": "nomod",
        # Stage and output on the shared file system, never /dev/shm or TmpFS.
        "prefix": str(results_dir()),
        "partitions": [
            partition("compute", "srun direct launch, PMI per build", SRUN, nodes, envs,
                      lay, own_cpus=own_cpus),
            partition("compute_mpirun", "the build's mpirun/mpiexec inside the allocation",
                      BUILD_MPIEXEC, nodes, envs, lay, same_nodes_as="compute",
                      own_cpus=own_cpus),
        ],
    }


def systems_if_up(envs: list[str]) -> list[dict]:
    """[the cluster's system] when a cluster is up in the default directory, else []."""
    state = is_up()
    if not state:
        return []
    return [system(envs, state["nodes"], state["dir"], own_cpus=bool(state.get("cpus")))]
