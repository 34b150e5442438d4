"""Rank placements shared by every check: nodes x ranks per node.

ReFrame's mpirun/mpiexec launchers pass no mapping flags, so a placement is
turned into explicit launcher options (rfm.launchers) and then verified from the
hosts the ranks report (`rank_host_problems`; the placement probe's own output
in suites.probe).

Besides intranode and internode (point-to-point, 2 ranks), collective
placements are generated from the shapes of the partitions of the current
system: 2, 4 and 8 nodes x 1, half and all cores per node (the process-count
scaling of the IMB studies), all nodes x 1, and full nodes at 1, 2, 4 ... nodes.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
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
        """Partition feature a partition needs to host this placement."""
        return f"nodes{self.nodes}"

    @property
    def pair(self) -> bool:
        """A point-to-point placement: exactly 2 ranks."""
        return self.ranks == 2

    def __str__(self) -> str:
        return self.name


INTRANODE = Placement(1, 2, "intranode")
INTERNODE = Placement(2, 1, "internode")
POINT_TO_POINT = (INTRANODE, INTERNODE)


def placement_named(name: str) -> Placement | None:
    """The placement a name stands for (intranode, internode, 4x2), None for another name."""
    fixed = {p.label: p for p in POINT_TO_POINT}
    if name in fixed:
        return fixed[name]
    m = re.fullmatch(r"(\d+)x(\d+)", name)
    return Placement(int(m.group(1)), int(m.group(2))) if m else None

#: Node counts of the collective scaling placements.
SCALING_NODES = (2, 4, 8)

#: (nodes, cores per node or None when unknown) of a partition.
Shape = tuple[int, "int | None"]


def node_features(nodes: int) -> list[str]:
    """Features of a partition with `nodes` nodes: it can host 1..nodes-node placements."""
    return [f"nodes{i}" for i in range(1, nodes + 1)]


def generate_placements(shapes: list[Shape]) -> tuple[Placement, ...]:
    """Point-to-point placements, then the collective ones some shape can host."""
    out: dict[tuple[int, int], Placement] = {(p.nodes, p.ppn): p for p in POINT_TO_POINT}
    for nodes, cores in shapes:
        ppns = sorted({1, *((cores // 2, cores) if cores else ())} - {0})
        for n in sorted({x for x in SCALING_NODES if x <= nodes} | ({nodes} - {1})):
            for ppn in ppns if n in SCALING_NODES else (1,):  # all nodes x 1 rank
                out.setdefault((n, ppn), Placement(n, ppn))
        if cores:  # full nodes, growing node count
            counts = {1 << i for i in range(nodes.bit_length()) if 1 << i <= nodes} | {nodes}
            for n in sorted(counts):
                out.setdefault((n, cores), Placement(n, cores))
    rest = sorted((p for p in out.values() if p not in POINT_TO_POINT),
                  key=lambda p: (p.nodes, p.ppn))
    return (*POINT_TO_POINT, *rest)


def can_host(shape: Shape, placement: Placement) -> bool:
    nodes, cores = shape
    if placement.nodes > nodes:
        return False
    if placement.pair:
        return True  # 2 ranks may share a core
    return placement.ppn == 1 if cores is None else placement.ppn <= cores


def oversubscribed(placement: Placement, cores: int | None,
                   shared_cores: int | None = None) -> bool:
    """More busy ranks than the cores the placement's nodes really have: more than
    `cores` per node, or, on nodes that share `shared_cores` physical cores (an
    emulated cluster on one machine), more than those in all."""
    if shared_cores and placement.ranks > shared_cores:
        return True
    return bool(cores) and placement.ppn > cores


def rank_host_problems(hosts: list[str], placement: Placement) -> list[str]:
    """Check one reported host per rank against the placement."""
    if not hosts:
        return ["no rank reported its host (the hostname probe did not run or failed)"]
    errs = []
    if len(hosts) != placement.ranks:
        errs.append(f"{len(hosts)} rank(s) reported a host, placement {placement.name} has "
                    f"{placement.ranks}")
    return errs + spread_problems(Counter(hosts), placement)


def spread_problems(per_host: Counter, placement: Placement) -> list[str]:
    """Check how many ranks ran on each host against the placement."""
    errs = []
    if len(per_host) != placement.nodes:
        errs.append(f"ranks ran on {len(per_host)} host(s) {sorted(per_host)}, placement "
                    f"{placement.name} needs {placement.nodes}")
    if any(n != placement.ppn for n in per_host.values()):
        errs.append(f"ranks per host {dict(per_host)}, placement {placement.name} needs "
                    f"{placement.ppn} on each")
    return errs
