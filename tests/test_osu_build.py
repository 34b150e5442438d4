"""`mpimatrix osu-build`: OSU installs per build in the project cache, and discovery."""

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from mpimatrix.builds import bench_install as bi
from mpimatrix.builds.bench_suites import OSU, find_binary
from mpimatrix.builds.discovery import attach_bench_installs
from mpimatrix.builds.record import BenchmarkInstall, BuildRecord
from mpimatrix.paths import offline_kit


def rec(name="mpich-4.0.2-debian", cc="/usr/bin/mpicc.mpich", **kw):
    return BuildRecord(name=name, family="mpich", version="4.0.2", provenance="debian",
                       prefix="/usr", cc=cc, launcher="/usr/bin/mpiexec.mpich",
                       launcher_style="hydra", **kw)


def fake_tree(root, version="7.4"):
    root.mkdir(parents=True)
    (root / "configure.ac").write_text(
        f"AC_INIT([OSU-Micro-Benchmarks], [{version}], [mvapich-discuss@cse.ohio-state.edu])\n")
    return root


def test_source_version_and_staging(tmp_path):
    tree = fake_tree(tmp_path / "src" / "osu-micro-benchmarks-7.4")
    assert OSU.version_of(tree, tree) == "7.4"
    only_changes = tmp_path / "old"
    only_changes.mkdir()
    (only_changes / "CHANGES").write_text("OSU Micro Benchmarks v5.6.1 (03/15/2019)\n")
    assert OSU.version_of(only_changes, only_changes) == "5.6.1"
    # a tarball with one top directory, as OSU ships it
    tgz = tmp_path / "osu-micro-benchmarks-7.4.tar.gz"
    with tarfile.open(tgz, "w:gz") as tf:
        data = (tree / "configure.ac").read_bytes()
        info = tarfile.TarInfo("osu-micro-benchmarks-7.4/configure.ac")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    staged = bi.stage_source(OSU, tgz, tmp_path / "work")
    assert staged.name == "osu-micro-benchmarks-7.4" and OSU.version_of(staged, staged) == "7.4"
    staged = bi.stage_source(OSU, tmp_path / "src", tmp_path / "work2")  # parent dir
    assert (staged / "configure.ac").exists() and staged.parent == tmp_path / "work2"
    with pytest.raises(bi.BenchBuildError, match="not an OSU source tree"):
        bi.stage_source(OSU, tmp_path / "work2" / "..", tmp_path / "work3")


def test_cxx_wrapper_and_build_script(tmp_path):
    assert bi.cxx_for(rec(cc="/usr/bin/mpicc.openmpi")) == "/usr/bin/mpicxx.openmpi"
    assert bi.cxx_for(rec(cc="/v/bin/mpicc")) == "/v/bin/mpicxx"
    assert bi.cxx_for(rec(cc="mpiicc")) == "mpiicpc"
    b = rec(env={"I_MPI_ROOT": "/v", "LD_LIBRARY_PATH": "/v/lib:$LD_LIBRARY_PATH"},
            prepare_cmds=["eval `spack load --sh /abc`"])
    plan = bi.BuildPlan(b, tmp_path, "7.4", tmp_path / "install", tmp_path / "w",
                               tmp_path / "build.sh", tmp_path / "log", 2)
    text = bi.script_text(plan, tmp_path / "w" / "src")
    assert "export LD_LIBRARY_PATH=/v/lib:\"${LD_LIBRARY_PATH}\"" in text
    assert "eval `spack load --sh /abc`" in text
    assert (f"./configure CC=/usr/bin/mpicc.mpich CXX=/usr/bin/mpicxx.mpich "
            f"--prefix={tmp_path / 'install'}") in text
    assert "set -u" not in text  # LD_LIBRARY_PATH may be unset


def test_find_binary_prefers_the_standard_variant(tmp_path):
    for sub in ("mpi/pt2pt/persistent", "mpi/pt2pt", "mpi/collective/blocking"):
        (tmp_path / sub).mkdir(parents=True, exist_ok=True)
    for path in ("mpi/pt2pt/osu_latency", "mpi/pt2pt/persistent/osu_latency",
                 "mpi/collective/blocking/osu_allreduce"):
        (tmp_path / path).write_text("")
        (tmp_path / path).chmod(0o755)
    (tmp_path / "mpi/pt2pt/osu_bw").write_text("")  # not executable
    assert find_binary(tmp_path, "latency") == str(tmp_path / "mpi/pt2pt/osu_latency")
    assert find_binary(tmp_path, "osu_allreduce").endswith("blocking/osu_allreduce")
    assert find_binary(tmp_path, "bw") is None


def test_discovery_attaches_complete_cache_installs_only(tmp_path, monkeypatch):
    monkeypatch.setenv("MPIMATRIX_CACHE", str(tmp_path))
    for var in ("MPIMATRIX_OSU_SOURCE", "MPIMATRIX_SOURCES"):  # no source: no OSU planned
        monkeypatch.delenv(var, raising=False)
    done, half, none = rec("a"), rec("b"), rec("c")
    for b in (done, half):
        bindir = tmp_path / "osu" / b.name / "install" / "libexec" / "osu-micro-benchmarks"
        bindir.mkdir(parents=True)
    record = tmp_path / "osu" / "a" / "install" / bi.record_name(OSU)
    record.write_text(json.dumps({"version": "7.4", "bin_dir": str(record.parent / "libexec" /
                                                                    "osu-micro-benchmarks")}))
    spack = rec("d")
    spack.benchmarks["osu"] = BenchmarkInstall("osu", "/spack/osu", "7.5", "spack")
    attach_bench_installs([done, half, none, spack], [OSU])
    assert done.benchmarks["osu"].version == "7.4" and "osu" in done.features()
    assert "osu" not in half.benchmarks and "osu" not in none.benchmarks  # no record: no OSU
    assert spack.benchmarks["osu"].provenance == "spack"  # never replaced


@pytest.mark.osu
@pytest.mark.mpi
def test_real_build_from_a_source_tree(buildset, tmp_path, monkeypatch):
    """Builds OSU for one real build from MPIMATRIX_OSU_SOURCE (a source tree or tarball),
    else from the offline kit's OSU tarball."""
    kit = offline_kit()
    kit_osu = sorted(kit.glob("sources/osu-micro-benchmarks/*.tar.gz")) if kit else []
    src = os.environ.get("MPIMATRIX_OSU_SOURCE") or (str(kit_osu[0]) if kit_osu else "")
    if not src:
        pytest.skip("no OSU source: set MPIMATRIX_OSU_SOURCE to an OSU source tree or "
                    "tarball, or put the offline kit beside the project")
    monkeypatch.setenv("MPIMATRIX_CACHE", str(tmp_path))
    b = next(b for b in buildset.builds if not b.prepare_cmds)
    osu = bi.run_build(OSU, b, Path(src), None, None, False, True)
    assert find_binary(osu.bin_dir, "latency")
    assert bi.installed(OSU, b.name, None).bin_dir == osu.bin_dir
    assert not (tmp_path / "osu" / b.name / "work").exists()
