"""Rank placements shared by every check: nodes x ranks per node.

ReFrame's mpirun/mpiexec launchers pass no mapping flags, so the placement is
turned into explicit launcher options here (launch.py) and then verified from
the hosts the ranks report (placement_sanity.py; host_problems for programs
that print no hosts, fed by a hostname probe launched like the program).

Besides intranode and internode (point-to-point, 2 ranks), collective layouts
are generated from what the partitions of the current system have (seeds
000/001: 2/4/8 nodes x 1, half and all cores per node; seed 003: full nodes,
growing node counts). Outside ReFrame (no runtime) only the point-to-point
layouts exist.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Layout:
    nodes: int
    ppn: int
    label: str = ""

    @property
    def ranks(self) -> int:
        return self.nodes * self.ppn

    @property
    def name(self) -> str:
        return self.label or f"{self.nodes}x{self.ppn}"

    @property
    def feature(self) -> str:
        """Partition feature a partition needs to host this layout."""
        return f"nodes{self.nodes}"

    @property
    def pair(self) -> bool:
        """A point-to-point layout: exactly 2 ranks."""
        return self.ranks == 2

    def __str__(self) -> str:
        return self.name


INTRANODE = Layout(1, 2, "intranode")
INTERNODE = Layout(2, 1, "internode")
POINT_TO_POINT = (INTRANODE, INTERNODE)


def node_features(nodes: int) -> list[str]:
    """Features of a partition with `nodes` nodes: it can host 1..nodes-node layouts."""
    return [f"nodes{i}" for i in range(1, nodes + 1)]


# -- layouts from the partitions -----------------------------------------------------------
SCALING_NODES = (2, 4, 8)  # seeds 000/001


def partition_shape(part) -> tuple[int, int | None]:
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


def generate_layouts(shapes: list[tuple[int, int | None]]) -> tuple[Layout, ...]:
    """Point-to-point layouts, then collective ones every shape can host somewhere."""
    out: dict[tuple[int, int], Layout] = {(lay.nodes, lay.ppn): lay for lay in POINT_TO_POINT}
    for nodes, cores in shapes:
        ppns = sorted({1, *((cores // 2, cores) if cores else ())} - {0})
        for n in sorted({x for x in SCALING_NODES if x <= nodes} | ({nodes} - {1})):
            for ppn in ppns if n in SCALING_NODES else (1,):  # all nodes x 1 (seed 002)
                out.setdefault((n, ppn), Layout(n, ppn))
        if cores:  # full nodes, growing node count (seed 003)
            counts = {1 << i for i in range(nodes.bit_length()) if 1 << i <= nodes} | {nodes}
            for n in sorted(counts):
                out.setdefault((n, cores), Layout(n, cores))
    rest = sorted((lay for k, lay in out.items() if lay not in POINT_TO_POINT),
                  key=lambda lay: (lay.nodes, lay.ppn))
    return (*POINT_TO_POINT, *rest)


def can_host(shape: tuple[int, int | None], layout: Layout) -> bool:
    nodes, cores = shape
    if layout.nodes > nodes:
        return False
    if layout.pair:
        return True  # 2 ranks may share a core
    return layout.ppn == 1 if cores is None else layout.ppn <= cores


def _current_partitions():
    try:
        from reframe.core.exceptions import ReframeFatalError
        from reframe.core.runtime import runtime
    except ImportError:
        return None
    try:
        return list(runtime().system.partitions)
    except (ReframeFatalError, AttributeError):  # no ReFrame runtime (plain Python, tests)
        return None


def runtime_layouts() -> tuple[Layout, ...]:
    """The layouts of the shared `placement` parameter for this ReFrame session."""
    parts = _current_partitions()
    if not parts:
        return POINT_TO_POINT
    return generate_layouts([partition_shape(p) for p in parts])


def hosting_partitions(layout: Layout) -> list[str] | None:
    """Full names of the current system's partitions that can host the layout
    (None outside ReFrame: fall back to the nodesN feature)."""
    parts = _current_partitions()
    if parts is None:
        return None
    return [p.fullname for p in parts if can_host(partition_shape(p), layout)]


def host_problems(hosts: list[str], layout: Layout) -> list[str]:
    """Check one reported host per rank against the layout."""
    if not hosts:
        return ["no rank reported its host (the hostname probe did not run or failed)"]
    errs = []
    if len(hosts) != layout.ranks:
        errs.append(f"{len(hosts)} rank(s) reported a host, placement {layout.name} has "
                    f"{layout.ranks}")
    return errs + spread_problems(Counter(hosts), layout)


def spread_problems(per_host: Counter, layout: Layout) -> list[str]:
    """Check how many ranks ran on each host against the layout."""
    errs = []
    if len(per_host) != layout.nodes:
        errs.append(f"ranks ran on {len(per_host)} host(s) {sorted(per_host)}, placement "
                    f"{layout.name} needs {layout.nodes}")
    if any(n != layout.ppn for n in per_host.values()):
        errs.append(f"ranks per host {dict(per_host)}, placement {layout.name} needs "
                    f"{layout.ppn} on each")
    return errs
