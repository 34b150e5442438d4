"""Rank placements shared by every check: nodes x ranks per node.

ReFrame's mpirun/mpiexec launchers pass no mapping flags, so the placement is
turned into explicit launcher options here (launch.py) and then verified from
the hosts the ranks report (placement_sanity.py).
"""

from __future__ import annotations

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

    def __str__(self) -> str:
        return self.name


INTRANODE = Layout(1, 2, "intranode")
INTERNODE = Layout(2, 1, "internode")
POINT_TO_POINT = (INTRANODE, INTERNODE)


def node_features(nodes: int) -> list[str]:
    """Features of a partition with `nodes` nodes: it can host 1..nodes-node layouts."""
    return [f"nodes{i}" for i in range(1, nodes + 1)]
