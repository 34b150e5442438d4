"""Each emulated node's own CPUs, where the machine has enough of them.

The emulated nodes are processes on one machine. Where it has NODE_CPUS CPUs for
every node, each node's slurmd runs confined to CPUs of its own (taskset), so every
job step it starts runs there too, and the partitions pin each rank to a core of
its node (cpu_binding: core), as on a real cluster. Otherwise the nodes share every
CPU and no rank is pinned: two "nodes" would pin busy-polling ranks to the same
core and stall each other.
"""

from __future__ import annotations

import os

from .slurm_conf import NODE_CPUS


def available() -> list[int]:
    """The CPUs this process may run on."""
    return sorted(os.sched_getaffinity(0))


def own_cpus(nodes: list[str], cpus: list[int] | None = None,
             per_node: int = NODE_CPUS) -> dict[str, list[int]]:
    """{node: its CPUs}, per_node each in order, or {} when there are fewer than
    len(nodes) * per_node CPUs (the nodes then share all of them)."""
    cpus = sorted(available() if cpus is None else cpus)
    if len(cpus) < len(nodes) * per_node:
        return {}
    return {n: cpus[i * per_node:(i + 1) * per_node] for i, n in enumerate(nodes)}


def taskset_prefix(cpus: list[int]) -> list[str]:
    """The command prefix that confines a process (and what it starts) to `cpus`."""
    return ["taskset", "--cpu-list", ",".join(map(str, cpus))] if cpus else []
