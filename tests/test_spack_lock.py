"""The Spack lock reader against a real lock of this project's spack.yaml.

tests/fixtures/spack/debian-local-v6.spack.lock was written by `spack -e .
concretize` (Spack 1.1.0, spack-packages v2025.11.0) with the debian-local
overlay: the whole matrix as it was before the bundle package, 58 roots (OSU and IMB
roots apart; the lock of the current matrix is tested in test_spack_bundle.py). Its
externals point at the shim prefixes `mpimatrix spack shims` made in the checkout
it was concretized in.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import FIXTURES, ROOT, passed_cases, run_reframe

from mpimatrix.builds.record import BuildError, why_unusable
from mpimatrix.builds.spack import tool as spack_tool
from mpimatrix.builds.spack.lock_builds import builds_from_lock
from mpimatrix.builds.spack.lockfile import LockError, read_lock
from mpimatrix.rfm.launchers import SRUN_PMI1_LINE_NOTE, srun_plugin

LOCK = FIXTURES / "spack" / "debian-local-v6.spack.lock"
SHIMS_WHEN_CONCRETIZED = "/work/main/.cache/spack/shims"


def _nodes(name: str) -> list[str]:
    data = json.loads(LOCK.read_text())
    return [h for h, d in data["concrete_specs"].items() if d["name"] == name]


@pytest.fixture(scope="module")
def records():
    recs, sha = builds_from_lock(LOCK, spack=False, prefixes={})
    return {r.name: r for r in recs}, sha


def test_lock_metadata_and_pins():
    lock = read_lock(LOCK)
    assert lock.version == 6
    assert lock.sha256 == hashlib.sha256(LOCK.read_bytes()).hexdigest()
    assert lock.spack["version"] == spack_tool.SPACK_VERSION
    assert lock.spack["commit"] == spack_tool.SPACK_COMMIT
    assert len(lock.roots) == 58
    # IMB comes from the project's repository (packages/), OSU from builtin
    namespaces = {(n.name, n.data.get("namespace")) for n in lock.nodes.values()
                  if n.name in ("intel-mpi-benchmarks", "osu-micro-benchmarks")}
    assert namespaces == {("intel-mpi-benchmarks", "mpimatrix"),
                          ("osu-micro-benchmarks", "builtin")}


def test_one_record_per_mpi_build_and_compiler(records):
    recs, sha = records
    assert len(recs) == 29
    assert {r.family for r in recs.values()} == {"openmpi", "mpich", "mvapich2", "mvapich",
                                                 "impi"}
    for name in ("openmpi-5.0.8-ucx-gcc12", "openmpi-5.0.8-ofi-llvm14",
                 "openmpi-5.0.8-cma-gcc12", "openmpi-4.1.8-pmi-gcc12",
                 "mpich-4.3.2-ofi-gcc12", "mpich-4.3.2-ucx-llvm14",
                 "mpich-4.3.2-ch3-tcp-gcc12", "mvapich2-2.3.7-1-mrail-gcc12",
                 "mvapich2-2.3.7-1-nemesis-llvm14", "mvapich2-2.3.7-1-psm-llvm14",
                 "mvapich-4.1-ofi-gcc12", "mvapich-4.1-ucx-llvm14",
                 "impi-2021.17.0-gcc12", "openmpi-4.1.4-ext-gcc12", "mpich-4.0.2-ext-llvm14"):
        assert name in recs, sorted(recs)
    # psm conflicts with gcc >= 6 (spack.yaml's exclude): no gcc psm build
    assert "mvapich2-2.3.7-1-psm-gcc12" not in recs
    for r in recs.values():
        assert re.fullmatch(r"[a-z0-9]{32}", r.dag_hash)
        assert r.spec.startswith(f"{'intel-oneapi-mpi' if r.family == 'impi' else r.family}"
                                 f"@{r.version}") or r.spec.startswith("mvapich2@")
        assert r.lock_sha256 == sha and r.provenance == "spack"
        assert r.compiler.split("@")[0] in ("gcc", "llvm")


def test_fabric_pmi_and_compiler_per_build(records):
    recs, _ = records
    assert recs["openmpi-5.0.8-ucx-gcc12"].fabric == "ucx"
    assert recs["openmpi-5.0.8-ucx-gcc12"].pmi == "pmix"
    assert recs["openmpi-4.1.8-pmi-gcc12"].pmi == "pmi2"  # +pmi links Slurm's PMI-2
    assert recs["mpich-4.3.2-ch3-tcp-gcc12"].fabric == "ch3:tcp"
    assert recs["mpich-4.3.2-ofi-llvm14"].fabric == "ch4:ofi"
    assert recs["mpich-4.3.2-ofi-llvm14"].compiler == "llvm@14.0.6"
    assert "device=ch4" in recs["mpich-4.3.2-ofi-llvm14"].spec
    assert "%c,cxx=llvm@14.0.6" in recs["mpich-4.3.2-ofi-llvm14"].spec
    # MPICH >= 4.1 speaks PMI-1 lines that Slurm's pmi2 plugin cuts: Hydra, not srun.
    assert recs["mpich-4.3.2-ofi-llvm14"].pmi == "pmi1"
    assert srun_plugin(recs["mpich-4.3.2-ofi-llvm14"]) == ("", SRUN_PMI1_LINE_NOTE)
    assert recs["mpich-4.0.2-ext-gcc12"].pmi == "pmi1"
    assert srun_plugin(recs["mpich-4.0.2-ext-gcc12"]) == ("pmi2", "")


def test_external_mpi_gives_one_record_per_benchmark_compiler(records):
    recs, _ = records
    gcc, llvm = recs["openmpi-4.1.4-ext-gcc12"], recs["openmpi-4.1.4-ext-llvm14"]
    assert gcc.dag_hash == llvm.dag_hash
    assert gcc.prefix == f"{SHIMS_WHEN_CONCRETIZED}/openmpi-4.1.4-debian"
    assert gcc.env["OMPI_CC"] == "/usr/bin/gcc" and llvm.env["OMPI_CC"] == "/usr/bin/clang"
    assert recs["mpich-4.0.2-ext-llvm14"].env["MPICH_CC"] == "/usr/bin/clang"
    assert gcc.pmi == "pmix" and "external" in gcc.notes


def test_not_installed_builds_say_how_to_install(records):
    recs, _ = records
    r = recs["openmpi-5.0.8-ucx-gcc12"]
    assert why_unusable(r) == ["not located: Spack not found (SPACK_ROOT/PATH) and "
                           "MPIMATRIX_SPACK_STORE unset"]
    other = {_nodes("gcc")[0]: "/usr"}  # Spack answered, this MPI is not among the installs
    recs2, _ = builds_from_lock(LOCK, spack=False, prefixes=other)
    r2 = next(x for x in recs2 if x.name == "openmpi-5.0.8-ucx-gcc12")
    assert why_unusable(r2) == [f"not installed (`spack install /{r2.dag_hash[:7]}`)"]


def test_installed_builds_and_their_benchmarks(tmp_path):
    """Prefixes as Spack reports them: the MPI's environment comes from its prefix
    (no Spack on PATH) and both benchmark installs are attached."""
    prefixes = {}
    for name in ("openmpi", "intel-mpi-benchmarks", "osu-micro-benchmarks"):
        for h in _nodes(name):
            prefixes[h] = str(tmp_path / f"{name}-{h[:7]}")
            (tmp_path / f"{name}-{h[:7]}" / "bin").mkdir(parents=True)
    recs, _ = builds_from_lock(LOCK, spack=False, prefixes=prefixes)
    r = next(x for x in recs if x.name == "openmpi-5.0.8-ofi-gcc12")
    # an empty prefix: the record looks for the wrappers in it and says they are missing
    assert any(f"{prefixes[r.dag_hash]}/bin/mpicc is missing" in p for p in why_unusable(r))
    assert r.env["PATH"] == f"{prefixes[r.dag_hash]}/bin:$PATH"
    assert set(r.benchmarks) == {"osu", "imb"}
    osu, imb = r.benchmarks["osu"], r.benchmarks["imb"]
    assert osu.bin_dir.endswith("/libexec/osu-micro-benchmarks") and osu.provenance == "spack"
    assert imb.bin_dir == f"{prefixes[imb.spec_hash]}/bin" and imb.version == "2021.7"
    # the benchmarks of this build are the ones built against this very MPI node
    data = json.loads(LOCK.read_text())["concrete_specs"]
    mpi_dep = [d["hash"] for d in data[imb.spec_hash]["dependencies"]
               if "mpi" in d["parameters"]["virtuals"]]
    assert mpi_dep == [r.dag_hash]


def test_lockfile_v7_roots_with_groups(tmp_path, records):
    """Spack 1.2 writes lockfile-version 7: the same nodes, roots with a `group`.
    No real v7 lock can be produced here (no Spack 1.2): the real v6 lock is
    rewritten into that layout."""
    data = json.loads(LOCK.read_text())
    data["_meta"]["lockfile-version"] = 7
    for r in data["roots"]:
        r["group"] = "matrix"
    v7 = tmp_path / "spack.lock"
    v7.write_text(json.dumps(data))
    recs, sha = builds_from_lock(v7, spack=False, prefixes={})
    assert sorted(r.name for r in recs) == sorted(records[0])
    assert sha == hashlib.sha256(v7.read_bytes()).hexdigest()
    assert all("group matrix" in r.notes for r in recs)


@pytest.mark.parametrize("content, message", [
    (None, "cannot read Spack lock file"),
    ("{not json", "invalid JSON"),
    ('{"roots": []}', "not a Spack lock file"),
    ('{"_meta": {"file-type": "spack-lockfile", "lockfile-version": 4}}',
     "written by Spack < 1.0: re-concretize with Spack 1.x"),
    ('{"_meta": {"file-type": "spack-lockfile", "lockfile-version": 6}, '
     '"roots": [], "concrete_specs": {}}', "the lock has no MPI build"),
])
def test_bad_locks_name_the_file_and_the_fix(tmp_path, content, message):
    path = tmp_path / "spack.lock"
    if content is not None:
        path.write_text(content)
    with pytest.raises(LockError, match=re.escape(message)) as err:
        builds_from_lock(path, spack=False, prefixes={})
    assert str(path) in str(err.value)
    assert isinstance(err.value, BuildError)


@pytest.mark.mpi
@pytest.mark.reframe
def test_reframe_runs_the_builds_of_a_lock(tmp_path):
    """MPIMATRIX_LOCK: the environments come from the lock (names from the specs),
    unusable builds are reported as skipped, and every test case records the lock's
    sha256 and the build's DAG hash. The lock's externals (the Debian MPIs) run;
    its source builds are not installed here."""
    if not (shutil.which("mpicc.openmpi") and shutil.which("mpicc.mpich")):
        pytest.skip("the lock's externals are the Debian MPIs: apt install openmpi-bin "
                    "libopenmpi-dev mpich libmpich-dev (scripts/setup.sh as root)")
    if not Path("/usr/bin/clang").exists():
        pytest.skip("the lock's llvm@14 builds use Debian's clang: apt install clang")
    subprocess.run([str(Path(sys.executable).parent / "mpimatrix"), "spack", "shims", "--site",
                    "debian-local"], check=True, capture_output=True, cwd=ROOT)
    shims = str(ROOT / ".cache" / "spack" / "shims")
    lock = tmp_path / "spack.lock"
    lock.write_text(LOCK.read_text().replace(SHIMS_WHEN_CONCRETIZED, shims))
    sha = hashlib.sha256(lock.read_bytes()).hexdigest()
    proc, report = run_reframe(tmp_path / "results", "-n", "MpiPlacementCheck", "-r",
                               env={"MPIMATRIX_LOCK": str(lock), "SPACK_ROOT": "",
                                    "PATH": "/usr/bin:/bin",
                                    # nor the one `mpimatrix spack get` put in the user cache
                                    "MPIMATRIX_USER_CACHE": str(tmp_path / "no-spack")})
    assert report is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "build openmpi-5.0.8-ucx-gcc12 skipped: not located" in proc.stderr
    cases = passed_cases(proc, report)
    assert {tc["environ"] for tc in cases} == {
        "openmpi-4_1_4-ext-gcc12", "openmpi-4_1_4-ext-llvm14",
        "mpich-4_0_2-ext-gcc12", "mpich-4_0_2-ext-llvm14"}
    for tc in cases:
        assert tc["lock_sha256"] == sha
        assert re.fullmatch(r"[a-z0-9]{32}", tc["build_hash"])
        assert tc["build_provenance"] == "spack"
