"""The placements of the current ReFrame session, from its partitions' shapes."""

from __future__ import annotations

import os

from ..placement import (
    POINT_TO_POINT,
    Placement,
    Shape,
    can_host,
    generate_placements,
    oversubscribed,
)


def partition_shape(part) -> Shape:
    """(nodes, cores per node) of a ReFrame partition: extras 'nodes' (else the
    largest nodesN feature) and extras 'cores' (else the detected processor, else
    this machine's cores for a local partition; None when unknown)."""
    extras = getattr(part, "extras", None) or {}
    feats = getattr(part, "features", None) or []
    nodes = extras.get("nodes") or max(
        (int(f[5:]) for f in feats if f.startswith("nodes") and f[5:].isdigit()), default=1)
    cores = extras.get("cores")
    if not cores:
        proc = getattr(part, "processor", None)
        cores = getattr(proc, "num_cpus", None) if proc is not None else None
    if not cores:
        sched = getattr(getattr(part, "scheduler", None), "registered_name", "")
        cores = os.cpu_count() if sched == "local" else None
    return int(nodes), (int(cores) if cores else None)


def current_partitions():
    """The partitions of the current system, or None outside a ReFrame session."""
    try:
        from reframe.core.exceptions import ReframeFatalError
        from reframe.core.runtime import runtime
    except ImportError:
        return None
    try:
        return list(runtime().system.partitions)
    except (ReframeFatalError, AttributeError):  # no ReFrame runtime (plain Python, tests)
        return None


def runtime_placements() -> tuple[Placement, ...]:
    """The placements of the shared `placement` parameter for this ReFrame session."""
    parts = current_partitions()
    if not parts:
        return POINT_TO_POINT
    return generate_placements([partition_shape(p) for p in parts])


def hosting_partitions(placement: Placement) -> list[str] | None:
    """Full names of the current system's partitions that can host the placement
    (None outside ReFrame: fall back to the nodesN feature)."""
    parts = current_partitions()
    if parts is None:
        return None
    return [p.fullname for p in parts if can_host(partition_shape(p), placement)]


def oversubscribes(part, placement: Placement) -> bool:
    """Whether the placement puts more busy ranks on the partition's nodes than they
    have cores. Partition extras `shared_cores`: the physical cores all its nodes
    share (the emulated cluster sets it; a real site leaves it out)."""
    extras = getattr(part, "extras", None) or {}
    return oversubscribed(placement, partition_shape(part)[1], extras.get("shared_cores"))


def oversubscribing_partitions(placement: Placement) -> list[str]:
    """Full names of the current system's partitions that host the placement only
    by oversubscribing their cores ([] outside ReFrame)."""
    parts = current_partitions() or []
    return [p.fullname for p in parts
            if can_host(partition_shape(p), placement) and oversubscribes(p, placement)]


def one_per_node_set(names: list[str]) -> list[str]:
    """The partitions of `names` without those that only launch differently on the
    same nodes as another one of them (extras same_nodes_as: that partition's name)."""
    parts = {p.fullname: p for p in current_partitions() or []}
    def twin(name: str) -> str:
        other = (getattr(parts.get(name), "extras", None) or {}).get("same_nodes_as", "")
        return f"{name.split(':')[0]}:{other}" if other else ""
    return [n for n in names if twin(n) not in names]
