"""The emulated Slurm cluster (mpimatrix.vcluster), for real.

Unit tests (any user): generated configuration, the ReFrame system, the job
helpers, the privilege check. Cluster tests (marked `cluster`; root with
CAP_SYS_ADMIN/CAP_NET_ADMIN and slurm-wlm/munge/iproute2/util-linux, else
skipped with the reason; MPIMATRIX_REQUIRE_CLUSTER=1 turns the skip into a
failure, as CI does): up, status, exec, the placement check on every build
intranode and internode through Slurm (srun and mpirun in the allocation),
IMB PingPong internode on the MPICH-ABI builds, the intra/internode latency
ratio, a node killed during a session, down, and nothing left behind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from helpers import (
    CONFIG,
    REFRAME,
    ROOT,
    final_cases,
    osu_from_kit,
    report_cases,
    retried_failures,
)

from mpimatrix.builds.record import BuildRecord
from mpimatrix.builds.sources import load_builds
from mpimatrix.placement import INTERNODE
from mpimatrix.rfm import slurm_job
from mpimatrix.rfm.launchers import launch_argv, srun_plugin
from mpimatrix.site.vcluster_system import system
from mpimatrix.vcluster import cluster, cpus, daemons, namespaces, privileges, slurm_conf
from mpimatrix.vcluster.layout import ClusterError, Layout

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
VICTIM = ROOT / "tests" / "fixtures" / "vcluster" / "node_crash_victim.py"
# ReFrame matches -n against the display name without spaces.
P2P = "%placement=(intranode|internode)$"


# -- unit tests ------------------------------------------------------------------------------
def test_layout_names_and_addresses(tmp_path):
    lay = Layout.at(tmp_path / "c", 4)
    assert lay.members == ["head", "node1", "node2", "node3", "node4"]
    assert [lay.address(m) for m in lay.members] == [
        "10.77.0.1", "10.77.0.11", "10.77.0.12", "10.77.0.13", "10.77.0.14"]
    with pytest.raises(ClusterError, match=r"choose 1\.\.8"):
        Layout.at(tmp_path, 9)
    with pytest.raises(ClusterError, match="too long"):
        Layout.at("/tmp/" + "x" * 80)


def test_slurm_conf_has_the_fixes(tmp_path):
    lay = Layout.at(tmp_path, 3)
    conf = slurm_conf.slurm_conf(lay)
    assert f"TmpFS={tmp_path}/nodetmp/%n" in conf  # fix 2: per-node TmpFS
    assert "TaskPlugin=task/none" in conf  # fix 4: no binding
    assert "SlurmctldHost=head(10.77.0.1)" in conf
    assert "JobRequeue=0" in conf and "MinJobAge=300" in conf
    for i in (1, 2, 3):
        assert f"NodeName=node{i} NodeAddr=10.77.0.1{i} " in conf
    assert "10.77.0.12\tnode2" in slurm_conf.hosts(lay)
    assert "CgroupPlugin=cgroup/v1" in slurm_conf.cgroup_conf()
    # fix 3 (per-node boot_id) and fix 1 (private cgroup tree) are in the node init
    assert "random/boot_id" in namespaces.INIT and "/sys/fs/cgroup" in namespaces.INIT


def test_reframe_system(tmp_path):
    sysd = system(["envA", "envB"], 2, tmp_path)
    assert sysd["name"] == "vcluster" and sysd["hostnames"] == ["^head$"]
    parts = {p["name"]: p for p in sysd["partitions"]}
    assert set(parts) == {"compute", "compute_mpirun"}
    for p in parts.values():
        assert p["scheduler"] == "squeue-all"
        assert {"nodes1", "nodes2"} <= set(p["features"])
        assert ["SLURM_CONF", str(tmp_path / "etc" / "slurm.conf")] in p["env_vars"]
        assert p["extras"]["net_counters"] and p["max_jobs"] == 1
    assert parts["compute"]["launcher"] == "srun"
    assert parts["compute_mpirun"]["launcher"] == "build-mpiexec"


def test_nodes_get_cpus_of_their_own_only_where_the_machine_has_enough(tmp_path):
    nodes = ["node1", "node2"]
    assert cpus.own_cpus(nodes, [0, 1, 2, 3]) == {"node1": [0, 1], "node2": [2, 3]}
    assert cpus.own_cpus(nodes, [4, 5, 6, 7, 8]) == {"node1": [4, 5], "node2": [6, 7]}
    assert cpus.own_cpus(nodes, [0, 1, 2]) == {}  # 2 nodes x 2 CPUs do not fit: shared
    assert cpus.taskset_prefix([2, 3]) == ["taskset", "--cpu-list", "2,3"]
    argv = daemons.slurmd_argv(Layout.at(tmp_path, 2), "node2", [2, 3])
    assert argv[:3] == ["taskset", "--cpu-list", "2,3"] and argv[3].endswith("slurmd")
    shared = {p["name"]: p["extras"] for p in system(["e"], 2, tmp_path)["partitions"]}
    own = {p["name"]: p["extras"] for p in system(["e"], 2, tmp_path, own_cpus=True)[
        "partitions"]}
    for name in ("compute", "compute_mpirun"):
        assert shared[name]["cpu_binding"] == "none" and shared[name]["shared_cores"]
        assert own[name]["cpu_binding"] == "core" and "shared_cores" not in own[name]


def test_net_bytes_and_failure_reason():
    out = ("MPIMATRIX netdev when=before host=node1 rx=100 tx=50\nnoise\n"
           "MPIMATRIX netdev when=after host=node1 rx=5000100 tx=4000050\n")
    assert slurm_job.net_bytes(out) == 9_000_000
    assert slurm_job.net_bytes("nothing") == -1
    assert slurm_job.bad_end("NODE_FAIL") and not slurm_job.bad_end("COMPLETED")
    err = ("srun: error: Node failure on node2\n"
           "slurmstepd-node1: error: *** JOB 25 ON node1 CANCELLED AT 2026 DUE TO NODE "
           "FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n")
    assert slurm_job.node_failure(err)
    msg = slurm_job.failure_reason(25, "NODE_FAIL", ["node1", "node2"], err)
    assert msg.startswith("Slurm job 25 ended NODE_FAIL on node1,node2: srun: error: Node "
                          "failure on node2")


def test_timeout_after_complete_results_is_named_a_hang():
    err = "slurmstepd-node1: error: *** STEP 3.0 ON node1 CANCELLED AT 2026 DUE TO TIME LIMIT ***\n"
    hung = slurm_job.failure_reason(3, "TIMEOUT", ["node1", "node2"], err, results_complete=True)
    assert hung.startswith("Slurm job 3 ended TIMEOUT on node1,node2; the program had printed "
                           "all its results, then hung")
    assert "DUE TO TIME LIMIT" in hung
    cut = slurm_job.failure_reason(3, "TIMEOUT", ["node1", "node2"], err)
    assert slurm_job.HUNG_AFTER_RESULTS not in cut
    # Only a timeout is a hang; a node failure after the results stays a node failure.
    assert slurm_job.HUNG_AFTER_RESULTS not in slurm_job.failure_reason(
        3, "NODE_FAIL", ["node1"], err, results_complete=True)


def test_direct_launch_only_with_a_pmi_slurm_serves_whole():
    base = dict(family="mpich", provenance="pypi", prefix="/p", cc="/p/bin/mpicc",
                launcher="/p/bin/mpiexec", launcher_style="hydra")
    old = BuildRecord(name="mpich-4.0.2-x", version="4.0.2", **base)
    new = BuildRecord(name="mpich-5.0.2-x", version="5.0.2", **base)
    assert old.pmi == new.pmi == "pmi1"  # MPICH's simple PMI, by default
    assert launch_argv(old, INTERNODE, "srun") == [
        "srun", "--mpi=pmi2", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1"]
    assert launch_argv(new, INTERNODE, "srun") == ["/p/bin/mpiexec", "-n", "2", "-ppn", "1"]
    assert srun_plugin(BuildRecord(name="m", version="4.1", **base))[0] == ""
    assert srun_plugin(BuildRecord(name="m", version="4.3.2", **{**base, "pmi": "pmi2"})) == (
        "pmi2", "")
    # MVAPICH 4.x is MPICH 4.3-based: the same PMI-1 lines; MVAPICH2 (MPICH 3.x) is not
    mv = {**base, "family": "mvapich"}
    assert srun_plugin(BuildRecord(name="mv", version="4.1", **mv))[0] == ""
    assert srun_plugin(BuildRecord(name="mv2", version="2.3.7-1",
                                   **{**base, "family": "mvapich2"}))[0] == "pmi2"


def test_net_snapshot_command_runs():
    proc = subprocess.run(["bash", "-c", slurm_job.net_snapshot_cmd("before")],
                          capture_output=True, text=True, check=True)
    assert re.match(r"MPIMATRIX netdev when=before host=\S+ rx=\d+ tx=\d+$", proc.stdout)


def test_clear_error_without_root(tmp_path, monkeypatch):
    """Not root / no capabilities: a clear error, nothing started."""
    if os.geteuid() != 0:
        proc = subprocess.run([MPIMATRIX, "cluster", "up", "--dir", str(tmp_path)],
                              capture_output=True, text=True)
        assert proc.returncode == 2 and "must run as root" in proc.stderr
        return
    # As root: drop the two capabilities from the bounding set.
    proc = subprocess.run(["setpriv", "--bounding-set", "-sys_admin,-net_admin", MPIMATRIX,
                           "cluster", "up", "--dir", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "lacks CAP_SYS_ADMIN and CAP_NET_ADMIN" in proc.stderr
    assert not (tmp_path / "state.json").exists()
    # And as an ordinary user (nobody), when nobody can read the project's venv
    # (a checkout under a private directory, e.g. mktemp -d, is not).
    if not _readable_by_others(Path(MPIMATRIX)):
        monkeypatch.setattr(os, "geteuid", lambda: 65534)
        assert any("must run as root (uid is 65534)" in p for p in privileges.problems())
        return
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           MPIMATRIX, "cluster", "up", "--dir", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "must run as root" in proc.stderr, proc.stderr


def _readable_by_others(path: Path) -> bool:
    """Every directory above `path` traversable and the file readable by others."""
    path = path.resolve()
    if not path.stat().st_mode & 0o004:
        return False
    return all(d.stat().st_mode & 0o001 for d in path.parents)


# -- the cluster ------------------------------------------------------------------------------
def _require_cluster():
    why = privileges.problems()
    if why:
        msg = "emulated cluster unavailable: " + "; ".join(why)
        if os.environ.get("MPIMATRIX_REQUIRE_CLUSTER"):
            pytest.fail(msg + " (MPIMATRIX_REQUIRE_CLUSTER is set)")
        pytest.skip(msg)


def _snapshot_ours(lay: Layout) -> dict:
    state = cluster.load_state(lay)
    return {"pids": [(p["pid"], p["start"]) for p in state["procs"]],
            "netns": set(state["netns"].values())}


def assert_nothing_left(lay: Layout, before: dict, host_netns: set[str], host_links: str):
    """No process, namespace, mount, link or state of the cluster remains."""
    from mpimatrix.vcluster import daemons

    running = [pid for pid, start in before["pids"] if daemons.alive(pid, start)]
    assert not running, f"cluster processes still running: {running}"
    assert not namespaces.pids_in(before["netns"]), "processes left in the namespaces"
    lsns = subprocess.run(["lsns", "-t", "net", "-n", "-o", "NS"], capture_output=True,
                          text=True).stdout.split()
    ours = {ns[5:-1] for ns in before["netns"]}  # 'net:[4026532301]' -> '4026532301'
    assert not ours & set(lsns), f"network namespaces left: {ours & set(lsns)}"
    assert set(_netns_list()) == host_netns, "named network namespaces changed"
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(lay.dir) not in mounts and "mpimatrix" not in mounts
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert links == host_links or not re.search(r"\bvnode\d|\bbr0\b", links)
    assert not lay.state_file.exists()
    stray = [p for p in Path("/proc").iterdir() if p.name.isdigit()
             and str(lay.dir).encode() in _cmdline(p) and daemons.alive(int(p.name))]
    assert not stray, f"processes mentioning {lay.dir}: {stray}"
    # Zombies of killed daemons are PID 1's to reap; they must go soon.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if not [pid for pid, start in before["pids"]
                if daemons.state(pid) and daemons.start_time(pid) == start]:
            break
        time.sleep(0.5)
    else:
        pytest.fail("cluster processes still in the process table (zombies not reaped)")


def _cmdline(p: Path) -> bytes:
    try:
        return (p / "cmdline").read_bytes()
    except OSError:
        return b""


def _netns_list() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _links() -> str:
    return subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout


def _reframe_in_head(lay: Layout, results: Path, *args: str, timeout: int = 1800,
                     retries: int = 2, env: dict | None = None,
                     ) -> tuple[subprocess.CompletedProcess, dict | None]:
    """ReFrame in the head namespace, retrying failed cases twice: see _settled_cases."""
    report = results / "reports" / "test-report.json"
    env = {**cluster.env_for(lay), "MPIMATRIX_RESULTS": str(results), **(env or {})}
    cmd = cluster.command(lay, "head", [REFRAME, "-C", str(CONFIG), "--report-file",
                                        str(report), "--exec-policy=serial",
                                        f"--max-retries={retries}", *args], wd=str(ROOT))
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    data = json.loads(report.read_text()) if report.exists() else None
    return proc, data


def _known_fault(tc: dict) -> bool:
    """Debian's MPICH 4.0.2 hangs in MPI_Finalize in 4-10% of internode runs
    (builds/known_faults.py): such a case is an expected failure (XFAIL) that names
    the hang and the known fault."""
    why = tc.get("expected_failure") or ""
    return (tc["result"] == "xfail" and tc["environ"].startswith("mpich-4_0")
            and slurm_job.HUNG_AFTER_RESULTS in why and "known fault of mpich-4.0" in why)


def _settled_cases(report: dict) -> list[dict]:
    """The last attempt of every case. A retry is tolerated only for a hang after the
    results, which the failure reason must have recognised; an expected failure only
    for the known fault (_known_fault)."""
    for tc in retried_failures(report):
        assert slurm_job.HUNG_AFTER_RESULTS in tc["fail_reason"], (
            tc["display_name"], tc["environ"], tc["fail_reason"])
    cases = final_cases(report)
    for tc in cases:
        assert tc["result"] != "xfail" or _known_fault(tc), (
            tc["display_name"], tc["environ"], tc.get("expected_failure"))
    return cases


def _short_tmpdir(tag: str) -> Path:
    # Short: Unix socket paths inside the cluster dir are limited.
    return Path(tempfile.mkdtemp(prefix=f"mm{tag}-", dir="/tmp"))


@pytest.fixture(scope="module")
def vcluster():
    """A 2-node cluster in its own directory (a developer's cluster is left alone)."""
    _require_cluster()
    lay = Layout.at(_short_tmpdir("c"), 2)
    host = (set(_netns_list()), _links())
    t0 = time.monotonic()
    st = cluster.up(lay)
    up_seconds = time.monotonic() - t0
    info = {"lay": lay, "host": host, "up_seconds": up_seconds, "status": st,
            "before": _snapshot_ours(lay)}
    yield info
    cluster.down(lay)  # no-op when test_down already ran


@pytest.mark.cluster
def test_up_is_idempotent_and_status(vcluster):
    lay = vcluster["lay"]
    st = vcluster["status"]
    assert st["up"] and st["sinfo"] == {"node1": "idle", "node2": "idle"}, st
    assert vcluster["up_seconds"] < 30
    again = cluster.up(lay)
    assert again["reused"] and again["up"]
    proc = subprocess.run([MPIMATRIX, "cluster", "status", "--json", "--dir", str(lay.dir)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["nodes"] == 2 and all(p["alive"] for p in data["processes"])
    with pytest.raises(ClusterError, match="up with 2 node"):
        cluster.up(Layout(lay.dir, 3))


@pytest.mark.cluster
def test_exec_on_every_member(vcluster):
    lay = vcluster["lay"]
    seen = {}
    for member in lay.members:
        proc = subprocess.run(
            [MPIMATRIX, "cluster", "exec", "--dir", str(lay.dir), member, "--", "sh", "-c",
             "hostname; cat /proc/sys/kernel/random/boot_id; "
             "ip -4 -o addr show | awk '{print $4}' | sort | tr '\\n' ' '"],
            capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        name, boot_id, addrs = proc.stdout.splitlines()
        assert name == member
        assert f"{lay.address(member)}/24" in addrs
        seen[member] = boot_id
    # Per-node boot_id (fix 3): UCX must see different hosts.
    assert len({seen[n] for n in lay.node_names}) == lay.nodes
    proc = subprocess.run([MPIMATRIX, "cluster", "exec", "--dir", str(lay.dir), "node9",
                           "--", "true"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown member" in proc.stderr
    srun = cluster.run(lay, "head", ["srun", "-N2", "-n2", "hostname"])
    assert sorted(srun.stdout.split()) == ["node1", "node2"], srun.stderr


@pytest.mark.cluster
@pytest.mark.reframe
@pytest.mark.mpi
def test_placement_every_build_through_slurm(vcluster, buildset, tmp_path):
    """Intranode and internode, srun direct launch and mpirun in the allocation."""
    proc, report = _reframe_in_head(vcluster["lay"], tmp_path, "-n", f"MpiPlacementCheck{P2P}",
                                    "-r")
    assert report, proc.stdout[-3000:] + proc.stderr[-2000:]
    cases = _settled_cases(report)
    envs = {b.environ_name for b in buildset.builds}
    got = {(tc["partition"], tc["environ"], tc["placement"]) for tc in cases}
    want = {(p, e, pl) for p in ("compute", "compute_mpirun") for e in envs
            for pl in ("intranode", "internode")}
    assert got == want
    failed = [f"{tc['display_name']} {tc['partition']}+{tc['environ']}: {tc['fail_reason']}"
              for tc in cases if tc["result"] != "pass" and not _known_fault(tc)]
    assert not failed, "\n".join(failed)
    for tc in cases:  # every row carries its node list
        want_nodes = ["node1"] if tc["placement"] == "intranode" else ["node1", "node2"]
        assert tc["job_nodelist"] == want_nodes, tc["job_nodelist"]
        assert tc["hosts"] == want_nodes
        assert tc["system"] == "vcluster"
    assert proc.returncode == 0


@pytest.mark.cluster
@pytest.mark.reframe
@pytest.mark.mpi
def test_imb_pingpong_internode_mpich_abi(vcluster, buildset, tmp_path):
    abi = {b.environ_name for b in buildset.builds if b.mpich_abi and "imb" in b.benchmarks}
    if not abi:
        pytest.skip("no MPICH-ABI build with IMB (needs the Intel MPI wheel)")
    proc, report = _reframe_in_head(
        vcluster["lay"], tmp_path, "-n", "ImbCheck%placement=internode%benchmark=MPI1:PingPong$",
        "--system", "vcluster:compute", "-r")
    assert report, proc.stdout[-3000:] + proc.stderr[-2000:]
    cases = _settled_cases(report)
    # every MPICH-ABI build with IMB; a build whose IMB an earlier run built into the
    # project's cache (run-local.sh with the kit builds it for Open MPI) runs too
    envs = {tc["environ"] for tc in cases}
    assert abi <= envs <= {b.environ_name for b in buildset.builds}, envs
    for tc in (tc for tc in cases if not _known_fault(tc)):
        assert tc["result"] == "pass", (tc["environ"], tc["fail_reason"])
        assert tc["job_nodelist"] == ["node1", "node2"]
        # The 4 MiB messages alone are > 80 MB both ways: internode traffic left node1.
        assert tc["net_bytes"] > 80_000_000, tc["net_bytes"]


@pytest.mark.cluster
@pytest.mark.reframe
@pytest.mark.mpi
@pytest.mark.osu
def test_osu_internode_pt2pt_and_two_node_collectives(vcluster, buildset, tmp_path):
    """OSU through Slurm: point-to-point on 2 nodes and collectives on every 2-node
    layout; each record carries the 2 distinct hosts the ranks reported."""
    osu_env = osu_from_kit(buildset, tmp_path / "osu-cache")  # with the kit: OSU 7.4 built
    with pytest.MonkeyPatch.context() as mp:
        for k, v in osu_env.items():
            mp.setenv(k, v)
        osu = [b for b in load_builds().builds if "osu" in b.benchmarks]
    assert osu, f"OSU built into {osu_env} but discovery does not see it"
    env = osu[0].environ_name
    proc, report = _reframe_in_head(
        vcluster["lay"], tmp_path, "-n",
        "OsuCheck%placement=(internode|2x[0-9]+)%benchmark=(latency|bw|allreduce|alltoall|ibcast)$",
        "--system", "vcluster:compute", "-p", f"^{env}$", "-r", env=osu_env)
    assert report, proc.stdout[-3000:] + proc.stderr[-2000:]
    cases = _settled_cases(report)
    layouts = {tc["placement"] for tc in cases}
    assert "internode" in layouts and len(layouts) >= 2, layouts
    assert {tc["benchmark"] for tc in cases} == {"latency", "bw", "allreduce", "alltoall",
                                                 "ibcast"}
    for tc in (tc for tc in cases if not _known_fault(tc)):
        assert tc["result"] == "pass", (tc["display_name"], tc["fail_reason"])
        assert tc["hosts"] == ["node1", "node2"], tc["hosts"]
        assert all(v[0] is not None for v in tc["perfvalues"].values())


@pytest.mark.cluster
@pytest.mark.reframe
@pytest.mark.mpi
def test_latency_ratio_every_build(vcluster, buildset, tmp_path):
    proc, report = _reframe_in_head(vcluster["lay"], tmp_path, "-n", "NodeLatencyRatioCheck",
                                    "--system", "vcluster:compute", "-r",
                                    "--performance-report")
    assert report, proc.stdout[-3000:] + proc.stderr[-2000:]
    cases = _settled_cases(report)
    assert {tc["environ"] for tc in cases} == {b.environ_name for b in buildset.builds}
    lines = []
    for tc in (tc for tc in cases if not _known_fault(tc)):
        assert tc["result"] == "pass", tc["fail_reason"]
        pv = {k.rsplit(":", 1)[1]: v[0] for k, v in tc["perfvalues"].items()}
        assert pv["latency_ratio"] >= 5, pv
        assert pv["nic_MB_inter"] * 1e6 >= tc["net_bytes"] - 1
        lines.append(f"{tc['environ']}: intra {pv['latency_intra_8B']:.2f} us, inter "
                     f"{pv['latency_inter_8B']:.2f} us, ratio {pv['latency_ratio']:.1f}")
    print("\n".join(lines))


@pytest.mark.cluster
@pytest.mark.reframe
@pytest.mark.mpi
def test_hang_after_results_is_cancelled_early(vcluster, buildset, tmp_path):
    """A program that printed all its results and hangs (Debian's MPICH 4.0.2 in
    MPI_Finalize) is cancelled HUNG_GRACE seconds later, not at its time limit."""
    env = _openmpi(buildset).environ_name
    t0 = time.monotonic()
    proc, report = _reframe_in_head(
        vcluster["lay"], tmp_path, "-c", str(VICTIM),
        "-n", "HangAfterResults", "-p", f"^{env}$", "--system", "vcluster:compute", "-r",
        retries=0)
    took = time.monotonic() - t0
    assert report, proc.stdout[-3000:] + proc.stderr[-2000:]
    tc = report_cases(report)[0]
    assert tc["result"] == "fail" and tc["fail_phase"] == "sanity"
    assert re.search(r"ended CANCELLED on node1,node2; the program had printed all its "
                     r"results, then hung and was cancelled \d+ s later \(in MPI_Finalize",
                     tc["fail_reason"]), tc["fail_reason"]
    assert took < 150, took  # its time limit is 10 min


@pytest.mark.cluster
@pytest.mark.reframe
@pytest.mark.mpi
def test_a_known_fault_is_an_expected_failure_and_keeps_the_night_green(vcluster, buildset,
                                                                       tmp_path):
    """The injector hangs IMB in MPI_Finalize after its results (finalize_hang_s), as
    Debian's MPICH 4.0.2 does between nodes. On that build it is the known fault: the
    case is XFAIL naming it, counted apart in the summary line, and the session exits 0.
    The same hang on the Intel MPI build is new: it fails and the session exits 1."""
    names = {b.name for b in buildset.builds if "imb" in b.benchmarks}
    known = next((n for n in names if n.startswith("mpich-4.0.") and n.endswith("-debian")),
                 None)
    other = next((n for n in names if n.startswith("impi-")), None)
    if not (known and other):
        pytest.skip("needs Debian's MPICH 4.0 and the Intel MPI wheel, both with IMB")
    hang = ":finalize_hang_s=600"

    def session(inject: str) -> tuple[subprocess.CompletedProcess, dict]:
        proc, cases, _ = _imb_cluster_session(
            vcluster["lay"], f"^({re.escape(known)}|{re.escape(other)})$",
            "internode%benchmark=MPI1:PingPong$", inject)
        return proc, cases

    proc, cases = session(f"^{re.escape(known)}${hang}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert _known_fault(cases[known]), cases[known]
    assert ": MPICH 4.0.x (ch4:ucx)" in cases[known]["expected_failure"], cases[known]
    assert cases[other]["result"] == "pass", cases[other]["fail_reason"]
    assert re.search(rf"^2 test case\(s\){FIXTURES}, 0 failed, 0 skipped, 1 known fault\(s\) "
                     r"\(expected failures\);", proc.stdout, re.M), out[-3000:]
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith(known))
    assert " xfail " in row and "known fault of" in row, row

    proc, cases = session(f"^{re.escape(known)}${hang};^{re.escape(other)}${hang}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-4000:]
    assert _known_fault(cases[known]), cases[known]
    assert cases[other]["result"] == "fail", cases[other]
    assert slurm_job.HUNG_AFTER_RESULTS in cases[other]["fail_reason"]
    assert "known fault" not in cases[other]["fail_reason"]
    assert re.search(rf"^2 test case\(s\){FIXTURES}, 1 failed, 0 skipped, "
                     r"1 known fault\(s\)",
                     proc.stdout, re.M), out[-3000:]


#: The summary's count of ReFrame's fixtures after the test cases, when there are any.
FIXTURES = r"(?: \(\+\d+ fixture\(s\) .*? in all\))?"


def _imb_cluster_session(lay: Layout, build: str, pattern: str, inject: str = "",
                         results: Path | None = None, confirm: bool = False,
                         retries: int = 0) -> tuple[subprocess.CompletedProcess, dict, Path]:
    """`mpimatrix cluster run` of IMB cases on one build (no confirmation unless asked;
    a failed case run again `retries` times): the process, the final cases by build
    name, and the results store."""
    results = results or _short_tmpdir("r")
    env = {**os.environ, "MPIMATRIX_RESULTS": str(results), "MPIMATRIX_INJECT": inject}
    proc = subprocess.run(
        [MPIMATRIX, "cluster", "run", "--dir", str(lay.dir), "--", "--partition", "compute$",
         *([] if confirm else ["--no-confirm"]), "--only", build, "--",
         *([f"--max-retries={retries}"] if retries else []), "-n",
         f"ImbCheck%placement={pattern}"],
        env=env, capture_output=True, text=True, timeout=1200)
    found = re.search(r"^report: (\S+)$", proc.stdout, re.M)
    assert found, proc.stdout[-3000:] + proc.stderr[-2000:]
    report = json.loads(Path(found[1]).read_text())
    return proc, {tc["build_name"]: tc for tc in final_cases(report)}, results


@pytest.mark.cluster
@pytest.mark.reframe
@pytest.mark.mpi
def test_cluster_nights_are_blessed_and_judged_on_the_benchmarks_nodes(vcluster, buildset):
    """Under Slurm the jobs are no children of `mpimatrix run`: each benchmark measures
    its nodes instead (the injector library's meter). Sessions with nothing else running
    are not disturbed, bless takes them, and the next quiet session gets verdicts; a
    session with a busy loop on a job's node is disturbed."""
    build = next((b.name for b in buildset.builds
                  if b.name.startswith("impi-") and "imb" in b.benchmarks), None)
    if build is None:
        pytest.skip("needs the Intel MPI wheel's IMB")
    lay, only = vcluster["lay"], f"^{re.escape(build)}$"
    cases = r"internode%benchmark=MPI1:(PingPong|Allreduce)$"
    results = _short_tmpdir("r")

    def load(proc) -> dict:
        uuid = re.search(r"session ([0-9a-f-]{36})$", proc.stdout, re.M)[1]
        return json.loads((results / "db" / "machine-load.json").read_text())[uuid]

    # retried once: Intel MPI between the emulated nodes died at 4 MiB once and hung in
    # MPI_Finalize once in a CI run; what is tested here is the metering
    for _ in range(3):
        proc, quiet, _ = _imb_cluster_session(lay, only, cases, results=results, retries=1)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        for tc in quiet.values():
            assert tc["node_load"]["nodes"] == 2 and tc["node_load"]["wall"] > 0, tc["node_load"]
        record = load(proc)
        print(f"quiet: {record}")
        assert record["where"] == "job nodes" and not record["disturbed"], record
        assert "DISTURBED" not in proc.stdout
    env = {**os.environ, "MPIMATRIX_RESULTS": str(results)}
    # at a 50 % floor: three cluster sessions spread 8-21 % at noisy hours, and at the
    # default 30 % nothing was gated (seen in CI); what is tested here is the metering
    bless = subprocess.run([MPIMATRIX, "bless", "--since", "1d", "--tolerance", "0.5"], env=env,
                           capture_output=True, text=True, timeout=600)
    assert bless.returncode == 0, bless.stdout + bless.stderr
    assert "left out" not in bless.stdout, bless.stdout
    gated = re.search(r"\d+ value\(s\) from 3 run\(s\), ([1-9]\d*) gated", bless.stdout)
    assert gated, bless.stdout
    # the next quiet night, with confirmation: judged against the blessed references
    proc, _, _ = _imb_cluster_session(lay, only, cases, results=results, confirm=True,
                                      retries=1)
    print(proc.stdout[-2500:])
    assert not load(proc)["disturbed"] and "DISTURBED" not in proc.stdout
    assert proc.returncode in (0, 1) and " 0 failed," in proc.stdout, proc.stdout[-3000:]
    assert re.search(rf"performance value\(s\), {gated[1]} gated, \d+ regression\(s\)",
                     proc.stdout), proc.stdout[-3000:]

    spin = subprocess.Popen(cluster.command(lay, "node2", [
        sys.executable, "-c", "print('spinning', flush=True)\nwhile True: pass"]),
        start_new_session=True, stdout=subprocess.PIPE, text=True)
    try:
        # the loop runs before the session starts (a CI run metered only 1.1 CPU-s of a
        # 5.7 s session: the loop was still starting)
        assert spin.stdout.readline().strip() == "spinning"
        proc, _, _ = _imb_cluster_session(lay, only, cases, results=results)
    finally:
        os.killpg(spin.pid, 9)
        spin.wait()
    record = load(proc)
    print(f"busy loop on node2: {record}")
    assert record["where"] == "job nodes" and record["disturbed"], record
    # three busy processes (the loop, two ranks) on the VM's two cores: the loop gets about
    # two thirds of a core (32 and 38 % of the session in two runs here once it ran from the start)
    assert record["foreign_cpu"] > 0.2 * record["seconds"], record
    assert re.search(r"^DISTURBED: other programs used [\d.]+ CPU-s \([\d.]+% of the CPU "
                     r"time of the benchmarks' nodes\)", proc.stdout, re.M), proc.stdout[-3000:]


@pytest.mark.cluster
@pytest.mark.reframe
@pytest.mark.mpi
def test_acceptance_between_two_nodes(vcluster, buildset):
    """`mpimatrix cluster run -- --mode acceptance --requirements FILE`: IMB PingPong latency
    between the two nodes on the Intel MPI wheel and PyPI MPICH, 6 passes each (95 %),
    every sample from node1 and node2; an 8-node requirement is not measured (the
    cluster has 2); then bounds from the measured intervals: one between the builds (one
    build slowed 3x by the injector), one inside the noise (tests/test_acceptance_run.py)."""
    from test_acceptance_run import _requirement, first_requirements, judge_with_measured_bounds

    # not Debian's MPICH 4.0.2: its known hang in MPI_Finalize between nodes (3-10 % of
    # runs) takes a pass's sample away, and 4 samples of 6 leave its verdicts inconclusive
    # (seen in a CI run)
    builds = [b.name for b in buildset.builds if "imb" in b.benchmarks
              and b.name.startswith(("impi-", "mpich-")) and b.provenance != "debian"][:3]
    if len(builds) < 2:
        pytest.skip("needs the Intel MPI wheel's IMB and the PyPI MPICH build")
    results = _short_tmpdir("a")
    first = results / "first.yaml"
    first.write_text(yaml.safe_dump({"system": "vcluster", "requirements": [
        *first_requirements("internode"),
        _requirement("allreduce-8x2", "<= 1000 us", benchmark="MPI1:Allreduce",
                     placement="8x2")]}))
    # Over the nodes' TCP link the builds' latencies overlap here (8 B: Intel MPI up to
    # 11.2 us, PyPI MPICH from 9.5 us in 6 samples): one build runs 3x slow, by the
    # injector, so that a bound between two builds exists
    slow = builds[-1]
    env = {**os.environ, "MPIMATRIX_RESULTS": str(results),
           "MPIMATRIX_INJECT": f"^{re.escape(slow)}$:clock=2.0"}
    only = [a for b in builds for a in ("--only", f"^{re.escape(b)}$")]
    proc = subprocess.run(
        [MPIMATRIX, "cluster", "run", "--dir", str(vcluster["lay"].dir), "--", "--mode",
         "acceptance", "--requirements", str(first), "--include-disturbed", "--partition",
         "compute$", *only],
        env=env, capture_output=True, text=True, timeout=3600)
    out = proc.stdout
    assert proc.returncode == 1, out[-4000:] + proc.stderr[-2000:]  # 8x2: not here
    for build in builds:
        assert re.search(rf"^  {re.escape(build)}: met: median [\d.]+ us of 6 sample\(s\)",
                         out, re.M), out[-4000:]
    assert re.search(r"^UNMEASURED +allreduce-8x2: .* \(no test case ran at placement 8x2",
                     out, re.M), out[-4000:]
    report = json.loads(Path(re.search(r"^report: (\S+)$", out, re.M)[1]).read_text())
    cases = [tc for run in report["runs"] for tc in run["testcases"]
             if not tc["fixture"] and tc["result"] == "pass"]
    assert cases and all(tc["hosts"] == ["node1", "node2"] for tc in cases), \
        [tc["hosts"] for tc in cases]
    judge_with_measured_bounds(results, proc, results / "record", "internode", "vcluster")


@pytest.mark.cluster
@pytest.mark.reframe
@pytest.mark.mpi
def test_builds_given_as_modules_load_them_inside_the_slurm_jobs(vcluster, buildset, tmp_path):
    """Lmod modules of this machine's MPICH-ABI wheels (`mpimatrix modules write`), named in
    a builds file: the placement check runs internode through srun and through the build's
    mpiexec, and every job script loads the build's module on the nodes."""
    from helpers import require_lmod

    require_lmod()
    wanted = {"mpich": "pypi", "impi": "pypi"}
    chosen = [b for b in buildset.builds if wanted.get(b.family) == b.provenance]
    if not chosen:
        pytest.skip("no PyPI MPICH or Intel MPI wheel here")
    root = tmp_path / "modules"
    proc = subprocess.run([MPIMATRIX, "modules", "write", str(root)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    modules = [f"{b.family}/{b.version}-{b.provenance}" for b in chosen]
    builds = tmp_path / "builds.yaml"
    builds.write_text(yaml.safe_dump({"builds": [{"module": m} for m in modules]}))
    results = tmp_path / "results"
    proc, report = _reframe_in_head(
        vcluster["lay"], results, "-n", "MpiPlacementCheck%placement=internode$", "-r",
        env={"MODULEPATH": str(root), "MPIMATRIX_BUILDS": str(builds)})
    assert report, proc.stdout[-3000:] + proc.stderr[-2000:]
    cases = _settled_cases(report)
    got = {(tc["partition"], tc["build_name"]) for tc in cases if tc["result"] == "pass"}
    names = [m.replace("/", "-") for m in modules]
    assert got == {(p, n) for p in ("compute", "compute_mpirun") for n in names}, got
    assert all(tc["job_nodelist"] == ["node1", "node2"] for tc in cases)
    scripts = list((results / "output" / "vcluster").rglob("rfm_job.sh"))
    assert len(scripts) == 2 * len(names)
    for script in scripts:
        text = script.read_text()
        assert "#SBATCH" in text and any(f"module load {m}" in text for m in modules), text


@pytest.mark.cluster
def test_down_leaves_nothing(vcluster):
    lay = vcluster["lay"]
    t0 = time.monotonic()
    proc = subprocess.run([MPIMATRIX, "cluster", "down", "--dir", str(lay.dir)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - t0 < 30
    assert_nothing_left(lay, vcluster["before"], *vcluster["host"])
    again = subprocess.run([MPIMATRIX, "cluster", "down", "--dir", str(lay.dir)],
                           capture_output=True, text=True)
    assert again.returncode == 0 and "no cluster" in again.stdout
    shutil.rmtree(lay.dir, ignore_errors=True)  # only logs were left (kept on failure)


# -- failure injection ----------------------------------------------------------------------------
def _openmpi(buildset) -> BuildRecord:
    """A build for the fault tests: not Debian's MPICH 4.0.2, whose MPI_Finalize hang
    (see _settled_cases) would fail the cases that must pass there."""
    return next((b for b in buildset.builds if b.family == "openmpi"), buildset.builds[0])


def _own_cluster(tag: str, nodes: int) -> tuple[Layout, tuple, dict]:
    """A cluster of the test's own: its layout, the host's namespaces and links before,
    and the cluster's processes."""
    _require_cluster()
    lay = Layout.at(_short_tmpdir(tag), nodes)
    host = (set(_netns_list()), _links())
    cluster.up(lay)
    return lay, host, _snapshot_ours(lay)


@pytest.mark.cluster
@pytest.mark.reframe
@pytest.mark.mpi
def test_node_killed_during_session(buildset, tmp_path):
    """Kill a node while a test runs on it: that test fails with a clear reason, the
    other test cases of the session run (on the remaining nodes) and are stored in
    the results DB, and `down` still cleans up."""
    env_name = _openmpi(buildset).environ_name
    lay, host, before = _own_cluster("f", 3)
    results = tmp_path / "results"
    report = results / "reports" / "test-report.json"
    try:
        env = {**cluster.env_for(lay), "MPIMATRIX_RESULTS": str(results)}
        cmd = cluster.command(lay, "head", [
            REFRAME, "-C", str(CONFIG), "-c", str(VICTIM),
            "-c", str(ROOT / "reframe_checks" / "mpi_placement.py"),
            "-n", "NodeCrashVictim", "-n", f"MpiPlacementCheck{P2P}", "-p", f"^{env_name}$",
            "--system", "vcluster:compute", "--exec-policy=serial", "-r",
            "--report-file", str(report)], wd=str(ROOT))
        log = open(tmp_path / "reframe.out", "w")
        session = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            jobid, nodes = _wait_for_running_step(lay, "NodeCrashVictim", session, 900)
            victim_node = nodes[-1]  # not the batch host
            _wait_for_process(lay, victim_node, b"sleep\x00120", 120)
            killed = cluster.kill_node(lay, victim_node)
            assert killed
            session.wait(timeout=1200)
        finally:
            if session.poll() is None:
                session.kill()
            log.close()
        data = json.loads(report.read_text())
        cases = {tc["name"].split()[0] + " " + tc["placement"]: tc for tc in report_cases(data)}
        victim = cases.pop("NodeCrashVictim internode")
        assert victim["result"] == "fail"
        assert victim["fail_phase"] == "sanity"
        assert re.search(rf"Slurm job {jobid} ended (NODE_FAIL|COMPLETED|FAILED) on .*("
                         rf"Node failure on {victim_node}|failed on node {victim_node})",
                         victim["fail_reason"]), victim["fail_reason"]
        assert set(cases) == {"MpiPlacementCheck intranode", "MpiPlacementCheck internode"}
        for tc in cases.values():
            assert tc["result"] == "pass", tc["fail_reason"]
            assert victim_node not in tc["job_nodelist"]  # ran after the crash, elsewhere
        # The whole session, failure included, is in the results DB.
        stored_cases = _stored_cases(results, data["session_info"]["uuid"])
        assert {(tc["name"].split()[0], tc["result"]) for tc in stored_cases} == {
            ("NodeCrashVictim", "fail"), ("MpiPlacementCheck", "pass")}
        assert len(stored_cases) == 3
    finally:
        res = cluster.down(lay)
    assert res["left"] == []
    assert_nothing_left(lay, before, *host)
    shutil.rmtree(lay.dir, ignore_errors=True)


def _stored_cases(results: Path, uuid: str) -> list[dict]:
    """The test cases (no fixtures) of a session in the results DB under `results`."""
    stored = subprocess.run([REFRAME, "-C", str(CONFIG), "--describe-stored-sessions", uuid],
                            capture_output=True, text=True,
                            env={**os.environ, "MPIMATRIX_RESULTS": str(results)})
    sessions = json.loads(stored.stdout)
    return [tc for s in (sessions if isinstance(sessions, list) else [sessions])
            for run in s["runs"] for tc in run["testcases"] if not tc["fixture"]]


def _wait_for_process(lay, node, cmdline: bytes, timeout):
    """Wait until a process whose command line contains `cmdline` runs on `node`."""
    netns = cluster.load_state(lay)["netns"][node]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(cmdline in _cmdline(Path(f"/proc/{pid}")) for pid in namespaces.pids_in({netns})):
            return
        time.sleep(0.2)
    pytest.fail(f"no process {cmdline!r} on {node} within {timeout} s")


def _wait_for_running_step(lay, name, session, timeout):
    """(job id, nodes) once step 0 of the job named *name* runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if session.poll() is not None:
            pytest.fail(f"the ReFrame session ended (rc={session.returncode}) before {name} ran")
        jobs = cluster.run(lay, "head", ["squeue", "-h", "-o", "%i|%j|%T|%N"]).stdout
        for line in jobs.split():
            jobid, jobname, state, nodespec = line.split("|")
            if name in jobname and state == "RUNNING":
                steps = cluster.run(lay, "head", ["squeue", "-h", "-s", "-j", jobid, "-o",
                                                  "%i"]).stdout.split()
                if f"{jobid}.0" in steps:
                    nodes = cluster.run(lay, "head", ["scontrol", "show", "hostnames",
                                                      nodespec]).stdout.split()
                    return jobid, nodes
        time.sleep(0.5)
    pytest.fail(f"{name} did not start within {timeout} s")


@pytest.mark.cluster
@pytest.mark.reframe
@pytest.mark.mpi
def test_dead_node_never_stalls_the_session(buildset, tmp_path):
    """Kill a node while a 4-node layout is queued: that case is cancelled naming the
    node, the next 4-node case is never submitted, the others run on the remaining
    nodes, and the whole session ends in bounded time and is stored. Then `cluster up`
    over the degraded cluster refuses to kill work in head, and restarts it without."""
    build = _openmpi(buildset)
    lay, host, before = _own_cluster("d", 4)
    results = tmp_path / "results"
    report = results / "reports" / "test-report.json"
    try:
        # node1 busy with a job from outside the session: the 4-node job must queue.
        blocker = cluster.run(lay, "head", ["sbatch", "--exclusive", "-w", "node1", "-N1",
                                            "-o", "/dev/null", "--wrap", "sleep 900"])
        assert blocker.returncode == 0, blocker.stderr
        env = {**cluster.env_for(lay), "MPIMATRIX_RESULTS": str(results)}
        cmd = cluster.command(lay, "head", [
            REFRAME, "-C", str(CONFIG), "-c", str(ROOT / "reframe_checks" / "mpi_placement.py"),
            "-c", str(ROOT / "reframe_checks" / "node_latency.py"),
            "-n", "MpiPlacementCheck%placement=(internode|4x1|4x2)$", "-n",
            "NodeLatencyRatioCheck", "-p", f"^{build.environ_name}$", "--system",
            "vcluster:compute", "--exec-policy=serial", "-r", "--report-file", str(report)],
            wd=str(ROOT))
        log = open(tmp_path / "reframe.out", "w")
        t0 = time.monotonic()
        session = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for_pending(lay, 4, session, 600)
            t_kill = time.monotonic()
            assert cluster.kill_node(lay, "node4")
            session.wait(timeout=600)
        finally:
            if session.poll() is None:
                session.kill()
            log.close()
        after_kill, took = time.monotonic() - t_kill, time.monotonic() - t0
        data = json.loads(report.read_text())
        cases = {tc["name"].split()[0] + " " + tc["placement"]: tc for tc in report_cases(data)}
        assert set(cases) == {"MpiPlacementCheck internode", "MpiPlacementCheck 4x1",
                              "MpiPlacementCheck 4x2", "NodeLatencyRatioCheck intra_vs_inter"}
        queued, later = cases["MpiPlacementCheck 4x1"], cases["MpiPlacementCheck 4x2"]
        assert queued["result"] == "fail" and queued["fail_phase"] == "run"
        assert re.search(r"nodes unavailable error: \[jobid=\d+\] cancelled after pending \d+ "
                         r"s: needs 4 node\(s\), partition \w+ has [0-3] usable of 4: node4 is ",
                         queued["fail_reason"]), queued["fail_reason"]
        assert later["result"] == "fail" and "node4 is " in later["fail_reason"]
        for name in ("MpiPlacementCheck internode", "NodeLatencyRatioCheck intra_vs_inter"):
            tc = cases[name]
            assert tc["result"] == "pass", (name, tc["fail_reason"])
            assert not {"node1", "node4"} & set(tc["job_nodelist"]), tc["job_nodelist"]
        # a job from outside it holds node1 for 15 min: the session did not wait for it
        assert after_kill < 240 and took < 420, (after_kill, took)
        print(f"session {took:.0f} s, {after_kill:.0f} s after the kill; 4x1: "
              f"{queued['fail_reason']}; 4x2: {later['fail_reason']}")
        assert len(_stored_cases(results, data["session_info"]["uuid"])) == 4
        # `cluster up` over the degraded cluster: not over work in head, unless --force
        work = subprocess.Popen(cluster.command(lay, "head", ["sleep", "300"]))
        try:
            refused = subprocess.run([MPIMATRIX, "cluster", "up", "-n", "4", "--dir",
                                      str(lay.dir)], capture_output=True, text=True)
            assert refused.returncode == 2, refused.stdout + refused.stderr
            assert re.search(rf"degraded \(dead: .*slurmd@node4.*\); restarting it would kill "
                             rf"what runs in head: {work.pid} sleep 300", refused.stderr)
        finally:
            work.kill()
            work.wait()
        again = subprocess.run([MPIMATRIX, "cluster", "up", "-n", "4", "--dir", str(lay.dir)],
                               capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
        assert "is degraded (dead: " in again.stdout and "cluster restarted: 4 node(s)" in \
            again.stdout
        before = _snapshot_ours(lay)  # the restarted cluster's processes
    finally:
        res = cluster.down(lay)
    assert res["left"] == []
    assert_nothing_left(lay, before, *host)
    shutil.rmtree(lay.dir, ignore_errors=True)


def _wait_for_pending(lay, nodes: int, session, timeout):
    """Wait until a ReFrame job asking for `nodes` nodes is PENDING."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if session.poll() is not None:
            pytest.fail(f"the ReFrame session ended (rc={session.returncode}) before a "
                        f"{nodes}-node job queued")
        jobs = cluster.run(lay, "head", ["squeue", "-h", "-o", "%i|%j|%T|%D"]).stdout
        for line in jobs.split():
            jobid, name, state, count = line.split("|")
            if name.startswith("rfm_") and state == "PENDING" and count == str(nodes):
                return jobid
        time.sleep(0.5)
    pytest.fail(f"no {nodes}-node job queued within {timeout} s")


@pytest.mark.cluster
@pytest.mark.reframe
@pytest.mark.mpi
def test_a_node_with_cpus_of_its_own_pins_its_ranks(buildset, tmp_path):
    """Where the machine has NODE_CPUS CPUs for every node (here one node on this
    machine's CPUs), the node's slurmd runs on CPUs of its own, every job step it starts
    inherits them, and the partitions pin each rank to a core: Hydra's -bind-to core in
    the allocation, srun --cpu-bind=cores."""
    _require_cluster()
    mine = cpus.available()
    if len(mine) < slurm_conf.NODE_CPUS:
        pytest.skip(f"{len(mine)} CPU(s): a node needs {slurm_conf.NODE_CPUS} of its own")
    imb = [b for b in buildset.builds if "imb" in b.benchmarks and b.family == "mpich"]
    if not imb:
        pytest.skip("needs an MPICH build with IMB")
    lay = Layout.at(_short_tmpdir("o"), 1)
    try:
        st = cluster.up(lay)
        assert st["cpus"] == {"node1": mine[:slurm_conf.NODE_CPUS]}, st
        slurmd = next(p for p in cluster.load_state(lay)["procs"] if p["name"] == "slurmd@node1")
        allowed = Path(f"/proc/{slurmd['pid']}/status").read_text()
        want = ",".join(map(str, mine[:slurm_conf.NODE_CPUS]))
        got = re.search(r"^Cpus_allowed_list:\s*(\S+)", allowed, re.M)[1]
        assert sorted(_cpu_list(got)) == mine[:slurm_conf.NODE_CPUS], (got, want)
        step = cluster.run(lay, "head", ["srun", "-N1", "-n1", "grep", "Cpus_allowed_list",
                                         "/proc/self/status"])
        assert sorted(_cpu_list(step.stdout.split()[-1])) == mine[:slurm_conf.NODE_CPUS]
        env = imb[0].environ_name
        proc, report = _reframe_in_head(
            lay, tmp_path, "-n", r"(MpiPlacementCheck%placement=intranode"
            r"|ImbCheck%placement=intranode%benchmark=MPI1:PingPong)$", "-p", env, "-r")
        assert report, proc.stdout[-3000:] + proc.stderr[-2000:]
        cases = _settled_cases(report)
        assert {tc["partition"] for tc in cases} == {"compute", "compute_mpirun"}
        failed = [f"{tc['display_name']} {tc['partition']}: {tc['fail_reason']}"
                  for tc in cases if tc["result"] != "pass"]
        assert not failed, "\n".join(failed)
        assert all(tc["cpu_binding"] == "core" for tc in cases), [
            (tc["display_name"], tc["cpu_binding"]) for tc in cases]
    finally:
        cluster.down(lay)
        shutil.rmtree(lay.dir, ignore_errors=True)


def _cpu_list(text: str) -> list[int]:
    """'0-1,4' -> [0, 1, 4]"""
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out

