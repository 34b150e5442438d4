"""Benchmark sources for the builds without OSU or IMB: found in a kit, a tarball or a
tree; downloaded against a local server (the recipe's sha256 accepted, another one
refused); cached per build and source (reused, rebuilt when the source changes);
and, with none, the main job says once how to add them."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import offline_kit_or_skip

from mpimatrix.builds import bench_download, bench_install
from mpimatrix.builds.bench_sources import SourceError, configured_sources, scan, suite_of
from mpimatrix.builds.bench_suites import IMB, IMB_PROGRAMS, OSU
from mpimatrix.builds.discovery import attach_bench_installs
from mpimatrix.builds.record import BuildRecord

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
KIT_OSU = "sources/osu-micro-benchmarks/osu-micro-benchmarks-7.4.tar.gz"
KIT_IMB = "sources/intel-mpi-benchmarks/intel-mpi-benchmarks-2021.7.tar.gz"
KIT_NPB = "sources/npb/NPB3.4.tar.gz"
#: the kit's newest IMB: what a kit given as a whole builds
KIT_IMB_NEWEST = "sources/intel-mpi-benchmarks/intel-mpi-benchmarks-2021.11.tar.gz"
KIT_OSU_SHA = "101b6cf4ea6126a8c32cab1dbe59969197944a044b16e6bb9ec828d1a1eb7266"


@pytest.fixture
def kit() -> Path:
    return offline_kit_or_skip()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for var in ("MPIMATRIX_SOURCES", "MPIMATRIX_OSU_SOURCE", "MPIMATRIX_IMB_SOURCE",
                "MPIMATRIX_SOURCES_URL", "MPIMATRIX_DOWNLOAD"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MPIMATRIX_USER_CACHE", str(tmp_path / "user-cache"))
    monkeypatch.setenv("MPIMATRIX_CACHE", str(tmp_path / "cache"))


def test_kit_tarballs_and_trees_are_found(kit, tmp_path, monkeypatch):
    found = scan(kit)  # the MVAPICH2 tarball beside them is neither suite
    newest = kit / KIT_IMB_NEWEST if (kit / KIT_IMB_NEWEST).exists() else kit / KIT_IMB
    assert found == {"osu": kit / KIT_OSU, "imb": newest, "npb": kit / KIT_NPB}
    bench_install.extract_tar(kit / KIT_IMB, tmp_path / "trees")
    tree = tmp_path / "trees" / "mpi-benchmarks-IMB-v2021.7"
    assert suite_of(tree) is IMB and IMB.version_of(tree, tree) == "2021.7"
    assert scan(tmp_path / "trees") == {"imb": tree}
    renamed = tmp_path / "IMB-v2021.7.tar.gz"  # GitHub's name for the release
    renamed.symlink_to(kit / KIT_IMB)
    assert suite_of(renamed) is IMB and suite_of(kit / KIT_OSU) is OSU
    # the first path holding a suite wins; a suite's own variable wins over all
    monkeypatch.setenv("MPIMATRIX_SOURCES", f"{tmp_path / 'trees'}:{kit}")
    assert configured_sources() == {"imb": tree, "osu": kit / KIT_OSU, "npb": kit / KIT_NPB}
    monkeypatch.setenv("MPIMATRIX_IMB_SOURCE", str(renamed))
    assert configured_sources()["imb"] == renamed
    (tmp_path / "empty").mkdir()
    for bad, why in (("nowhere", "does not exist"), ("empty", "holds no OSU or IMB source")):
        monkeypatch.setenv("MPIMATRIX_SOURCES", str(tmp_path / bad))
        with pytest.raises(SourceError, match=why):
            configured_sources()


class _Mirror(http.server.SimpleHTTPRequestHandler):
    requests: list[str] = []

    def log_message(self, *args):
        _Mirror.requests.append(self.path)


@pytest.fixture
def mirror(kit, tmp_path, monkeypatch):
    """A local server over a Spack-mirror layout holding the kit's two tarballs."""
    root = tmp_path / "mirror"
    for rel in (KIT_OSU, KIT_IMB):
        dest = root / Path(rel).relative_to("sources")
        dest.parent.mkdir(parents=True)
        dest.symlink_to(kit / rel)
    handler = functools.partial(_Mirror, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Mirror.requests = []
    monkeypatch.setenv("MPIMATRIX_SOURCES_URL", f"http://127.0.0.1:{server.server_port}/")
    yield _Mirror.requests
    server.shutdown()
    server.server_close()


def test_download_accepts_the_recipe_sha256_and_refuses_another(mirror, tmp_path):
    path = bench_download.fetch(IMB)
    assert path == tmp_path / "user-cache" / "sources" / "intel-mpi-benchmarks" / \
        "intel-mpi-benchmarks-2021.7.tar.gz"
    assert bench_install.source_digest(path) == IMB.release.sha256
    assert bench_download.fetch(IMB) == path and len(mirror) == 1  # kept, not fetched again
    # the kit's OSU is a `git archive` pack, not the release tarball Spack checks
    with pytest.raises(SourceError) as err:
        bench_download.fetch(OSU)
    msg = str(err.value)
    assert "osu-micro-benchmarks-7.4.tar.gz" in msg and "refused" in msg
    assert f"is {KIT_OSU_SHA}, expected {OSU.release.sha256}" in msg
    assert not list((tmp_path / "user-cache" / "sources" / "osu-micro-benchmarks").iterdir())


def test_a_download_that_cannot_connect_fails_fast(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setenv("MPIMATRIX_SOURCES_URL", f"http://127.0.0.1:{port}")
    t0 = time.monotonic()
    with pytest.raises(SourceError, match=f"cannot download IMB 2021.7 from http://127.0.0.1:"
                       f"{port}/intel-mpi-benchmarks/intel-mpi-benchmarks-2021.7.tar.gz"):
        bench_download.fetch(IMB)
    assert time.monotonic() - t0 < 5
    monkeypatch.setenv("MPIMATRIX_DOWNLOAD", "0")
    assert not bench_download.downloads_enabled()


def _tiny_imb_tree(root: Path, marker: str) -> Path:
    """A tree in IMB's layout whose sub-Makefiles (src_cpp/ by TARGET, src_c/P2P/)
    compile a real (tiny) MPI program under each IMB name: builds in a second, so the
    cache's decisions can be watched."""
    tree = root / "mpi-benchmarks-IMB-v0.1"
    (tree / "src_c" / "P2P").mkdir(parents=True, exist_ok=True)
    (tree / "src_cpp").mkdir(exist_ok=True)
    (tree / "src_c" / "hello.c").write_text(
        '#include <mpi.h>\n#include <stdio.h>\nint main(int c, char **v) {\n'
        f'  MPI_Init(&c, &v); puts("{marker}"); MPI_Finalize(); return 0; }}\n')
    for folder, up in (("src_cpp", ".."), ("src_c/P2P", "../..")):
        (tree / folder / "Makefile").write_text(
            f"IMB-$(TARGET):\n\t$(CC) {up}/src_c/hello.c -o $@\n")
    (tree / "Makefile").write_text(f"{' '.join(IMB_PROGRAMS)}:\n"
                                   "\t$(CC) src_c/hello.c -o $@\n")
    return tree


@pytest.mark.mpi
def test_cache_reuses_a_build_of_the_same_source_and_rebuilds_a_changed_one(
        buildset, tmp_path, monkeypatch):
    build = next((b for b in buildset.builds if b.name.startswith("openmpi-")
                  and b.provenance == "debian"), None)
    if build is None:
        pytest.skip("no Debian Open MPI build on this machine")
    tree = _tiny_imb_tree(tmp_path / "src", "v1")
    cli = [MPIMATRIX, "bench-build", "--suite", "imb", "--build", build.name, "--source",
           str(tree)]
    env = dict(os.environ)
    first = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    record_path = tmp_path / "cache" / "imb" / build.name / "install" / "mpimatrix-imb.json"
    record = json.loads(record_path.read_text())
    assert record["source_sha256"] == bench_install.source_digest(tree)
    again = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0 and "is built already" in again.stdout, again.stdout
    assert json.loads(record_path.read_text()) == record  # not rebuilt
    # discovery gives the build this install while the configured source is the same
    monkeypatch.setenv("MPIMATRIX_IMB_SOURCE", str(tree))
    b = BuildRecord.from_dict({**build.to_dict(), "benchmarks": {}})
    attach_bench_installs([b], [IMB])
    assert b.benchmarks["imb"].bin_dir == record["bin_dir"]
    assert Path(record["bin_dir"], "IMB-MPI1").exists()
    # an install lacking a program the checks run (built before IMB-EXT): built again
    Path(record["bin_dir"], "IMB-EXT").unlink()
    assert bench_install.current_record(IMB, build.name, tree) is None
    # a changed source: planned again (the fixture rebuilds), and bench-build rebuilds
    _tiny_imb_tree(tmp_path / "src", "v2")
    assert bench_install.current_record(IMB, build.name, tree) is None
    b.benchmarks.clear()
    attach_bench_installs([b], [IMB])
    assert any("IMB to be built from" in n for n in b.notes)
    rebuilt = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=300)
    assert rebuilt.returncode == 0 and "installed in" in rebuilt.stdout, rebuilt.stdout
    new = json.loads(record_path.read_text())
    assert new["source_sha256"] != record["source_sha256"]
    assert new["source_sha256"] == bench_install.source_digest(tree)
    out = subprocess.run([build.launcher, "-np", "1", str(Path(new["bin_dir"], "IMB-MPI1"))],
                         capture_output=True, text=True, timeout=120,
                         env={**env, **build.env})
    assert out.stdout.strip() == "v2", out.stdout + out.stderr


@pytest.mark.mpi
@pytest.mark.reframe
def test_without_sources_the_main_job_says_once_how_to_add_them(buildset, tmp_path,
                                                                monkeypatch):
    """No source given, downloads that cannot connect (a closed local port): one note
    naming the builds without OSU/IMB and how to add sources; the session runs."""
    build = buildset.builds[0]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MPIMATRIX_RESULTS": str(tmp_path / "results"),
           "MPIMATRIX_MACHINE_LOCK": "", "MPIMATRIX_SOURCES_URL": f"http://127.0.0.1:{port}"}
    env.pop("MPIMATRIX_INJECT", None)
    proc = subprocess.run([MPIMATRIX, "run", "--only", f"^{re.escape(build.name)}$",
                           "--no-confirm", "--", "-n", "^MpiPlacementCheck%placement=intranode$"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    out = proc.stdout
    assert out.count("add sources: `mpimatrix run --sources PATH`") == 1, out[-3000:]
    assert out.count("no source to build the benchmarks from") == 1
    assert "OSU on every build" in out and "cannot download OSU 7.4" in out


def test_the_note_names_the_kit_beside_the_clone(kit, tmp_path):
    """`mpimatrix run` without sources, with a kit at hand (run-local.sh takes it by
    default): the note on what lacks a source says where the kit is and how to use it."""
    from mpimatrix.builds.bench_prepare import note

    missing = {"osu": ["openmpi-4.1.4-debian"], "imb": ["openmpi-4.1.4-debian"]}
    text = note(missing, ["cannot download OSU 7.4"], 2, kit)
    assert text.count("add sources: `mpimatrix run --sources PATH`") == 1
    assert text.splitlines()[-1] == (f"  the offline kit {kit} has them: `mpimatrix run "
                                     f"--sources {kit}` (./scripts/run-local.sh takes it "
                                     "by default)")
    assert "has them" not in note(missing, [], 2, None)
    assert "has them" not in note(missing, [], 2, tmp_path)  # a folder without sources
