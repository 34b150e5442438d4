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
    assert b.binary in ("IMB-MPI1", "IMB-P2P", "IMB-NBC", "IMB-RMA", "IMB-EXT", "IMB-IO")
    assert not (b.quick and b.suite in ("EXT", "IO"))  # too slow for the quick modes
    for sizes in SIZES.values():
        for m in b.metrics:
            assert m.size is None or m.size in sizes


def test_catalogue_counts():
    suites = [b.suite for b in CATALOGUE]
    assert (suites.count("MPI1"), suites.count("P2P"), suites.count("NBC"),
            suites.count("RMA"), suites.count("EXT"), suites.count("IO")) == (19, 8, 13, 17,
                                                                            6, 12)
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


# -- IMB-EXT and IMB-IO: real runs of IMB 2021.11 built from the kit with Debian's
# mpicc.openmpi / mpicc.mpich, 2 ranks, the check's full-profile options (-msglen of
# 1 B .. 4 MiB, -iter 2000,400 -time 10; IMB-IO: -iter 2000,400,10) ---------------------
FULL = SIZES["full"]
EXT_RUNS = ("openmpi-4.1.4-debian_IMB-EXT_all_2ranks.txt",
            "mpich-4.0.2-debian_IMB-EXT_all_2ranks.txt")
IO_RUNS = ("openmpi-4.1.4-debian_IMB-IO_all_2ranks.txt",
           "mpich-4.0.2-debian_IMB-IO_all_2ranks.txt")


@pytest.mark.parametrize("name", EXT_RUNS)
def test_ext_runs_are_complete_in_both_modes(name):
    r = run(name)
    assert r.finalized and not r.errors and not r.bad_rows
    for b in CATALOGUE:
        if b.suite == "EXT":
            assert imb_result_problems(r, b, 2, FULL) == [], b.key
            assert set(imb_curve(r, b, 2)) == set(b.modes or ("default",)), b.key


def test_ext_tables_values_and_columns():
    r = run("openmpi-4.1.4-debian_IMB-EXT_all_2ranks.txt")
    put = BY_KEY["EXT:Unidir_Put"]
    assert put.modes == ("NON-AGGREGATE", "AGGREGATE") and put.max_ranks == 2
    na = r.find("Unidir_Put", 2, "NON-AGGREGATE")
    agg = r.find("Unidir_Put", 2, "AGGREGATE")
    assert na.columns == agg.columns == ["#bytes", "#repetitions", "t[usec]", "Mbytes/sec"]
    # IMB-EXT rounds 1 and 2 B up to 4 B: three 4 B rows, the first (the 1 B request) read
    assert na.sizes()[:4] == [4, 4, 4, 8] and na.row(4)["t[usec]"] == 2.45
    assert put.table_sizes(FULL)[:2] == [4, 8]
    # the metrics come from the NON-AGGREGATE table (as IMB-RMA's)
    assert [metric_value(na, m) for m in put.metrics] == [2.27, 3850.33]
    assert agg.row(8) == {"#bytes": 8, "#repetitions": 2000, "t[usec]": 9.31,
                          "Mbytes/sec": 0.86}
    assert na.row(4194304)["#repetitions"] == 100
    acc = r.find("Accumulate", 2, "NON-AGGREGATE")
    assert acc.columns == ["#bytes", "#repetitions", "t_min[usec]", "t_max[usec]",
                           "t_avg[usec]"]
    assert [metric_value(acc, m) for m in BY_KEY["EXT:Accumulate"].metrics] == [4.02, 10211.47]
    window = r.find("Window", 2)
    assert window.mode == "" and window.row(1 << 20)["t_avg[usec]"] == 261.76
    curve = imb_curve(r, BY_KEY["EXT:Bidir_Get"], 2)
    assert curve["AGGREGATE"][-1] == {"size": 4194304, "repetitions": 100, "t": 931.90,
                                      "bandwidth": 4500.83}


@pytest.mark.parametrize("name", IO_RUNS)
def test_io_runs_are_complete(name):
    r = run(name)
    assert r.finalized and not r.errors and not r.bad_rows
    io = [b for b in CATALOGUE if b.suite == "IO"]
    assert {b.name for b in io} == {t.benchmark for t in r.tables}
    for b in io:
        assert imb_result_problems(r, b, 2, FULL) == [], b.key
        # a Read prints an AGGREGATE table only
        assert set(imb_curve(r, b, 2)) == ({"AGGREGATE", "NON-AGGREGATE"} if "Write" in b.name
                                           else {"AGGREGATE"}), b.key


def test_io_single_process_tables_and_values():
    r = run("openmpi-4.1.4-debian_IMB-IO_all_2ranks.txt")
    sw = BY_KEY["IO:S_Write_Indv"]
    assert sw.single and sw.table_procs(2) == 1 and sw.modes[0] == "AGGREGATE"
    # one process writes, the other waits: "#processes = 1" on 2 ranks
    assert r.find("S_Write_Indv", 2) is None
    agg = r.find("S_Write_Indv", 1, "AGGREGATE")
    assert agg.columns == ["#bytes", "#repetitions", "t[usec]", "Mbytes/sec"]
    assert agg.sizes() == FULL  # IMB-IO takes 1 and 2 B as they are
    assert [metric_value(agg, m) for m in sw.metrics] == [9.99, 1691.52]
    na = r.find("S_Write_Indv", 1, "NON-AGGREGATE")
    assert na.row(8) == {"#bytes": 8, "#repetitions": 10, "t[usec]": 7598.87, "Mbytes/sec": 0}
    assert na.row(4194304)["Mbytes/sec"] == 2784.87
    pw = r.find("P_Write_Indv", 2, "AGGREGATE")
    assert pw.columns == ["#bytes", "#repetitions", "t_min[usec]", "t_max[usec]",
                          "t_avg[usec]", "Mbytes/sec"]
    b = BY_KEY["IO:P_Write_Indv"]
    assert [metric_value(pw, m) for m in b.metrics] == [
        pw.row(8)["t_avg[usec]"], pw.row(4194304)["Mbytes/sec"]]
    assert b.iterations("full") == ["-iter", "2000,400,10", "-time", "10"]
    assert BY_KEY["EXT:Unidir_Put"].iterations("full") == ["-iter", "2000,400", "-time", "10"]


def test_io_run_killed_mid_table_names_the_size_and_the_missing_mode():
    """Recorded: Debian MPICH 4.0.2, IMB-IO P_Write_Indv, one rank SIGKILLed after 256 KiB
    of the AGGREGATE table; the NON-AGGREGATE table never came."""
    r = run("mpich-4.0.2-debian_IMB-IO_P_Write_Indv_killed.txt")
    assert not r.finalized and "BAD TERMINATION" in r.errors
    errs = imb_result_problems(r, BY_KEY["IO:P_Write_Indv"], 2, FULL)
    assert errs == [
        "IMB-IO P_Write_Indv AGGREGATE died at 512KiB (524288 B): table stopped after "
        "256KiB, 4 of 23 sizes missing (BAD TERMINATION)",
        "IMB-IO P_Write_Indv NON-AGGREGATE: no result table for 2 processes; the run ended "
        "before MPI_Finalize (BAD TERMINATION)"]
    assert len(imb_curve(r, BY_KEY["IO:P_Write_Indv"], 2)["AGGREGATE"]) == 19


def test_ext_output_cut_in_the_middle_of_a_table():
    """The real IMB-EXT output cut after Unidir_Put's 64 KiB row (a job killed at its
    time limit leaves no more)."""
    text = (IMB_DIR / EXT_RUNS[1]).read_text()
    na = text.index("MODE: NON-AGGREGATE", text.index("Benchmarking Unidir_Put"))
    cut = text.index("\n", text.index("        65536 ", na))
    r = imb_output.parse(text[:cut + 1])
    assert not r.finalized and not r.errors
    # the AGGREGATE table came whole; 21 sizes: 1 and 2 B are 4 B rows
    errs = imb_result_problems(r, BY_KEY["EXT:Unidir_Put"], 2, FULL)
    assert errs == ["IMB-EXT Unidir_Put NON-AGGREGATE died at 128KiB (131072 B): table "
                    "stopped after 64KiB, 6 of 21 sizes missing"]
    # (whole tables, but the run did not end)
    assert imb_result_problems(r, BY_KEY["EXT:Unidir_Get"], 2, FULL) == [
        "IMB-EXT Unidir_Get: the run ended before MPI_Finalize"]
    assert imb_result_problems(r, BY_KEY["EXT:Bidir_Put"], 2, FULL) == [
        f"IMB-EXT Bidir_Put {m}: no result table for 2 processes; the run ended before "
        "MPI_Finalize" for m in ("NON-AGGREGATE", "AGGREGATE")]
