"""Check what the placement probe (reframe_checks/src/mpi_placement.c) printed
against the placement and the build.

Each rank prints `MPIMATRIX rank=R size=S host=H node_ranks=L`; rank 0 also
prints `MPIMATRIX library=<MPI_Get_library_version, lines joined by '|'>`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ...placement import Placement, spread_problems

_RANK = re.compile(r"^MPIMATRIX rank=(\d+) size=(\d+) host=(\S+) node_ranks=(\d+)", re.M)
_LIB = re.compile(r"^MPIMATRIX library=(.*)$", re.M)


@dataclass
class PlacementReport:
    ranks: list[tuple[int, int, str, int]]
    library: str

    @property
    def hosts(self) -> list[str]:
        return sorted({h for _, _, h, _ in self.ranks})


def parse(text: str) -> PlacementReport:
    ranks = [(int(r), int(s), h, int(n)) for r, s, h, n in _RANK.findall(text)]
    libs = _LIB.findall(text)
    return PlacementReport(sorted(ranks), libs[0].strip() if libs else "")


def placement_output_problems(text: str, placement: Placement, version_regex: str,
                              shared_memory: bool = True) -> list[str]:
    """What is wrong with the probe's output; `shared_memory` False: a build whose device
    has no shared memory (each rank its own shared-memory node)."""
    rep = parse(text)
    want = placement.ranks
    if not rep.ranks:
        return ["no rank reported: the program did not start or died before printing"]
    errs = []
    sizes = Counter(s for _, s, _, _ in rep.ranks)
    if set(sizes) != {want}:
        if set(sizes) == {1}:
            errs.append(f"every rank saw world size 1 ({len(rep.ranks)} singletons): the "
                        "launcher did not wire the ranks together (PMI mismatch, e.g. "
                        "srun --mpi=pmi2 with Open MPI, or an MPI built without Slurm "
                        "support)")
        else:
            errs.append(f"world size {dict(sizes)} != {want}")
    ids = [r for r, _, _, _ in rep.ranks]
    if sorted(ids) != list(range(want)):
        errs.append(f"ranks reported {ids}, expected 0..{want - 1}")
    errs += spread_problems(Counter(h for _, _, h, _ in rep.ranks), placement)
    shared = {n for _, _, _, n in rep.ranks}
    per_node = placement.ppn if shared_memory else 1
    if shared != {per_node}:
        errs.append(f"MPI sees {sorted(shared)} rank(s) per shared-memory node, "
                    f"expected {per_node} ("
                    + ("nodes that are not what they seem?)" if shared_memory else
                       "the build's device has no shared memory: one per rank)"))
    if not rep.library:
        errs.append("rank 0 printed no MPI library version")
    elif not re.search(version_regex, rep.library):
        errs.append(f"MPI library is {rep.library.split('|')[0]!r}, which does not match "
                    f"the build (expected /{version_regex}/): wrong libmpi picked up at run "
                    "time?")
    return errs
