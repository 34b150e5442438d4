"""The matrix for real, from the offline kit: Spack installs OSU and IMB on the Debian
MPIs (externals) and on one source build of each family (MVAPICH2 nemesis, Open MPI
4.1.4, MPICH ch3:tcp: the project's recipes), then `spack env activate` and
`reframe -r` run placement, IMB, OSU and NPB (class S, the quick mode's) on those builds,
and the emulated cluster runs them internode through srun.

The environment is the project's spack.yaml with its site overlay (debian-local) and
packages/, with the specs replaced by the cheapest matrix rows that still build each
family's recipe from the kit (builds/spack/kit.py CI_ROWS; the whole kit matrix,
KIT_ROWS, is built by measure/spack_matrix_build.py, not here): concretizing the whole
matrix costs ~8 minutes cold on 2 cores and installs nothing more. Installs go to Spack's
own install tree in the user cache (`mpimatrix spack get`), so a second run reuses them.

Needs Spack (`mpimatrix spack get --kit ...`) and the kit; skipped, saying which is
missing, without them; MPIMATRIX_REQUIRE_SPACK=1 (CI with the kit) makes a skip a failure.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_spack_activation import _activated
from test_spack_concretize import _skip, spack_requirements

from mpimatrix.builds.spack import activation, site_overlay
from mpimatrix.builds.spack import tool as spack_tool
from mpimatrix.builds.spack.kit import CI_ROWS, add_kit_sources
from mpimatrix.builds.spack.lock_builds import builds_from_lock
from mpimatrix.builds.spack.lockfile import read_lock
from mpimatrix.paths import offline_kit, project_root

pytestmark = pytest.mark.spack

ROOT = project_root()
#: The build names of the Debian externals' rows (the Open MPI one has NPB).
BUILDS = ("openmpi-4.1.4-ext-gcc12", "mpich-4.0.2-ext-gcc12")


def _require_kit() -> Path:
    kit = offline_kit()
    if kit is None:
        _skip("no offline kit (../shared/offline beside the project, or "
              "MPIMATRIX_OFFLINE_KIT): the benchmark and MPI sources are missing")
    return kit


def _say(request, text: str) -> None:
    """Into the session's output even when pytest captures it: CI's log shows it."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


@pytest.fixture(scope="module")
def kit_env(request, tmp_path_factory):
    """The kit rows concretized and installed; {spack, env_dir, lock, install log}."""
    kit = _require_kit()
    spack = spack_requirements()
    with open(os.devnull, "w") as quiet:
        site_overlay.write_shims("debian-local", out=quiet)
    add_kit_sources(kit)
    activation.write_activation()
    env_dir = spack_tool.env_copy(tmp_path_factory.mktemp("kit") / "env", list(CI_ROWS))
    env = dict(os.environ, MPIMATRIX_SPACK_SITE="debian-local")
    out = {}
    # --fresh: the lock from spack.yaml and the recipes alone, not from what is installed
    # (Spack reuses installed specs: the changed rows' IMB -O3 would do for this row's IMB).
    # -p 2: the externals' OSU and IMB build while MVAPICH2's serial autogen and configure
    # leave a core idle
    for step in (["concretize", "--fresh"], ["install", "--fail-fast", "-p", "2"]):
        t0 = time.monotonic()
        proc = subprocess.run([spack, "-e", str(env_dir), *step], env=env,
                              capture_output=True, text=True, timeout=3600)
        out[step[0]] = proc.stdout + proc.stderr
        installed = [line for line in out[step[0]].splitlines()
                     if line.startswith(("[+]", "==> Error", "==> Warning: Skipping build"))]
        _say(request, f"\n`spack -e <kit env> {' '.join(step)}`: rc {proc.returncode}, "
             f"{time.monotonic() - t0:.0f} s\n" + "\n".join(installed))
        assert proc.returncode == 0, out[step[0]][-4000:]
    lock = env_dir / "spack.lock"
    builds = sorted(b.name for b in builds_from_lock(lock, spack=False, prefixes={})[0])
    _say(request, f"the kit rows' builds: {', '.join(builds)}")
    return {"spack": spack, "env_dir": env_dir, "lock": lock, "log": out, "builds": builds}


def test_kit_rows_are_installed(kit_env):
    lock = read_lock(kit_env["lock"])
    assert len(lock.roots) == len(CI_ROWS)
    versions: dict[str, set[str]] = {}
    for n in lock.nodes.values():
        versions.setdefault(n.name, set()).add(n.version)
    assert versions["osu-micro-benchmarks"] == {"7.4-kit"}
    assert versions["intel-mpi-benchmarks"] == {"2021.11-kit"}  # the kit's newest
    assert versions["npb"] == {"3.4-kit"}
    assert versions["mvapich2"] == {"2.3.7-1-kit"}
    # Debian's as externals, and the kit's release trees built from source
    assert versions["openmpi"] == {"4.1.4", "4.1.4-kit"}, versions["openmpi"]
    assert versions["mpich"] == {"4.0.2", "4.0.2-kit"}, versions["mpich"]
    # each family's recipe built from source once
    built = sorted(n.name for n in lock.nodes.values()
                   if n.name in ("openmpi", "mpich", "mvapich2") and not n.is_external)
    assert built == ["mpich", "mvapich2", "openmpi"], built
    assert len(kit_env["builds"]) == len(CI_ROWS), kit_env["builds"]
    proc = subprocess.run([kit_env["spack"], "-e", str(kit_env["env_dir"]), "find",
                           "--format", "{name}@{version} {variants} /{hash:7}"],
                          env=dict(os.environ, MPIMATRIX_SPACK_SITE="debian-local"),
                          capture_output=True, text=True, timeout=600)
    found = proc.stdout
    assert proc.returncode == 0, proc.stderr[-2000:]
    n = len(CI_ROWS)
    assert found.count("mpimatrix-benchmarks@1.0") == n, found
    assert found.count("osu-micro-benchmarks@7.4-kit") == n, found
    assert found.count("intel-mpi-benchmarks@2021.11-kit") == n, found
    assert found.count("npb@3.4-kit") == 1, found  # on the Open MPI external
    assert any(line.startswith("mvapich2@2.3.7-1-kit ") and " fabrics=nemesis " in line
               for line in found.splitlines()), found


def _session_cases(results: Path) -> list[dict]:
    """The test cases (no fixtures) of the one session stored under `results`."""
    import sqlite3

    with sqlite3.connect(results / "db" / "results.db") as db:
        rows = db.execute("SELECT json_blob FROM sessions").fetchall()
    assert len(rows) == 1, len(rows)
    session = json.loads(rows[0][0])
    return [tc for run in session["runs"] for tc in run["testcases"] if not tc["fixture"]]


#: `reframe -r`'s quick mode, one benchmark of each kind per suite on every kit build
#: (point-to-point, collective, non-blocking, one-sided; test_reframe_local and
#: test_osu_reframe run the whole quick subset and catalogue), and NPB class S, every
#: kernel, where the row has NPB (the Open MPI external): the powers-of-two kernels on 2
#: ranks, BT and SP (squares) on 1.
QUICK_CASES = ("^(MpiPlacementCheck%placement=intranode"
               "|ImbCheck%placement=intranode%benchmark=(MPI1:PingPong|MPI1:Allreduce"
               "|NBC:Iallreduce|RMA:Unidir_put)"
               "|OsuCheck%placement=intranode%benchmark=(latency|bw|allreduce|iallreduce"
               "|put_latency)"
               "|NpbCheck%placement=intranode%kernel=(IS|EP|CG|FT|MG|LU)%npb_class=S"
               "|NpbCheck%placement=1x1%kernel=(BT|SP)%npb_class=S)$")


def test_activate_then_reframe_r_runs_every_kind_of_check_and_npb_on_every_kit_build(
        kit_env, request, tmp_path):
    got = _activated(kit_env["spack"], kit_env["env_dir"], tmp_path / "out",
                     f"-r -n {shlex.quote(QUICK_CASES)}")
    summary = [line for line in got["stdout"].splitlines()
               if line.startswith(("[  PASSED  ]", "[  FAILED  ]", "mpimatrix:", "Ran "))]
    _say(request, "\n`spack env activate <kit env>; reframe -r -n <quick cases>`: rc "
         + got["rc"].strip() + "\n" + "\n".join(summary))
    assert got["rc"].strip() == "0", got["stdout"][-4000:] + got["stderr"][-3000:]

    cases = _session_cases(tmp_path / "out" / "results")
    lock = read_lock(kit_env["lock"])
    npb_node = next(n for n in lock.nodes.values() if n.name == "npb")
    by_build: dict[str, set[str]] = {}
    npb = {}
    for tc in cases:
        assert tc["result"] == "pass", (tc["display_name"], tc["environ"], tc["fail_reason"])
        assert tc["lock_sha256"] == lock.sha256
        assert len(tc["build_hash"]) == 32 and tc["build_spec"], tc["display_name"]
        by_build.setdefault(tc["build_name"], set()).add(tc["display_name"].split()[0])
        if tc["display_name"].startswith("NpbCheck"):
            assert "quick" in tc["tags"], tc["tags"]  # class S is in the main job's mode
            npb[tc["benchmark"]] = tc
    _assert_every_kit_build(by_build, {"MpiPlacementCheck", "ImbCheck", "OsuCheck"},
                            kit_env["builds"])
    # NPB: every kernel verified, on the one row with NPB, from Spack's install of npb
    # (nothing built from the kit's source)
    assert sorted(npb) == sorted(f"{k}.S" for k in ("IS", "EP", "CG", "FT", "MG", "LU",
                                                     "BT", "SP")), sorted(npb)
    for name, tc in npb.items():
        kernel, cls = name.split(".")
        assert tc["build_name"] == BUILDS[0], tc["build_name"]
        assert tc["npb_version"] == "3.4-kit (spack)", tc["npb_version"]
        assert tc["npb_summary"]["verification"] == "SUCCESSFUL", tc["npb_summary"]
        assert tc["executable"].endswith(f"/npb-3.4-kit-{npb_node.hash}/bin/"
                                         f"{kernel.lower()}.{cls}.x"), (
            name, tc["executable"])


def _assert_every_kit_build(by_build: dict[str, set[str]], checks: set[str],
                            builds: list[str]) -> None:
    """Each of the kit rows' builds (kit_env["builds"]) passed each of `checks`."""
    assert set(BUILDS) <= set(builds), builds
    for build in builds:
        assert checks <= by_build.get(build, set()), (build, by_build.get(build))


@pytest.fixture(scope="module")
def kit_modules(kit_env, request, tmp_path_factory):
    """The environment's `modules:` configuration written as an Lmod hierarchy (`spack
    module lmod refresh`) and `mpimatrix modules spack`'s builds file naming each kit
    row's modules; {builds, entries, modulepath, stdout}."""
    import yaml
    from helpers import require_lmod

    require_lmod()
    spack, env_dir = kit_env["spack"], str(kit_env["env_dir"])
    env = dict(os.environ, MPIMATRIX_SPACK_SITE="debian-local")
    env.pop("SPACK_ENV", None)
    t0 = time.monotonic()
    proc = subprocess.run([spack, "-e", env_dir, "module", "lmod", "refresh", "-y"], env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    builds = tmp_path_factory.mktemp("modules") / "builds.yaml"
    proc = subprocess.run([str(Path(sys.executable).parent / "mpimatrix"), "modules", "spack",
                           "--lock", str(kit_env["lock"]), str(builds)], env=env,
                          capture_output=True, text=True, timeout=900)
    _say(request, f"\n`spack module lmod refresh` and `mpimatrix modules spack`: rc "
         f"{proc.returncode}, {time.monotonic() - t0:.0f} s\n{proc.stdout}{proc.stderr}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {"builds": builds, "entries": yaml.safe_load(builds.read_text())["builds"],
            "stdout": proc.stdout, "env": env,
            "modulepath": re.search(r"^  module use (.+)$", proc.stdout, re.M)[1].replace(
                " ", ":")}


def test_the_matrix_as_lmod_modules_runs_through_module_load(kit_env, kit_modules, request,
                                                             tmp_path):
    """`mpimatrix modules spack` names each kit row's MPI module and its OSU and IMB
    modules; `module avail` then shows the MPIs, and ReFrame runs placement, IMB and OSU
    on each row through `module load`, as a user loads them; the builds keep their Spack
    hash, and the report says they came from modules, and which."""
    from helpers import passed_cases, run_reframe

    from mpimatrix.builds import lmod

    entries, builds, env = kit_modules["entries"], kit_modules["builds"], kit_modules["env"]
    modulepath = kit_modules["modulepath"]
    lock = read_lock(kit_env["lock"])
    mpi_hashes = {n.hash for n in lock.nodes.values()
                  if n.name in ("openmpi", "mpich", "mvapich2")}
    assert len(entries) == len(CI_ROWS), entries
    npb_mpi = next(n.dep_providing("mpi") for n in lock.nodes.values() if n.name == "npb")
    for e in entries:  # the MPI's own module (hashed), then its OSU, IMB (NPB) under it
        assert e["dag_hash"] in mpi_hashes and e["lock_sha256"] == lock.sha256, e
        assert e["module"].endswith(f"-{e['dag_hash'][:7]}"), e
        assert sorted(m.split("/")[0] for m in e["benchmarks"]) == [
            "intel-mpi-benchmarks", *(["npb"] if e["dag_hash"] == npb_mpi else []),
            "osu-micro-benchmarks"], e
    avail = subprocess.run(["bash", "--noprofile", "--norc", "-c",
                            f"source {lmod.lmod_init()}; module -t avail 2>&1"],
                           env={**env, "MODULEPATH": modulepath}, capture_output=True,
                           text=True, timeout=120)
    listed = set(avail.stdout.split())
    assert {e["module"] for e in entries} <= listed, avail.stdout
    # the benchmarks are the ones the modules put on the PATH: Spack's, under its prefixes
    proc = subprocess.run([str(Path(sys.executable).parent / "mpimatrix"), "builds", "--json"],
                          env={**env, "MODULEPATH": modulepath, "MPIMATRIX_BUILDS": str(builds)},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = {b["name"]: b for b in json.loads(proc.stdout)["builds"]}
    assert sorted(records) == sorted(e["name"] for e in entries), proc.stdout[-3000:]
    for e in entries:
        rec = records[e["name"]]
        assert rec["provenance"] == "module" and rec["dag_hash"] == e["dag_hash"], rec
        assert set(rec["module_files"]) == {e["module"], *e["benchmarks"]}, rec
        for suite, package in (("osu", "osu-micro-benchmarks"),
                               ("imb", "intel-mpi-benchmarks")):
            bench = rec["benchmarks"][suite]
            assert bench["provenance"] == "module", bench
            assert f"/{package}-" in bench["bin_dir"], bench  # <spack store>/<name>-<ver>-<hash>

    results = tmp_path / "results"
    proc, report = run_reframe(
        results, "--mode", "quick", "-n", "MpiPlacementCheck", "-n",
        r"ImbCheck%placement=intranode%benchmark=MPI1:PingPong$", "-n",
        r"OsuCheck%placement=intranode%benchmark=latency$", "-r",
        env={"MODULEPATH": modulepath, "MPIMATRIX_BUILDS": str(builds),
             "MPIMATRIX_SPACK_SITE": "debian-local"}, timeout=1800)
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    by_build: dict[str, set[str]] = {}
    for tc in passed_cases(proc, report):
        assert tc["build_provenance"] == "module", tc["build_name"]
        by_build.setdefault(tc["build_name"], set()).add(tc["name"].split()[0])
    _say(request, f"through module load: {sorted(by_build.items())}")
    _assert_every_kit_build(by_build, {"MpiPlacementCheck", "ImbCheck", "OsuCheck"},
                            kit_env["builds"])
    # each job loaded the modules, as a user's job would, and ran Spack's binaries
    scripts = [p.read_text() for p in (results / "output").rglob("rfm_job.sh")]
    for e in entries:
        assert any(f"module load {e['benchmarks'][0]}" in t for t in scripts), e
    assert sum("module load " in t for t in scripts) >= 3 * len(entries)
    # the report's builds table says each came from modules, which, and its Spack hash
    reports = tmp_path / "html"
    proc = subprocess.run([str(Path(sys.executable).parent / "mpimatrix"), "report", "--html",
                           "--report", str(results / "reports" / "test-report.json"),
                           "--name", "modules", "--output-dir", str(reports)],
                          env={**env, "MPIMATRIX_RESULTS": str(results)}, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = (reports / "modules.md").read_text()
    for e in entries:
        row = next(ln for ln in summary.splitlines() if ln.startswith(f"| {e['name']} |"))
        assert (f"| module (`module load {' '.join([e['module'], *e['benchmarks']])}`) "
                f"| {e['dag_hash'][:7]} |") in row, row


INTERNODE = ("OsuCheck%placement=internode%benchmark=(latency|bw)$",
             "OsuCheck%placement=2x1%benchmark=allreduce$",
             "ImbCheck%placement=internode%benchmark=MPI1:PingPong$")


@pytest.mark.cluster
def test_cluster_run_osu_and_imb_internode_on_every_kit_build(kit_env, request):
    """`mpimatrix cluster run` in the activated environment (MPIMATRIX_LOCK as activation
    sets it): OSU and IMB between the two nodes, on each kit build, launched by srun
    (--mpi= the build's PMI)."""
    from test_vcluster import _require_cluster, _short_tmpdir

    from mpimatrix.vcluster import cluster
    from mpimatrix.vcluster.layout import Layout

    _require_cluster()
    lay = Layout.at(_short_tmpdir("k"), 2)
    cluster.up(lay)
    results = _short_tmpdir("r")
    try:
        env = dict(os.environ, MPIMATRIX_LOCK=str(kit_env["lock"]),
                   MPIMATRIX_SPACK_SITE="debian-local", MPIMATRIX_RESULTS=str(results))
        env.pop("MPIMATRIX_BUILDS", None)
        names = [a for n in INTERNODE for a in ("-n", n)]
        proc = subprocess.run(
            [str(Path(sys.executable).parent / "mpimatrix"), "cluster", "run", "--dir",
             str(lay.dir), "--", "--partition", "compute$", "--no-confirm", "--",
             "--max-retries=1", *names],
            env=env, capture_output=True, text=True, timeout=3600)
    finally:
        cluster.down(lay)
    tail = [line for line in proc.stdout.splitlines() if line.startswith(
        ("mpimatrix:", "[  PASSED  ]", "[  FAILED  ]")) or "internode" in line]
    _say(request, f"\n`mpimatrix cluster run` on the kit builds: rc {proc.returncode}\n"
         + "\n".join(tail[-40:]))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    by_build: dict[str, set[str]] = {}
    for tc in _session_cases(results):
        if tc["result"] != "pass":
            continue
        assert tc["hosts"] == ["node1", "node2"], (tc["display_name"], tc["hosts"])
        by_build.setdefault(tc["build_name"], set()).add(tc["display_name"].split()[0])
    _assert_every_kit_build(by_build, {"ImbCheck", "OsuCheck"}, kit_env["builds"])


@pytest.mark.cluster
def test_cluster_loads_the_kit_modules_inside_the_slurm_jobs(kit_modules, request):
    """The kit rows through their Spack modules on the emulated cluster: IMB PingPong and
    placement between the two nodes, launched by srun, each job loading the build's
    modules on the nodes."""
    from test_vcluster import _require_cluster, _short_tmpdir

    from mpimatrix.vcluster import cluster
    from mpimatrix.vcluster.layout import Layout

    _require_cluster()
    lay = Layout.at(_short_tmpdir("k"), 2)
    cluster.up(lay)
    results = _short_tmpdir("r")
    try:
        env = dict(kit_modules["env"], MPIMATRIX_BUILDS=str(kit_modules["builds"]),
                   MODULEPATH=kit_modules["modulepath"], MPIMATRIX_RESULTS=str(results))
        env.pop("MPIMATRIX_LOCK", None)
        proc = subprocess.run(
            [str(Path(sys.executable).parent / "mpimatrix"), "cluster", "run", "--dir",
             str(lay.dir), "--", "--partition", "compute$", "--no-confirm", "--",
             "--max-retries=1", "-n", INTERNODE[-1], "-n",
             "MpiPlacementCheck%placement=internode$"],
            env=env, capture_output=True, text=True, timeout=3600)
    finally:
        cluster.down(lay)
    tail = [line for line in proc.stdout.splitlines() if line.startswith(
        ("mpimatrix:", "[  PASSED  ]", "[  FAILED  ]"))]
    _say(request, f"\n`mpimatrix cluster run` through the kit modules: rc {proc.returncode}\n"
         + "\n".join(tail[-20:]))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    by_build: dict[str, set[str]] = {}
    for tc in _session_cases(results):
        # xfail: Debian MPICH 4.0 (ch4:ucx) hung in MPI_Finalize after its results, the
        # known fault of builds/known_faults.py (3-10 % of its runs on 2 nodes; a CI run
        # met it): the job loaded the modules and ran between the nodes all the same
        assert tc["result"] == "pass" or (
            tc["result"] == "xfail" and tc["build_name"].startswith("mpich-4.0.2-ext")), (
            tc["display_name"], tc["build_name"], tc["result"], tc["fail_reason"])
        assert tc["hosts"] == ["node1", "node2"], (tc["display_name"], tc["hosts"])
        assert tc["build_provenance"] == "module", tc["build_name"]
        by_build.setdefault(tc["build_name"], set()).add(tc["display_name"].split()[0])
    _assert_every_kit_build(by_build, {"ImbCheck", "MpiPlacementCheck"},
                            [e["name"] for e in kit_modules["entries"]])
    scripts = [p.read_text() for p in results.rglob("rfm_job.sh")]
    assert scripts, f"no job scripts under {results}"
    for e in kit_modules["entries"]:
        assert any("#SBATCH" in t and f"module load {e['module']}" in t for t in scripts), e


#: The kit rows with one dependency changed: the MVAPICH2 row's IMB built with -O3.
CHANGED_ROWS = (*CI_ROWS[:2], CI_ROWS[2] + " ^intel-mpi-benchmarks cflags=-O3", *CI_ROWS[3:])
MVAPICH2_IMB = "intel-mpi-benchmarks@2021.11-kit (spack): cflags (none) -> -O3"
# The three builds the sessions run (three give the gate its host factor and whole-build
# verdicts).
IMB_INTRANODE = ["--only", r"^(openmpi-4\.1\.4-ext|mpich-4\.0\.2-ext|mvapich2-)", "--",
                 "-n", r"ImbCheck%placement=intranode%benchmark=MPI1:(PingPong|Allreduce)$"]


@pytest.fixture(scope="module")
def changed_env(kit_env, request, tmp_path_factory):
    """The changed rows concretized and installed (one IMB rebuilt, ~40 s); that IMB is
    uninstalled at the end, so that no other concretization of the kit rows without
    --fresh (a person's, `spack concretize` reuses what is installed) picks it up."""
    spack = kit_env["spack"]
    env_dir = spack_tool.env_copy(tmp_path_factory.mktemp("changed") / "env",
                                  list(CHANGED_ROWS))
    env = dict(os.environ, MPIMATRIX_SPACK_SITE="debian-local")
    for step in (["concretize", "--fresh"], ["install", "--fail-fast"]):
        proc = subprocess.run([spack, "-e", str(env_dir), *step], env=env,
                              capture_output=True, text=True, timeout=3600)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    lock = read_lock(env_dir / "spack.lock")
    flagged = [n.hash for n in lock.nodes.values()
               if n.name == "intel-mpi-benchmarks" and n.values("cflags") == ["-O3"]]
    assert len(flagged) == 1, flagged
    yield {"lock": env_dir / "spack.lock"}
    subprocess.run([spack, "uninstall", "-y", "--dependents", f"/{flagged[0]}"], env=env,
                   capture_output=True, text=True, timeout=600)


def _run(results: Path, lock: Path, *args: str, inject: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, MPIMATRIX_LOCK=str(lock), MPIMATRIX_SPACK_SITE="debian-local",
               MPIMATRIX_RESULTS=str(results))
    for var in ("MPIMATRIX_BUILDS", "MPIMATRIX_INJECT", "SPACK_ENV"):
        env.pop(var, None)
    if inject:
        env["MPIMATRIX_INJECT"] = inject
    return subprocess.run([str(Path(sys.executable).parent / "mpimatrix"), *args], env=env,
                          capture_output=True, text=True, timeout=1800)


def _uuid(proc: subprocess.CompletedProcess) -> str:
    import re

    m = re.search(r"session ([0-9a-f-]{36})$", proc.stdout, re.M)
    assert m, proc.stdout[-3000:] + proc.stderr[-2000:]
    return m[1]


def _bless_until_gated(results: Path, lock: Path, build: str, most: int = 6) -> list[str]:
    """Sessions on the rows of `lock`, blessed after the third and after each further one
    until at least two of the build's four values are gated (at most `most` sessions), as
    a site blesses again from more sessions when bless leaves values out; the sessions'
    UUIDs. On this VM a build's values spread 8-24 % (robust CV) at noisy hours, and bless
    gates none of them at a 30 % tolerance (seen in CI): the sessions are blessed at a
    60 % floor, far inside the 5x the injector gives (a rate at 20 % of its reference
    against a threshold at 40 %; with 3x, 33 % against 40 %: one noisy pass from passing)."""
    from mpimatrix.builds.record import environ_name

    uuids: list[str] = []
    while True:
        uuids.append(_uuid(_run(results, lock, "run", "--mode", "compare", "--no-confirm",
                                *IMB_INTRANODE)))
        if len(uuids) < 3:
            continue
        proc = _run(results, lock, "bless", "--replace", "--since", "1d", "--mode", "compare",
                    "--tolerance", "0.6")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        left_out = [ln for ln in proc.stdout.splitlines()
                    if ln.startswith(f"  not gated: {environ_name(build)} ")]
        if len(left_out) <= 2 or len(uuids) >= most:
            assert len(left_out) <= 2, proc.stdout
            return uuids


def test_a_changed_dependency_is_named_by_the_regression_changes_diff_and_report(
        kit_env, changed_env, request, tmp_path):
    """Three to six sessions on the kit rows, `bless` (_bless_until_gated); then four or
    five on the changed rows with MVAPICH2 slowed 5x by the injector: the REGRESSION lines,
    `mpimatrix changes`, `mpimatrix diff` and the HTML report name the IMB -O3 for the
    MVAPICH2 build and for no other."""
    import re

    before, after = kit_env["lock"], changed_env["lock"]
    mvapich2 = "mvapich2-2.3.7-1-kit-nemesis-gcc12"
    inject = "^mvapich2-:clock=4.0"  # every interval it times +400 %
    uuids = _bless_until_gated(tmp_path, before, mvapich2)
    first_after = len(uuids)
    proc = _run(tmp_path, after, "run", "--mode", "compare", *IMB_INTRANODE, inject=inject)
    uuids.append(_uuid(proc))
    if proc.returncode == 0 and f"\nWATCH {mvapich2} " in proc.stdout:
        # a bless of three noisy sessions may gate one value of the build only: alone
        # outside, it is on watch the first night and a regression the next (watch.py)
        proc = _run(tmp_path, after, "run", "--mode", "compare", *IMB_INTRANODE,
                    inject=inject)
        uuids.append(_uuid(proc))
    red = uuids[-1]  # the night with the REGRESSION lines
    verdicts = proc.stdout[proc.stdout.find("\nREGRESSION "):].strip().split("\n\n")[0]
    _say(request, f"\n`mpimatrix run` on the changed rows, MVAPICH2 slowed 5x:\n{verdicts}")
    assert proc.returncode == 1, proc.stdout[-4000:]
    out = proc.stdout.splitlines()
    regressions = [ln.split()[1] for ln in out if ln.startswith("REGRESSION ")]
    assert mvapich2 in regressions, proc.stdout[-4000:]
    head = out.index(next(ln for ln in out if ln.startswith(f"  {mvapich2}: changed since ")))
    assert f"changed since session {uuids[first_after - 1][:8]} " in out[head], out[head]
    assert out[head + 1] == f"    {MVAPICH2_IMB}", out[head:head + 3]
    assert not out[head + 2].startswith("    "), out[head:head + 3]
    # four slowed sessions at least after three: a step the history finds at p < 0.01
    # against this machine's noise (3 against 3 was missed in a CI run)
    while len(uuids) < first_after + 4:
        uuids.append(_uuid(_run(tmp_path, after, "run", "--mode", "compare", "--no-confirm",
                                *IMB_INTRANODE, inject=inject)))

    proc = _run(tmp_path, after, "changes", "--since", "1d")
    _say(request, "\n`mpimatrix changes`:\n" + proc.stdout)
    lines = proc.stdout.splitlines()
    steps = [i for i, ln in enumerate(lines) if ln.startswith("NEW SLOWER ")]
    # the machine may change state in the same hours (in a CI run every build ran 19-46 %
    # slower from the session MVAPICH2 was slowed): the host's own step is named as the
    # machine's; every build's step is the changed build's
    builds = [i for i in steps if not lines[i].startswith("NEW SLOWER host ")]
    blamed = [i for i in builds if lines[i].startswith(f"NEW SLOWER {mvapich2} ")]
    assert blamed, lines
    assert all(": every build +" in lines[i] for i in set(steps) - set(builds)), lines
    # a step of an unchanged build is this machine's noise (a CI run: one value of MPICH
    # and one of Open MPI 40-45 % slower from one session on, p < 0.001): it names
    # no software change; the IMB -O3 is named for MVAPICH2 and for no other build
    for i in set(builds) - set(blamed):
        assert lines[i + 1].endswith(": no recorded software change"), lines[i:i + 3]
    for i in blamed:
        assert lines[i + 1] == (f"      software session {uuids[first_after - 1][:8]} -> "
                                f"{uuids[first_after][:8]}: changed"), lines[i:i + 3]
        assert lines[i + 2] == f"        {mvapich2}: {MVAPICH2_IMB}", lines[i:i + 3]
        assert not lines[i + 3].startswith("        "), lines[i:i + 4]

    proc = _run(tmp_path, after, "diff", uuids[first_after - 1], uuids[first_after])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[1:] == [f"  {mvapich2}:", f"    {MVAPICH2_IMB}",
                                            "1 change(s): 1 build(s)"], proc.stdout
    proc = _run(tmp_path, after, "diff", uuids[0], uuids[1])
    assert proc.stdout.splitlines()[1:] == ["  no recorded software change"], proc.stdout

    proc = _run(tmp_path, after, "report", "--html", "--session", red, "--name",
                "changed", "--output-dir", str(tmp_path / "html"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    html = (tmp_path / "html" / "changed.html").read_text()
    section = html[html.index("<h3>What changed</h3>"):]
    section = section[:section.index("<h3>", 5)]
    assert re.findall(r"<code>(.*?)</code>", section) == [
        MVAPICH2_IMB.replace(">", "&gt;")], section
    assert f"<b>{mvapich2}</b>" in section


# == Build once, install anywhere: the binary cache ==========================================
# (docs/spack.md "Build once, install anywhere"; the whole built matrix:
# measure/spack_buildcache.py.) Helpers and test of this block only.

def _bc_run(cmd: list[str], timeout: int = 1800) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=dict(os.environ, MPIMATRIX_SPACK_SITE="debian-local"),
                          capture_output=True, text=True, timeout=timeout)
    return time.monotonic() - t0, proc


def test_kit_rows_install_from_a_binary_cache_into_an_empty_tree_without_compiling(
        kit_env, request, tmp_path):
    """The installed kit rows pushed (unsigned) to a binary cache in tmp, then installed
    from it alone into an EMPTY install tree by a copy of the environment with the same
    lock (`spack install --use-buildcache only`: no build allowed): every package is
    extracted from the cache, none compiled, and osu_latency of a row with a source-built
    MPI runs from the new tree on 2 ranks through that MPI's own launcher, linked against
    the new tree only (relocation works).

    Measured cost (2026-11-27, 2 cores, a Spack build running beside it, load 3.6): 27 s
    besides kit_env for the 5 CI rows (19 packages, 86 MiB): push 15 s, install from the
    cache 10 s, osu_latency 0.1 s. (With 3 rows at load 9-11: 46 s.)
    """
    import shutil

    from test_vcluster import _short_tmpdir

    from mpimatrix.builds.spack import buildcache

    spack, env_dir = kit_env["spack"], kit_env["env_dir"]
    lock = read_lock(kit_env["lock"])
    source = buildcache.store_root(spack, "-e", str(env_dir),
                                   env=dict(os.environ, MPIMATRIX_SPACK_SITE="debian-local"))
    installed = buildcache.store_index(source)
    roots = [r for r in lock.roots if r["hash"] in installed]
    assert len(roots) == len(lock.roots), "kit_env installs every row of its lock"
    hashes = [f"/{r['hash']}" for r in roots]
    cache = tmp_path / "buildcache"
    push_s, proc = _bc_run([spack, "-e", str(env_dir), "buildcache", "push", "--unsigned",
                            "--update-index", str(cache), *hashes])
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    size, files = buildcache.cache_size(cache)

    # Spack relocates by rewriting the install root in place: the new one must be shorter
    tree = _short_tmpdir("t") / "t"
    assert len(str(tree)) <= len(str(source)), (tree, source)
    try:
        scope = buildcache.tree_scope(tmp_path / "scope", tree, cache)
        copy = buildcache.env_with_lock(env_dir, tmp_path / "copy")
        install_s, proc = _bc_run([spack, "-C", str(scope), "-e", str(copy), "install",
                                   "--use-buildcache", "only", *hashes])
        out = proc.stdout + proc.stderr
        log = buildcache.read_install_log(out)
        new = buildcache.store_index(tree)
        _say(request, f"\nbinary cache: push {len(roots)} rows {push_s:.0f} s "
             f"({size / 2**20:.0f} MiB, {files} files); install into an empty tree "
             f"{install_s:.0f} s: {len(log.extracted)} extracted, {len(new)} installed, "
             f"compiled: {log.compiled or 'nothing'}")
        assert proc.returncode == 0, out[-4000:]
        assert not log.compiled and not log.from_source, out[-4000:]
        assert new and len(log.extracted) == len(new), (log.extracted, sorted(new))
        for rec in new.values():
            assert rec["path"].startswith(str(tree)), rec
            assert (buildcache.install_times(rec["path"]) or {}).get("cache") is True, rec
        for r in roots:  # each row's root, MPI (unless external), OSU and IMB
            wanted = {rn.node.hash for rn in buildcache.row_nodes(lock, r["hash"])
                      if rn.role}
            assert wanted <= set(new), (buildcache.row_label(lock, r), wanted - set(new))

        built_mpi = [r for r in roots if not buildcache.row_mpi(lock, r["hash"]).is_external]
        assert built_mpi, "no row with a source-built MPI"
        row = built_mpi[0]
        cmd, extra = buildcache.osu_latency_command(lock, row["hash"], new)
        assert cmd[0].startswith(str(tree)) and cmd[3].startswith(str(tree)), cmd
        t0 = time.monotonic()
        run = subprocess.run(cmd, env=dict(os.environ, **extra), capture_output=True,
                             text=True, timeout=300)
        ldd = subprocess.run(["ldd", cmd[3]], capture_output=True, text=True).stdout
        _say(request, f"osu_latency of {buildcache.row_label(lock, row)} from the new tree: "
             f"rc {run.returncode}, {time.monotonic() - t0:.1f} s")
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        assert [ln for ln in run.stdout.splitlines() if ln[:1].isdigit()], run.stdout
        assert str(source) not in ldd and str(tree) in ldd, ldd
    finally:
        shutil.rmtree(tree.parent, ignore_errors=True)
