"""An emulated multi-node Slurm cluster on one machine.

A head "node" (slurmctld, munged, the login shell where ReFrame runs) and N
compute nodes (one slurmd each), every one in its own network, UTS and mount
namespaces with its own hostname, address on a private bridge (10.77.0.0/24,
which exists only inside these namespaces), /etc/hosts, /dev/shm, boot_id and
a private cgroup tree. See docs/cluster.md.

Modules: layout (names, addresses, files), privileges (root/capability
probe), slurm_conf (generated configuration), namespaces (holder processes,
links), daemons (munged/slurmctld/slurmd, killing by PID), cluster
(up/down/status/exec/kill). Its ReFrame system is site/vcluster_system.py, its
command line cli/cluster.py.
"""

from .layout import ClusterError, Layout

__all__ = ["ClusterError", "Layout"]
