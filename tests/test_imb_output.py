"""IMB parser and completeness checks on recorded real IMB runs (tests/fixtures/imb)."""

import pytest
from helpers import FIXTURES

from mpimatrix.suites.common import metric_value
from mpimatrix.suites.imb import output as imb_output
from mpimatrix.suites.imb.catalogue import BY_KEY, CATALOGUE, METRICS_OF_KIND, SIZES
from mpimatrix.suites.imb.sanity import imb_curve, imb_result_problems
from mpimatrix.units import human_size

IMB_DIR = FIXTURES / "imb"
QUICK = SIZES["quick"]


def run(name):
    return imb_output.parse((IMB_DIR / name).read_text())



def test_mpi1_full_catalogue_parses_and_is_complete():
    r = run("impi-2021.18.1_IMB-MPI1_all_2ranks.txt")
    assert r.finalized and not r.errors
    names = {t.benchmark for t in r.tables}
    mpi1 = {b.name for b in CATALOGUE if b.suite == "MPI1"}
    assert len(mpi1) == 19 and mpi1 <= names
    for b in CATALOGUE:
        if b.suite == "MPI1":
            assert imb_result_problems(r, b, 2, QUICK) == [], b.key
    pp = r.find("PingPong", 2)
    assert pp.sizes() == QUICK
    assert pp.row(8)["t[usec]"] > 0
    assert metric_value(pp, METRICS_OF_KIND["p2p"][1]) == pp.row(4194304)["Mbytes/sec"]
    barrier = r.find("Barrier", 2)
    assert not barrier.sized and metric_value(barrier, METRICS_OF_KIND["unsized"][0]) > 0


def test_rma_modes_nbc_and_p2p_tables():
    rma = run("mpich-4.0.2-debian_IMB-RMA_all_2ranks.txt")
    up = BY_KEY["RMA:Unidir_put"]
    assert imb_result_problems(rma, up, 2, QUICK) == []
    assert set(imb_curve(rma, up, 2)) == {"NON-AGGREGATE", "AGGREGATE"}
    cas = rma.find("Compare_and_swap", 2, "NON-AGGREGATE")
    assert cas.sizes() == [4] and metric_value(cas, METRICS_OF_KIND["atomic"][0]) > 0
    for b in CATALOGUE:
        if b.suite == "RMA":
            assert imb_result_problems(rma, b, 2, QUICK) == [], b.key

    nbc = run("mpich-5.0.2-pypi_IMB-NBC_all_2ranks.txt")
    for b in CATALOGUE:
        if b.suite == "NBC":
            assert imb_result_problems(nbc, b, 2, QUICK) == [], b.key
    ibcast = nbc.find("Ibcast", 2)
    assert "overlap[%]" in ibcast.columns
    assert metric_value(ibcast, METRICS_OF_KIND["nbc"][1]) == ibcast.row(1 << 20)["t_pure[usec]"]

    p2p = run("mpich-5.0.2-pypi_IMB-P2P_all_2ranks.txt")
    assert p2p.invalid == {"Stencil2D": 2, "Stencil3D": 2}
    errs = imb_result_problems(p2p, BY_KEY["P2P:Stencil2D"], 2, QUICK)
    assert errs == ["IMB-P2P Stencil2D: IMB says the benchmark is invalid for 2 processes"]
    assert imb_result_problems(p2p, BY_KEY["P2P:PingPong"], 2, QUICK) == []


def test_run_killed_mid_table_reports_the_size():
    """Seed 000: Gather died from 2048 B. Here a real rank was SIGKILLed after 1024 B."""
    r = run("mpich-4.0.2-debian_IMB-MPI1_Gather_killed.txt")
    assert not r.finalized
    assert "BAD TERMINATION" in r.errors
    full = SIZES["full"]
    errs = imb_result_problems(r, BY_KEY["MPI1:Gather"], 2, full)
    assert len(errs) == 1
    assert errs[0].startswith("IMB-MPI1 Gather died at 2KiB (2048 B): table stopped after "
                              "1KiB, 12 of 23 sizes missing")
    assert "BAD TERMINATION" in errs[0]
    # the partial curve is still kept for the run record
    assert len(imb_curve(r, BY_KEY["MPI1:Gather"], 2)["default"]) == 11


def test_missing_table_and_wrong_process_count():
    r = run("impi-2021.18.1_IMB-MPI1_all_2ranks.txt")
    errs = imb_result_problems(r, BY_KEY["MPI1:Allreduce"], 4, QUICK)
    assert errs == ["IMB-MPI1 Allreduce: no result table for 4 processes"]


@pytest.mark.parametrize("b", CATALOGUE, ids=lambda b: b.key)
def test_catalogue_entries_are_consistent(b):
    assert b.kind in METRICS_OF_KIND
    assert b.binary in ("IMB-MPI1", "IMB-P2P", "IMB-NBC", "IMB-RMA")
    for sizes in SIZES.values():
        for m in b.metrics:
            assert m.size is None or m.size in sizes


def test_catalogue_counts():
    suites = [b.suite for b in CATALOGUE]
    assert (suites.count("MPI1"), suites.count("P2P"), suites.count("NBC"),
            suites.count("RMA")) == (19, 8, 13, 17)
    assert len(BY_KEY) == len(CATALOGUE)


def test_human_size():
    assert [human_size(n) for n in (0, 8, 2048, 3000, 1 << 20)] == [
        "0B", "8B", "2KiB", "3000B", "1MiB"]
    assert human_size(1 << 20, " ") == "1 MiB"


def test_reductions_round_sizes_up_to_whole_floats():
    """Reductions use MPI_FLOAT: a 1..4 B request prints three 4 B rows (real full sweep)."""
    r = run("mpich-4.0.2-debian_IMB-MPI1_Allreduce_full_sweep.txt")
    table = r.find("Allreduce", 2)
    assert table.sizes()[:4] == [4, 4, 4, 8]
    allreduce = BY_KEY["MPI1:Allreduce"]
    assert allreduce.table_sizes([1, 2, 4, 8]) == [4, 8]
    assert imb_result_problems(r, allreduce, 2, SIZES["full"]) == []
    # the same table is incomplete for a benchmark on bytes
    errs = imb_result_problems(r, BY_KEY["MPI1:Allreduce"].__class__(
        "MPI1", "Allreduce", "coll"), 2, SIZES["full"])
    assert errs == ["IMB-MPI1 Allreduce: sizes 1B, 2B missing from the table"]


def test_run_cut_off_before_the_benchmark_started_says_so():
    """Constructed from the start of a real IMB-MPI1 output: the run stops after the
    header, before "# Benchmarking Allreduce"."""
    text = (IMB_DIR / "impi-2021.18.1_IMB-MPI1_all_2ranks.txt").read_text()
    head = text[:text.index("# Benchmarking")]
    r = imb_output.parse(head, "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n")
    errs = imb_result_problems(r, BY_KEY["MPI1:Allreduce"], 2, QUICK)
    assert errs == ["IMB-MPI1 Allreduce: no result table for 2 processes; the run ended "
                    "before MPI_Finalize (BAD TERMINATION)"]


PINGPONG = ("# Benchmarking PingPong\n# #processes = 2\n"
            "       #bytes #repetitions      t[usec]   Mbytes/sec\n"
            "            8          200         {t}         {bw}\n"
            "         {size}          200         0.30         {bw4}\n\n"
            "# All processes entering MPI_Finalize\n")


@pytest.mark.parametrize("t,bw,size,bw4,message", [
    ("nan", "50.0", "4194304", "7000.0", "impossible values t[usec]=nan at 8B"),
    ("inf", "50.0", "4194304", "7000.0", "impossible values t[usec]=inf at 8B"),
    ("-0.11", "50.0", "4194304", "7000.0", "impossible values t[usec]=-0.11 at 8B"),
    ("0.11", "-5.0", "4194304", "7000.0", "impossible values Mbytes/sec=-5.0 at 8B"),
    ("0.11", "50.0", "4194304", "0.00", "impossible values bandwidth_4MiB=0"),
    ("0.11", "50.0", "nan", "7000.0", "a row with an impossible size: PingPong: nan"),
    ("0.11", "50.0", "1e400", "7000.0", "a row with an impossible size: PingPong: 1e400"),
])
def test_impossible_values_fail_the_sanity(t, bw, size, bw4, message):
    r = imb_output.parse(PINGPONG.format(t=t, bw=bw, size=size, bw4=bw4))
    errs = imb_result_problems(r, BY_KEY["MPI1:PingPong"], 2, [8])
    assert any(message in e for e in errs), errs


def test_zero_bandwidth_of_a_slow_small_message_is_rounding():
    """IMB prints 2 decimals: 8 B in 4.7 ms is 0.00 MB/s (recorded on Debian MPICH
    4.0.2 with both cores busy); the sanity must not call that impossible."""
    r = imb_output.parse(PINGPONG.format(t="4749.83", bw="0.00", size="4194304", bw4="867.57"))
    assert imb_result_problems(r, BY_KEY["MPI1:PingPong"], 2, [8, 4194304]) == []


def test_imb_time_budget_running_out_is_named():
    """IMB stops a table when its -time budget runs out (recorded: IMB-NBC Ibcast on
    PyPI MPICH 5.0.2 with both cores busy); that is not the benchmark dying."""
    text = ("# Benchmarking Ibcast \n# #processes = 2 \n"
            "       #bytes #repetitions t_ovrl[usec] t_pure[usec]  t_CPU[usec]   overlap[%]\n"
            "            8          200        37.91        29.93        28.65        69.05\n"
            "         1024          200        22.06        10.21        10.42         0.00\n"
            "        65536          200      7863.27      2873.33      4081.81         0.00\n"
            "      1048576 time-out.; Time limit (secs_per_sample * msg_sizes_list_len) is "
            "over; use \"-time X\" or SECS_PER_SAMPLE=X (IMB_settings.h) to increase time "
            "limit.\n\n\n# All processes entering MPI_Finalize\n")
    r = imb_output.parse(text)
    assert r.find("Ibcast", 2).timed_out_at == 1 << 20
    errs = imb_result_problems(r, BY_KEY["NBC:Ibcast"], 2, [8, 1024, 65536, 1 << 20])
    assert errs == ["IMB-NBC Ibcast: IMB's own time budget (-time, seconds per size x sizes) "
                    "ran out at 1MiB: the run was too slow here (a loaded or oversubscribed "
                    "node?); 1 of 4 sizes missing"]
