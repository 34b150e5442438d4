"""Builds given as Lmod modules (builds/lmod.py): `mpimatrix modules write` gives this
machine's MPIs modulefiles, `module avail` shows them, a builds file naming modules gives
the same builds discovery finds (family, version, benchmarks) loaded as a user loads
them, and ReFrame runs the quick mode through `module load` in its job scripts.

The Lmod tests skip without Lmod (Debian `lmod`), unless MPIMATRIX_REQUIRE_LMOD=1 (CI),
which makes its absence a failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import passed_cases, require_lmod, run_reframe

from mpimatrix.builds import lmod
from mpimatrix.builds.software import build_software
from mpimatrix.results.software_diff import build_changes

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
#: the modules the ReFrame run loads: every MPICH-ABI MPI here (Intel MPI's IMB runs on
#: all three, nothing to build)
RUN = ("mpich/4.0.2-debian", "mpich/5.0.2-pypi", "impi/2021.18.1-pypi")


# -- what the probe's answers say (recorded outputs of this machine's MPIs) ------------
@pytest.mark.parametrize("answers,family,version", [
    ({"mpiexec": "Intel(R) MPI Library for Linux* OS, Version 2021.18.1 Build 20260626 "
                 "(id: b44796a)", "mpichversion": ""}, "impi", "2021.18.1"),
    ({"mpirun": "mpirun.openmpi (OpenRTE) 4.1.4",
      "mpichversion": "MPICH Version:      4.0.2"}, "openmpi", "4.1.4"),
    ({"mpirun": "mpirun (Open MPI) 5.0.11"}, "openmpi", "5.0.11"),
    ({"mpiexec": "HYDRA build details:\n    Version:   4.0.2",
      "mpichversion": "MPICH Version:      5.0.2\nMPICH Device:   ch4:ofi"}, "mpich", "5.0.2"),
    ({"mpichversion": "MVAPICH2 Version:     \t2.3.7\nMVAPICH2 Device: ch3:mrail"},
     "mvapich2", "2.3.7"),
    ({"mpiexec": "bash: mpiexec: command not found"}, None, ""),
])
def test_the_family_comes_from_the_launcher_then_mpichversion(answers, family, version):
    # an Open MPI with Debian's MPICH mpichversion on the PATH is Open MPI
    assert lmod._family(answers) == (family, version)


def test_the_compiler_behind_the_wrapper_is_named_as_spack_names_it():
    assert lmod._compiler("gcc (Debian 12.2.0-14) 12.2.0") == "gcc@12.2.0"
    assert lmod._compiler("Debian clang version 14.0.6") == "llvm@14.0.6"
    assert lmod._compiler("icx: command not found") == ""


def test_an_edited_modulefile_is_a_change_of_the_build(tmp_path):
    from mpimatrix.builds.record import BuildRecord

    rec = BuildRecord(name="mpich-5.0.2-pypi", family="mpich", version="5.0.2",
                      provenance="module", prefix=str(tmp_path), cc="/x/mpicc",
                      launcher="/x/mpiexec", launcher_style="hydra",
                      modules=["mpich/5.0.2-pypi"], module_files={"mpich/5.0.2-pypi": "a" * 64})
    old = build_software(rec)
    rec.module_files = {"mpich/5.0.2-pypi": "b" * 64}
    assert build_changes(rec.name, old, build_software(rec), lambda _: None) == [
        f"mpich/5.0.2-pypi (modulefile sha256): {'a' * 12} -> {'b' * 12}"]


# -- with Lmod ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def discovered():
    """The MPIs discovery finds here: those `mpimatrix modules write` writes modules for."""
    from mpimatrix.builds.discovery import discover

    builds = discover()[0]
    if not builds:
        pytest.skip("no MPI on this machine: run scripts/setup.sh first")
    return builds


@pytest.fixture(scope="module")
def tree(tmp_path_factory, discovered):
    require_lmod()
    root = tmp_path_factory.mktemp("modules")
    proc = subprocess.run([MPIMATRIX, "modules", "write", str(root)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    names = [ln.strip() for ln in proc.stdout.splitlines() if ln.startswith("  ") and "/" in ln
             and " " not in ln.strip()]
    assert names and (root / "builds.yaml").is_file(), proc.stdout
    return root, names


def mpimatrix(*args: str, root: Path, builds: Path, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "MODULEPATH": str(root), "MPIMATRIX_BUILDS": str(builds), **kw}
    env.pop("SPACK_ENV", None)
    return subprocess.run([MPIMATRIX, *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_module_avail_shows_every_mpi_found_here(tree, discovered):
    root, names = tree
    env = {**os.environ, "MODULEPATH": str(root)}
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-c",
                           f"source {lmod.lmod_init()}; module -t avail 2>&1"],
                          capture_output=True, text=True, env=env, timeout=60)
    listed = {ln.strip() for ln in proc.stdout.splitlines()}
    assert set(names) <= listed, proc.stdout
    assert len(names) == len(discovered)


def test_builds_named_by_module_are_the_builds_discovery_finds(tree, discovered, tmp_path):
    root, names = tree
    (root / "broken").mkdir(exist_ok=True)
    (root / "broken" / "1.0.lua").write_text('setenv("NOT_AN_MPI", "1")\n')
    builds = tmp_path / "builds.yaml"
    builds.write_text(yaml.safe_dump({"builds": [
        *({"module": n} for n in names), {"module": "nosuch/1.0"}, {"module": "broken/1.0"},
        {"module": names[0], "needs": "gcc"},
        {"module": names[0], "name": "bench-string", "benchmarks": "osu"},
        {"module": names[0], "name": "bench-no-osu", "benchmarks": ["broken/1.0"]}]}))
    proc = mpimatrix("builds", "--json", root=root, builds=builds)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    found = {b["name"]: b for b in out["builds"]}
    for b in discovered:  # the module's name is the build's: the same references
        rec = found[b.name]
        assert (rec["family"], rec["version"], rec["provenance"]) == (
            b.family, b.version, "module")
        assert rec["modules"] == [n for n in names if n.startswith(f"{b.family}/{b.version}-")]
        assert set(rec["module_files"]) == set(rec["modules"])
        assert set(rec["benchmarks"]) >= set(b.benchmarks) - {"osu"}, rec["benchmarks"]
        assert Path(rec["cc"]).name == "mpicc"
    skipped = {s["name"]: s["reason"] for s in out["skipped"]}
    assert "`module load nosuch/1.0` failed" in skipped["nosuch/1.0"]
    assert str(builds) in skipped["nosuch/1.0"] and "MODULEPATH" in skipped["nosuch/1.0"]
    # /usr/bin/mpicc (Debian's alternatives' choice) is on the PATH without any module
    assert (("module 'broken/1.0' loads no MPI: the mpicc on the PATH after loading it, "
             "/usr/bin/mpicc, is not from a folder it adds") if Path("/usr/bin/mpicc").exists()
            else "module 'broken/1.0' loads no MPI this project knows") in skipped["broken/1.0"]
    if Path("/usr/bin/mpicc").exists():  # a system MPI: what to do instead
        assert "leave that build to discovery (`mpimatrix builds`)" in skipped["broken/1.0"]
    assert "'needs' must be a list of module names" in skipped[names[0]]
    assert "'benchmarks' must be a list of module names" in skipped["bench-string"]
    assert ("its benchmarks modules ['broken/1.0'] put neither osu_latency nor IMB-MPI1 on "
            "the PATH") in skipped["bench-no-osu"]


def test_the_reframe_configuration_loads_the_modules(tree, tmp_path, monkeypatch):
    from mpimatrix.builds.sources import load_builds
    from mpimatrix.site.config import build_config

    root, _ = tree
    builds = tmp_path / "builds.yaml"
    builds.write_text(yaml.safe_dump({"builds": [{"module": m} for m in RUN]}))
    monkeypatch.setenv("MODULEPATH", str(root))
    monkeypatch.setenv("MPIMATRIX_BUILDS", str(builds))
    monkeypatch.setenv("MPIMATRIX_RESULTS", str(tmp_path / "results"))
    monkeypatch.delenv("LMOD_CMD", raising=False)
    config = build_config(load_builds(), extra_systems=[])
    assert [e["modules"] for e in config["environments"]] == [[m] for m in RUN]
    [local] = config["systems"]
    assert local["modules_system"] == "lmod"
    assert local["partitions"][0]["prepare_cmds"][0].startswith(f"source {lmod.lmod_init()}")
    assert os.environ["LMOD_CMD"] == str(lmod.lmod_cmd())


@pytest.mark.reframe
def test_the_quick_mode_runs_through_module_load(tree, tmp_path):
    root, _ = tree
    builds = tmp_path / "builds.yaml"
    builds.write_text(yaml.safe_dump({"builds": [{"module": m} for m in RUN]}))
    results = tmp_path / "results"
    env = {"MODULEPATH": str(root), "MPIMATRIX_BUILDS": str(builds)}
    proc, report = run_reframe(results, "--mode", "quick", "-n", "MpiPlacementCheck",
                               "-n", "ImbCheck", "-r", env=env)
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    cases = passed_cases(proc, report)
    ran = {(tc["name"].split()[0], tc["build_name"]) for tc in cases}
    for module in RUN:
        name = module.replace("/", "-")
        assert {("MpiPlacementCheck", name), ("ImbCheck", name)} <= ran, ran
    assert all(tc["build_provenance"] == "module" for tc in cases)
    assert {tc["build_modules"] for tc in cases} == set(RUN)
    # each job loaded its build's module, as a user's job would
    scripts = list((results / "output").rglob("rfm_job.sh"))
    assert scripts
    for script in scripts:
        env_dir = script.parents[1].name  # output/<system>/<partition>/<environ>/<test>
        module = next(m for m in RUN if m.replace("/", "-").replace(".", "_") == env_dir)
        assert f"module load {module}" in script.read_text(), script


def test_the_site_example_names_modules_and_each_is_skipped_here_with_its_reason():
    from mpimatrix.builds.builds_file import load_builds_file
    from mpimatrix.paths import project_root

    example = project_root() / "site_config" / "builds.yaml.example"
    builds, skipped = load_builds_file(example)
    assert builds == []
    assert [s.name for s in skipped] == ["openmpi/4.1.6", "mpich-4.2.1-gcc12",
                                         "intel-mpi/2021.12"]
    for s in skipped:  # this machine has neither the modules nor, perhaps, Lmod
        assert str(example) in s.reason
        assert "failed" in s.reason or "Lmod is not installed" in s.reason, s.reason
