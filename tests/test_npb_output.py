"""NPB's output parsed, and judged, on real recorded runs (tests/fixtures/npb/README.md):
every kernel of class S on Debian Open MPI and MPICH, two of class A, a wrong answer
(UNSUCCESSFUL), a run killed half-way, BT on a count that is not a square, CG on one
that is not a power of two."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpimatrix.builds.bench_npb import CLASSES as BUILT_CLASSES
from mpimatrix.builds.bench_npb import KERNELS as BUILT_KERNELS
from mpimatrix.builds.bench_npb import (
    fortran_wrapper,
    is_npb_tree,
    missing_reasons,
    npb_tree_version,
)
from mpimatrix.suites.common import metric_value
from mpimatrix.suites.npb.catalogue import (
    BY_NAME,
    CLASSES,
    KERNELS,
    METRICS,
    NpbBenchmark,
    power_of_two,
    square,
)
from mpimatrix.suites.npb.output import parse
from mpimatrix.suites.npb.sanity import npb_result_problems

FIXTURES = Path(__file__).parent / "fixtures" / "npb"


def recorded(name: str):
    return parse((FIXTURES / f"{name}.txt").read_text())


def bench(kernel: str, klass: str = "S") -> NpbBenchmark:
    return NpbBenchmark(BY_NAME[kernel], klass)


GOOD = sorted(p.stem for p in FIXTURES.glob("*.txt") if p.stem.count("-") == 1)


@pytest.mark.parametrize("name", GOOD)
def test_every_good_run_is_a_result(name):
    """<mpi>-<kernel>.<class>.<ranks>: complete, verified, no problem, both values."""
    kernel, klass, ranks = name.split("-", 1)[1].split(".")
    run = recorded(name)
    assert run.finished and run.verified and run.version == "3.4"
    assert (run.benchmark, run.klass, run.header_class) == (kernel.upper(), klass, klass)
    assert run.total_processes == run.active_processes == int(ranks)
    assert npb_result_problems(run, bench(kernel.upper(), klass), int(ranks)) == []
    values = {m.name: metric_value(run, m) for m in METRICS}
    assert values["mops_total"] > 0 and values["time"] >= 0


def test_the_summary_fields():
    run = recorded("ompi-cg.S.2")
    assert (run.size, run.iterations, run.time, run.mops_total, run.mops_per_process) == (
        "1400", 15, 0.38, 177.65, 88.82)
    assert run.operation == "floating point" and run.verification == "SUCCESSFUL"
    assert recorded("mpich-bt.S.1").size == "12x12x12"
    assert recorded("ompi-is.S.2").time == 0.0  # NPB prints 2 decimals: IS S is faster
    assert recorded("ompi-ep.S.2").iterations == 0
    assert recorded("mpich-cg.A.2").size == "14000"


def test_a_wrong_answer_is_a_failure_never_a_value():
    """CG class S built with 10 iterations instead of 15 (npbparams.h edited, README):
    NPB calls the problem class U (no class it knows), prints its numbers and
    Verification = UNSUCCESSFUL."""
    run = recorded("ompi-cg.S.2-niter10-unsuccessful")
    assert run.finished and not run.verified and run.verification == "UNSUCCESSFUL"
    assert run.mops_total > 0  # a rate is printed all the same
    assert npb_result_problems(run, bench("CG"), 2) == [
        "NPB CG.S: the program ran class U, not S (a binary of another class?)",
        "NPB CG.S: Verification = UNSUCCESSFUL: NPB's answer differs from the class U "
        "reference (a wrong result)"]


def test_a_run_killed_half_way():
    """LU class A killed after 3 s: the header and two time steps, no summary."""
    run = recorded("mpich-lu.A.2-killed-truncated")
    assert run.benchmark == "LU" and run.header_class == "A"
    assert not run.completed and not run.finished and run.row() is None
    errs = npb_result_problems(run, bench("LU", "A"), 2)
    assert errs == ["NPB LU.A: the run ended before NPB's results (last line: "
                    "'Time step   20')"], errs
    assert npb_result_problems(parse(""), bench("LU"), 2) == [
        "NPB LU.S: the run ended before NPB's results (no output)"]


def test_bt_on_a_count_that_is_not_a_square():
    """BT on 2 ranks runs on 1 ('Active procs'): verified, yet not the run asked for."""
    run = recorded("ompi-bt.S.2-one-active")
    assert run.verified and (run.total_processes, run.active_processes) == (2, 1)
    assert npb_result_problems(run, bench("BT"), 2) == [
        "NPB BT.S: only 1 of 2 processes worked (BT needs a square process count)"]


def test_cg_on_a_count_that_is_not_a_power_of_two():
    """NPB's own error (before its header) and the MPI_ABORT that follows it are the
    reason (stdout and stderr recorded together)."""
    run = recorded("ompi-cg.S.3-not-power-of-two")
    assert not run.completed and run.benchmark == ""
    assert "ERROR: Number of processes (3) is not a power of two (2?)" in run.errors
    assert "MPI_ABORT was invoked" in run.errors
    (err,) = npb_result_problems(run, bench("CG"), 3)
    assert "ended before NPB's results" in err and "not a power of two" in err


def test_another_class_or_process_count_than_asked():
    run = recorded("mpich-cg.A.2")
    assert npb_result_problems(run, bench("CG", "S"), 2) == [
        "NPB CG.S: the program ran class A, not S (a binary of another class?)"]
    assert npb_result_problems(run, bench("CG", "A"), 4) == [
        "NPB CG.A: 2 processes ran, the placement has 4"]


def test_process_counts_each_kernel_allows():
    assert [n for n in range(1, 17) if power_of_two(n)] == [1, 2, 4, 8, 16]
    assert [n for n in range(1, 17) if square(n)] == [1, 4, 9, 16]
    assert [n for n in (1, 2, 3, 4, 8, 9) if BY_NAME["CG"].allows(n)] == [2, 4, 8]
    assert [n for n in (1, 2, 3, 4, 8, 9) if BY_NAME["SP"].allows(n)] == [1, 4, 9]


def test_the_build_and_the_checks_agree_on_kernels_and_classes():
    assert {k.name.lower(): k.language for k in KERNELS} == BUILT_KERNELS
    assert CLASSES == BUILT_CLASSES
    assert [m.info() for m in METRICS] == [
        {"quantity": "mops_total", "unit": "Mop/s", "better": "higher"},
        {"quantity": "time", "unit": "s", "better": "lower"}]


@pytest.mark.parametrize("cc, fc", [
    ("/usr/bin/mpicc.openmpi", "/usr/bin/mpif90.openmpi"),
    ("/usr/bin/mpicc.mpich", "/usr/bin/mpif90.mpich"),
    ("/opt/impi/bin/mpiicc", "/opt/impi/bin/mpiifort"),
    ("/opt/impi/bin/mpiicx", "/opt/impi/bin/mpiifx"),
    ("mpicc", "mpif90"),
])
def test_the_fortran_wrapper_beside_the_c_wrapper(cc, fc):
    assert fortran_wrapper(cc) == fc


def test_a_release_tree_and_what_an_install_lacks(tmp_path):
    mpi = tmp_path / "NPB3.4" / "NPB3.4-MPI"
    for d in ("config", "sys", "IS"):
        (mpi / d).mkdir(parents=True)
    (mpi / "config" / "make.def.template").write_text("MPIFC = mpif90\n")
    (mpi / "sys" / "setparams.c").write_text('#define VERSION "3.4"\n')
    assert is_npb_tree(mpi) and is_npb_tree(mpi.parent) and not is_npb_tree(tmp_path)
    assert npb_tree_version(mpi.parent) == npb_tree_version(mpi) == "3.4"
    (tmp_path / "bin").mkdir()
    (tmp_path / "npb-missing.txt").write_text(
        "cg.S: no Fortran MPI wrapper (mpif90 not found): the C kernel (IS) only\n")
    assert missing_reasons(tmp_path / "bin") == {
        "cg.S.x": "no Fortran MPI wrapper (mpif90 not found): the C kernel (IS) only"}
    assert missing_reasons(tmp_path / "nowhere" / "bin") == {}
