"""Real ReFrame runs on this machine's MPIs: placement sanity, IMB, references, storage."""

import json
import socket
import subprocess

import pytest
import yaml
from helpers import CONFIG, REFRAME, passed_cases, report_cases, run_reframe

from mpimatrix.builds.record import dump_builds
from mpimatrix.results import references, summary

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


def test_bless_then_tight_references_fail_with_a_clear_message(buildset, quick_run, results):
    _, report = quick_run
    refs = references.build_references([report], tolerance=0.5, system="local")
    path = results / "references" / "local.yaml"
    references.write(refs, path)
    loaded = yaml.safe_load(path.read_text())
    env = next(b.environ_name for b in buildset.builds if "imb" in b.benchmarks)
    entry = loaded["ImbCheck"]["local:default"][env]["MPI1:PingPong@intranode"]
    assert entry["latency_8B"][1:] == [None, 0.5, "us"]
    assert entry["bandwidth_4MiB"][1:] == [-0.5, None, "MB/s"]

    # a reference 10x tighter than reality: latency 10x lower, bandwidth 10x higher
    for per_env in loaded["ImbCheck"]["local:default"].values():
        for pvars in per_env.values():
            for ref in pvars.values():
                ref[0] = ref[0] / 10 if ref[3] == "us" else ref[0] * 10
    # one build keeps no reference at all: it must run and pass
    free = sorted(loaded["ImbCheck"]["local:default"])[0]
    del loaded["ImbCheck"]["local:default"][free]
    path.write_text(yaml.safe_dump(loaded))

    proc, tight = run_reframe(results, "--mode", "quick", "-n",
                              "ImbCheck.*%benchmark=MPI1:PingPong$", "-r")
    assert proc.returncode == 1, proc.stdout[-2000:]
    cases = {tc["environ"]: tc for tc in report_cases(tight)}
    assert cases[free]["result"] == "pass"
    failing = [tc for e, tc in cases.items() if e != free]
    assert failing
    for tc in failing:
        assert tc["result"] == "fail" and tc["fail_phase"] == "performance"
        reason = " ".join(tc["fail_reason"].split())
        # names the benchmark size (in the variable), value and reference
        assert "failed to meet reference(s): latency_8B=" in reason
        assert "expected" in reason
        ref = loaded["ImbCheck"]["local:default"][tc["environ"]]["MPI1:PingPong@intranode"]
        assert f"expected {ref['latency_8B'][0]}" in reason
    # the failing line names the build and the benchmark
    assert "MPI1:PingPong" in proc.stdout and f"+{failing[0]['environ']}" in proc.stdout
    # and the summary names build, benchmark, size, value and reference in one line
    lines = summary.regressions(tight)
    tc = failing[0]
    value = tc["perfvalues"]["local:default:latency_8B"][0]
    ref = loaded["ImbCheck"]["local:default"][tc["environ"]]["MPI1:PingPong@intranode"]
    want = (f"REGRESSION {tc['build_name']} Imb MPI1:PingPong intranode latency at 8 B: "
            f"{summary.fmt_value(value)} us vs reference "
            f"{summary.fmt_value(ref['latency_8B'][0])} us")
    assert any(line.startswith(want) for line in lines), (want, lines)


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
    broken = json.loads(dump_builds([good]))["builds"][0]
    broken.update(name="mpich-9.9.9-vanished", prefix=str(tmp_path / "gone"),
                  family="mpich", benchmarks={})
    builds = tmp_path / "builds.json"
    builds.write_text(json.dumps({"builds": [json.loads(dump_builds([good]))["builds"][0],
                                             broken]}))
    proc, report = run_reframe(tmp_path / "res", "-n", "MpiPlacementCheck", "-r",
                               env={"MPIMATRIX_BUILDS": str(builds)})
    assert (f"build mpich-9.9.9-vanished skipped: prefix {tmp_path / 'gone'} does not exist"
            in proc.stderr)
    assert proc.returncode == 0
    assert [tc["environ"] for tc in report_cases(report)] == [good.environ_name]
