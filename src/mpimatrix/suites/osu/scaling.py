"""The collective process-count study of the seeds: OSU's osu_allreduce and osu_alltoall
at the seeds' sizes of interest, on every placement a partition allows (nodes 1..N x
ranks per node 1..cores, 2 ranks or more). reframe_checks/collective_scaling.py runs it,
results/report/scaling.py plots it (docs/scaling.md).

Performance variables: the time per call at each seed size only, named
`<benchmark>_t_<size>` (allreduce_t_4B ... alltoall_t_32KiB), us, lower is better.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...placement import Placement, Shape
from ...units import KiB, human_size
from ..common import Metric
from .catalogue import BY_NAME, OsuBenchmark

#: The seeds' sizes of interest per benchmark (bytes): allreduce at the checksum sizes
#: and around the Ring/Recursive-Doubling switch, alltoall over 1-32 KiB.
SEED_SIZES: dict[str, tuple[int, ...]] = {
    "allreduce": (4, 8, 1 * KiB, 32 * KiB),
    "alltoall": (1 * KiB, 4 * KiB, 16 * KiB, 32 * KiB),
}
BENCHMARKS = tuple(SEED_SIZES)
#: The tag of the study's test cases (`-t scaling`); never in the quick modes.
TAG = "scaling"


def metric_name(benchmark: str, size: int) -> str:
    return f"{benchmark}_t_{human_size(size)}"


@dataclass(frozen=True)
class ScalingBenchmark(OsuBenchmark):
    """An OSU collective with the seed sizes as its only metrics: OSU's -m min:max spans
    them (options.size_range of the quick profile), the table's other rows are kept in
    the run's curve only."""

    @property
    def metrics(self) -> tuple[Metric, ...]:
        return tuple(Metric(metric_name(self.name, s), "latency", ("latency",), s, "us")
                     for s in SEED_SIZES[self.name])


def scaling_benchmark(name: str) -> ScalingBenchmark:
    b = BY_NAME[name]
    return ScalingBenchmark(b.name, b.group, b.kind, b.ranks, quick=False)


def scaling_placements(shapes: list[Shape]) -> tuple[Placement, ...]:
    """Every nodes x ranks per node some shape allows: nodes 1..N, ranks per node
    1..cores (1 when the cores are unknown), 2 ranks or more; by nodes, then ranks per
    node."""
    out = set()
    for nodes, cores in shapes:
        for n in range(1, nodes + 1):
            for ppn in range(1, (cores or 1) + 1):
                if n * ppn >= 2:
                    out.add((n, ppn))
    return tuple(Placement(n, ppn) for n, ppn in sorted(out))
