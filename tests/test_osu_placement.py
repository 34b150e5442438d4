"""Placement placements generated from partitions, and host checks for programs (OSU)
that print no hosts: a hostname probe launched like the program."""

from types import SimpleNamespace

from mpimatrix.placement import (
    INTERNODE,
    INTRANODE,
    Placement,
    can_host,
    generate_placements,
    rank_host_problems,
)
from mpimatrix.rfm.placements import partition_shape, runtime_placements
from mpimatrix.suites.osu.catalogue import BY_NAME


def names(shapes):
    return [p.name for p in generate_placements(shapes)]


def test_this_machine_gets_point_to_point_placements_only():
    assert names([(1, 2)]) == ["intranode", "internode"]
    assert runtime_placements() == (INTRANODE, INTERNODE)  # outside ReFrame


def test_seed_000_001_and_003_placements_from_a_24_core_8_node_partition():
    got = names([(8, 24)])
    # nodes {2, 4, 8} x ppn {1, 12, 24}; 2x1 is the internode layout; full nodes 1..8
    assert got == ["intranode", "internode", "1x24", "2x12", "2x24", "4x1", "4x12", "4x24",
                   "8x1", "8x12", "8x24"]
    # seed 002: 3 nodes x 1 rank; cores unknown -> 1 rank per node only
    assert names([(3, None)]) == ["intranode", "internode", "3x1"]
    # two partitions: the union, each layout hosted only where it fits
    ps = {p.name: p for p in generate_placements([(2, 2), (4, 8)])}
    assert {"2x2", "2x4", "2x8", "4x1", "4x4", "4x8"} <= set(ps)
    assert can_host((2, 2), ps["2x2"]) and not can_host((2, 2), ps["2x8"])
    assert not can_host((2, 2), ps["4x1"]) and can_host((4, 8), ps["4x1"])
    assert can_host((1, 1), INTRANODE)  # 2 ranks may share a core
    assert not can_host((1, 8), INTERNODE)
    assert can_host((3, None), Placement(3, 1)) and not can_host((3, None), Placement(2, 4))


def test_partition_shape_reads_extras_features_processor():
    part = SimpleNamespace(extras={"nodes": 4, "cores": 16}, features=["nodes1"],
                           processor=SimpleNamespace(num_cpus=None),
                           scheduler=SimpleNamespace(registered_name="squeue"))
    assert partition_shape(part) == (4, 16)
    part = SimpleNamespace(extras={}, features=["nodes1", "nodes2", "slurm"],
                           processor=SimpleNamespace(num_cpus=8),
                           scheduler=SimpleNamespace(registered_name="slurm"))
    assert partition_shape(part) == (2, 8)
    part = SimpleNamespace(extras={"nodes": 2}, features=[], processor=None,
                           scheduler=SimpleNamespace(registered_name="squeue"))
    assert partition_shape(part) == (2, None)


def test_host_problems():
    assert rank_host_problems(["n1", "n1"], INTRANODE) == []
    assert rank_host_problems(["n1", "n2"], INTERNODE) == []
    errs = rank_host_problems(["n1", "n1"], INTERNODE)
    assert errs == ["ranks ran on 1 host(s) ['n1'], placement internode needs 2",
                    "ranks per host {'n1': 2}, placement internode needs 1 on each"]
    assert rank_host_problems([], INTRANODE)[0].startswith("no rank reported its host")
    assert "3 rank(s) reported a host" in rank_host_problems(["a", "a", "b"], Placement(2, 2))[0]


def test_point_to_point_benchmarks_fit_pairs_only():
    assert BY_NAME["latency"].fits(2) and not BY_NAME["latency"].fits(4)
    assert BY_NAME["mbw_mr"].fits(2) and not BY_NAME["mbw_mr"].fits(4)
    assert BY_NAME["allreduce"].fits(48) and not BY_NAME["allreduce"].fits(1)
    assert BY_NAME["init"].fits(1)
