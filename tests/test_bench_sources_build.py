"""Real builds from the offline kit's sources: IMB 2021.7 for Debian's Open MPI (which
the Intel MPI wheel's IMB cannot serve) runs PingPong on 2 ranks; a second build call
reuses it; and the main job given the kit (`mpimatrix run --sources`) builds IMB and OSU
in its fixtures and runs IMB and OSU test cases on both Open MPI builds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import main_job_env, offline_kit_or_skip

from mpimatrix.builds.bench_install import installed, run_build
from mpimatrix.builds.bench_suites import IMB
from mpimatrix.suites.imb import output as imb_output

pytestmark = [pytest.mark.mpi]

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
KIT_IMB = "sources/intel-mpi-benchmarks/intel-mpi-benchmarks-2021.7.tar.gz"
KIT_OSU = "sources/osu-micro-benchmarks/osu-micro-benchmarks-7.4.tar.gz"
#: Given too, so that no suite lacks a source (NPB's cases are not selected: not built)
KIT_NPB = "sources/npb/NPB3.4.tar.gz"
CASES = r"^(ImbCheck%placement=intranode%benchmark=MPI1:PingPong|" \
        r"OsuCheck%placement=intranode%benchmark=latency)$"


@pytest.fixture(scope="module")
def kit() -> Path:
    return offline_kit_or_skip()


@pytest.fixture(scope="module")
def open_mpi(buildset):
    builds = [b for b in buildset.builds if b.family == "openmpi"]
    if not any(b.provenance == "debian" for b in builds):
        pytest.skip("no Debian Open MPI build on this machine (apt-get install openmpi-bin "
                    "libopenmpi-dev)")
    return builds


@pytest.fixture(scope="module")
def cache(kit, open_mpi, tmp_path_factory):
    """A project cache holding IMB built from the kit for Debian's Open MPI."""
    root = tmp_path_factory.mktemp("bench-cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("MPIMATRIX_CACHE", str(root))
    for var in ("MPIMATRIX_SOURCES", "MPIMATRIX_OSU_SOURCE", "MPIMATRIX_IMB_SOURCE"):
        mp.delenv(var, raising=False)
    debian = next(b for b in open_mpi if b.provenance == "debian")
    install = run_build(IMB, debian, kit / KIT_IMB, quiet=True)
    yield root, debian, install
    mp.undo()


def test_imb_built_for_debian_open_mpi_runs_pingpong_on_two_ranks(cache, tmp_path):
    _root, debian, install = cache
    assert install.version == "2021.7" and installed(IMB, debian.name).bin_dir == \
        install.bin_dir
    exe = Path(install.bin_dir, "IMB-MPI1")
    libs = subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
    assert "libmpi.so.40" in libs, libs  # Open MPI's own library, not the MPICH ABI's
    (tmp_path / "msglen").write_text("0\n1024\n65536\n")
    proc = subprocess.run([debian.launcher, "-np", "2", str(exe), "PingPong", "-msglen",
                           str(tmp_path / "msglen"), "-npmin", "2"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, **debian.env})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    run = imb_output.parse(proc.stdout, proc.stderr)
    table = run.find("PingPong", 2)
    assert table is not None and table.sizes() == [0, 1024, 65536], proc.stdout[-2000:]
    assert "Intel(R) MPI Benchmarks 2021.7" in proc.stdout


def test_a_second_build_call_reuses_the_install(cache, kit):
    root, debian, _install = cache
    record = root / "imb" / debian.name / "install" / "mpimatrix-imb.json"
    before = record.read_text()
    proc = subprocess.run([MPIMATRIX, "bench-build", "--suite", "imb", "--build", debian.name,
                           "--source", str(kit / KIT_IMB)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "MPIMATRIX_CACHE": str(root)})
    assert proc.returncode == 0 and "is built already" in proc.stdout, proc.stdout + proc.stderr
    assert record.read_text() == before


@pytest.mark.reframe
def test_main_job_with_the_kit_runs_imb_and_osu_on_the_open_mpi_builds(cache, kit, open_mpi,
                                                                       tmp_path):
    """`mpimatrix run --sources KIT`, quick mode, the Open MPI builds, one IMB and one
    OSU benchmark: the fixtures build what the cache lacks (OSU on both, IMB on the
    PyPI one) and reuse Debian's IMB; every case passes."""
    root, debian, _install = cache
    env = main_job_env(tmp_path / "results", root)
    only = "^(" + "|".join(re.escape(b.name) for b in open_mpi) + ")$"
    # the two tarballs: the kit as a whole gives its newest IMB, not the 2021.7 built above
    proc = subprocess.run([MPIMATRIX, "run", "--sources", str(kit / KIT_IMB), "--sources",
                           str(kit / KIT_OSU), "--sources", str(kit / KIT_NPB),
                           "--only", only,
                           "--no-confirm", "--", "-n", CASES],
                          env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "add sources" not in proc.stdout  # the kit had both
    report = json.loads((tmp_path / "results" / "reports" / "latest.json").read_text())
    cases = [tc for r in report["runs"] for tc in r["testcases"]]
    for b in open_mpi:
        mine = [tc for tc in cases if tc["environ"] == b.environ_name]
        tests = {tc["name"].split()[0]: tc for tc in mine}
        assert all(tc["result"] == "pass" for tc in mine), [
            (tc["name"], tc["fail_reason"]) for tc in mine if tc["result"] != "pass"]
        assert {"ImbCheck", "OsuCheck", "ImbFromSource", "OsuFromSource"} <= set(tests)
        assert tests["ImbCheck"]["imb_version"] == "2021.7 (mpimatrix bench-build)"
        assert tests["OsuCheck"]["osu_version"] == "7.4"
        assert tests["ImbFromSource"]["action"] == ("reused" if b is debian else "built")
        assert tests["OsuFromSource"]["action"] == "built"
        assert (root / "osu" / b.name / "install" / "mpimatrix-osu.json").exists()
