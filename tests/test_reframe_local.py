"""Real ReFrame runs on this machine's MPIs: placement sanity, IMB, references, storage."""

import json
import socket
import subprocess

import pytest
import yaml
from helpers import CONFIG, REFRAME, passed_cases, report_cases, run_reframe

from mpimatrix.results.measurements import load
from mpimatrix.results.night import judge_night
from mpimatrix.results.reference_set import NO_REFERENCES

pytestmark = [pytest.mark.mpi, pytest.mark.reframe]

QUICK = ["--mode", "quick", "-n", "MpiPlacementCheck", "-n", "ImbCheck", "-r"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="module")
def quick_run(buildset, results):
    proc, report = run_reframe(results, *QUICK)
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, report


def test_quick_run_passes_on_every_build(buildset, quick_run):
    proc, report = quick_run
    cases = passed_cases(proc, report)
    placement = {tc["environ"] for tc in cases if tc["name"].startswith("MpiPlacementCheck")}
    assert placement == {b.environ_name for b in buildset.builds}
    imb_envs = {tc["environ"] for tc in cases if tc["name"].startswith("ImbCheck")}
    assert imb_envs == {b.environ_name for b in buildset.builds if "imb" in b.benchmarks}
    assert imb_envs, "no build with IMB: is the Intel MPI wheel installed?"
    for tc in cases:
        assert tc["build_name"] and tc["build_provenance"]
        if tc["name"].startswith("MpiPlacementCheck"):
            assert tc["hosts"] == [socket.gethostname()]
            assert tc["library"]
        if tc["name"].startswith("ImbCheck"):
            # every declared performance variable has a value; the whole curve is kept
            assert tc["perfvalues"] and all(v[0] is not None for v in tc["perfvalues"].values())
            assert tc["curve"] and all(len(c) >= 1 for c in tc["curve"].values())


def test_tight_references_fail_with_a_clear_message(buildset, quick_run, results):
    """References in ReFrame's $ref format (what `mpimatrix bless` writes, here by
    hand from one session, tolerance 50 %), then made 10x tighter than reality."""
    _, report = quick_run
    refs: dict = {"ImbCheck": {"$index": ["$partition", "$environ", "ref_key"]}}
    for tc in report_cases(report):
        if tc["name"].startswith("ImbCheck") and tc["result"] == "pass":
            for var, pv in tc["perfvalues"].items():
                higher = pv[4] == "MB/s"
                entry = [pv[0] * 10 if higher else pv[0] / 10, -0.5 if higher else None,
                         None if higher else 0.5, pv[4]]
                if pv[0] <= 0:  # e.g. an overlap of 0 %: only reported, never gated
                    entry = [pv[0], None, None, pv[4]]
                refs["ImbCheck"].setdefault("local:default", {}).setdefault(
                    tc["environ"], {}).setdefault(tc["ref_key"], {})[var.rsplit(":", 1)[1]] = entry
    # builds without any reference must run and pass. Two keep theirs: with three or more
    # builds judged, every build 10x slower is the machine (a host factor of about 10, and
    # whichever build strays from it by the tolerance is named: seen in a run); with two,
    # each is judged against its own references, and each is a regression
    judged = sorted(refs["ImbCheck"]["local:default"])
    free_builds = [judged[0], *judged[3:]]
    for free in free_builds:
        del refs["ImbCheck"]["local:default"][free]
    path = results / "references" / "local.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(refs))

    proc, tight = run_reframe(results, "--mode", "quick", "-n",
                              "ImbCheck.*%benchmark=MPI1:PingPong$", "-r")
    assert proc.returncode == 1, proc.stdout[-2000:]
    cases = {tc["environ"]: tc for tc in report_cases(tight)}
    for free in free_builds:
        assert cases[free]["result"] == "pass", (cases[free].get("fail_reason"),
                                                 proc.stdout[-3000:])
    failing = [tc for e, tc in cases.items() if e not in free_builds]
    assert 1 <= len(failing) <= 2, sorted(cases)
    for tc in failing:
        assert tc["result"] == "fail" and tc["fail_phase"] == "performance"
        reason = " ".join(tc["fail_reason"].split())
        # names the benchmark size (in the variable), value and reference
        assert "failed to meet reference(s): latency_8B=" in reason
        ref = refs["ImbCheck"]["local:default"][tc["environ"]]["MPI1:PingPong@intranode"]
        assert f"expected {ref['latency_8B'][0]}" in reason
    # the failing line names the build and the benchmark
    assert "MPI1:PingPong" in proc.stdout and f"+{failing[0]['environ']}" in proc.stdout
    # and the summary names build, benchmark, placement, size, samples, reference and
    # tolerance in one line (without confirmation: one sample)
    lines = judge_night(load(tight), [], NO_REFERENCES).judgement.regressions
    tc = failing[0]
    ref = refs["ImbCheck"]["local:default"][tc["environ"]]["MPI1:PingPong@intranode"]
    want = f"REGRESSION {tc['build_name']} Imb MPI1:PingPong intranode latency at 8 B: +"
    line = next((ln for ln in lines if ln.startswith(want)), None)
    assert line, (want, lines)
    assert f"vs reference {ref['latency_8B'][0]:.3g} us, tolerance +50%)" in line


def test_results_storage_lists_and_compares_sessions(quick_run, results):
    env = {"MPIMATRIX_RESULTS": str(results)}
    import os
    full = {**os.environ, **env}
    out = subprocess.run([REFRAME, "-C", str(CONFIG), "--list-stored-sessions=all"],
                         capture_output=True, text=True, env=full)
    assert out.returncode == 0, out.stderr
    uuids = [tc["session_uuid"] for tc in report_cases(quick_run[1])][:1]
    assert uuids[0] in out.stdout
    cmp = subprocess.run([REFRAME, "-C", str(CONFIG),
                          f"--performance-compare={uuids[0]}/{uuids[0]}/mean:/"],
                         capture_output=True, text=True, env=full)
    assert cmp.returncode == 0, cmp.stderr
    assert "latency_8B" in cmp.stdout and "pdiff" in cmp.stdout


def test_broken_build_is_reported_and_the_others_run(buildset, tmp_path):
    good = next(b for b in buildset.builds if b.provenance == "debian") \
        if any(b.provenance == "debian" for b in buildset.builds) else buildset.builds[0]
    broken = good.to_dict()
    broken.update(name="mpich-9.9.9-vanished", prefix=str(tmp_path / "gone"),
                  family="mpich", benchmarks={})
    builds = tmp_path / "builds.json"
    builds.write_text(json.dumps({"builds": [good.to_dict(),
                                             broken]}))
    proc, report = run_reframe(tmp_path / "res", "-n", "MpiPlacementCheck", "-r",
                               env={"MPIMATRIX_BUILDS": str(builds)})
    assert (f"build mpich-9.9.9-vanished skipped: prefix {tmp_path / 'gone'} does not exist"
            in proc.stderr)
    assert proc.returncode == 0
    assert [tc["environ"] for tc in report_cases(report)] == [good.environ_name]
