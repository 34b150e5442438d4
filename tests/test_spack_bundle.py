"""One root per MPI build: the bundle package and the lock reader on its lock.

tests/fixtures/spack/debian-local-bundle-v6.spack.lock was written by
`measure/concretize_time.py` (`spack -v -e <copy> concretize -f`; Spack 1.1.0,
spack-packages v2025.11.0) from the current spack.yaml and the debian-local overlay: the
whole matrix, 29 roots. Its externals point at the shim prefixes made in the checkout it
was concretized in (/work/wt-spack).
"""

from __future__ import annotations

import json

import pytest
from helpers import FIXTURES

from mpimatrix.builds.spack import tool as spack_tool
from mpimatrix.builds.spack.lock_builds import builds_from_lock
from mpimatrix.builds.spack.lockfile import read_lock
from mpimatrix.builds.spack.spec_naming import pmi_of
from mpimatrix.rfm.launchers import SRUN_PMI1_LINE_NOTE, srun_plugin

LOCK = FIXTURES / "spack" / "debian-local-bundle-v6.spack.lock"
#: the lock of the matrix before the bundle (58 roots: OSU and IMB roots apart)
BEFORE = FIXTURES / "spack" / "debian-local-v6.spack.lock"
MPIS = ("openmpi", "mpich", "mvapich", "mvapich2", "intel-oneapi-mpi")


@pytest.fixture(scope="module")
def lock():
    return read_lock(LOCK)


def test_roots_are_the_bundle_one_per_mpi_build(lock):
    assert lock.version == 6
    assert lock.spack["version"] == spack_tool.SPACK_VERSION
    assert lock.spack["commit"] == spack_tool.SPACK_COMMIT
    assert len(lock.roots) == 29  # one per MPI x fabric x compiler (before: 58)
    assert all(r["spec"].startswith("mpimatrix-benchmarks %%c,cxx=") for r in lock.roots)
    for r in lock.roots:
        node = lock.node(r["hash"])
        assert node.data["namespace"] == "mpimatrix"
        deps = {lock.node(h).name: lock.node(h) for h, _, _ in node.deps()}
        osu, imb = deps["osu-micro-benchmarks"], deps["intel-mpi-benchmarks"]
        mpi = node.dep_providing("mpi")
        # OSU and IMB are built on the bundle's one MPI node
        assert osu.dep_providing("mpi") == imb.dep_providing("mpi") == mpi
        assert lock.node(mpi).name in MPIS
        assert imb.data["namespace"] == "mpimatrix"  # the project's IMB fix


def test_every_build_gets_both_suites(lock, tmp_path):
    """The same 29 builds as the matrix had before the bundle, each with OSU and IMB
    attached (installed prefixes given for the benchmarks), the externals used where
    the site's MPIs are asked for."""
    prefixes = {n.hash: str(tmp_path / n.hash[:7]) for n in lock.nodes.values()
                if n.name in ("osu-micro-benchmarks", "intel-mpi-benchmarks")}
    recs, _ = builds_from_lock(LOCK, spack=False, prefixes=prefixes)
    before, _ = builds_from_lock(BEFORE, spack=False, prefixes={})
    assert sorted(r.name for r in recs) == sorted(r.name for r in before)
    for r in recs:
        assert set(r.benchmarks) == {"osu", "imb"}, (r.name, r.notes)
        assert not [n for n in r.notes if n.startswith("also ")], r.notes
        assert r.compiler.split("@")[0] in ("gcc", "llvm")
    ext = {r.name for r in recs if "external" in r.notes}
    assert ext == {"openmpi-4.1.4-ext-gcc12", "openmpi-4.1.4-ext-llvm14",
                   "mpich-4.0.2-ext-gcc12", "mpich-4.0.2-ext-llvm14"}


def test_mvapich4_launches_with_hydra_under_slurm(lock):
    """MVAPICH 4.x is MPICH 4.3-based; its recipe has no pmi variant, and the default
    process_managers=auto builds Hydra and MPICH's PMI-1 client, whose lines Slurm's
    pmi2 plugin cuts: launched by its own mpiexec inside the allocation."""
    recs, _ = builds_from_lock(LOCK, spack=False, prefixes={})
    mv = next(r for r in recs if r.name == "mvapich-4.1-ucx-gcc12")
    node = lock.node(mv.dag_hash)
    assert node.data["namespace"] == "mpimatrix"  # the configure_args fix
    assert node.values("process_managers") == ["auto"] and "pmi" not in node.params
    assert mv.pmi == "pmi1"
    assert srun_plugin(mv) == ("", SRUN_PMI1_LINE_NOTE)
    assert any("MPICH 4.3-based" in n and "PMI-1" in n for n in mv.notes), mv.notes
    assert mv.fabric == "ucx"
    assert all(r.pmi == "pmi1" for r in recs if r.family == "mvapich")


def test_mvapich4_with_slurm_process_manager_is_srun_launched(lock, tmp_path):
    data = json.loads(LOCK.read_text())
    for node in data["concrete_specs"].values():
        if node["name"] == "mvapich":
            node["parameters"]["process_managers"] = ["slurm"]
    path = tmp_path / "spack.lock"
    path.write_text(json.dumps(data))
    recs, _ = builds_from_lock(path, spack=False, prefixes={})
    mvs = [r for r in recs if r.family == "mvapich"]
    assert len(mvs) == 4
    for mv in mvs:
        assert mv.pmi == "pmi2" and srun_plugin(mv) == ("pmi2", "")
        assert any("Slurm's PMI library" in n for n in mv.notes)


def test_external_mvapich_keeps_the_family_default(lock):
    node = next(n for n in lock.nodes.values() if n.name == "mvapich")
    ext = type(node)(node.hash, {**node.data, "external": {"path": "/opt/mvapich"}})
    assert pmi_of(ext, "mvapich") == "pmi1"


def test_a_row_without_installed_benchmarks_is_told_the_spack_install_of_its_root(lock,
                                                                                   tmp_path):
    """The llvm rows of the external MPIs when only the gcc rows are installed: the
    records say which suites are missing and the `spack install /<hash>` of their
    mpimatrix-benchmarks root, and `mpimatrix run`'s note gives that, not osu-build."""
    from mpimatrix.builds.sources import BuildSet
    from mpimatrix.run.selection import osu_note

    gcc_rows = [r["hash"] for r in lock.roots if "cxx=gcc" in r["spec"]]
    prefixes = {h: str(tmp_path / h[:7]) for root in gcc_rows
                for h, _, _ in lock.node(root).deps()
                if lock.node(h).name in ("osu-micro-benchmarks", "intel-mpi-benchmarks")}
    recs = {r.name: r for r in builds_from_lock(LOCK, spack=False, prefixes=prefixes)[0]}
    llvm, gcc = recs["openmpi-4.1.4-ext-llvm14"], recs["openmpi-4.1.4-ext-gcc12"]
    root = next(r["hash"] for r in lock.roots
                if r["spec"] == "mpimatrix-benchmarks %%c,cxx=clang ^openmpi@4.1.4")
    assert llvm.benchmarks == {}
    assert llvm.missing_benchmarks == {"osu": f"spack install /{root[:7]}",
                                       "imb": f"spack install /{root[:7]}"}
    assert "osu: osu-micro-benchmarks@7.5.1 /" in " ".join(llvm.notes)
    assert f"(`spack install /{root[:7]}`)" in " ".join(llvm.notes)
    assert set(gcc.benchmarks) == {"osu", "imb"} and gcc.missing_benchmarks == {}
    # the record keeps it through ReFrame's environment extras (to_dict / from_dict)
    assert type(llvm).from_dict(llvm.to_dict()).missing_benchmarks == llvm.missing_benchmarks

    note = osu_note(BuildSet(f"lock:{LOCK}", [gcc, llvm]))
    assert "osu-build" not in note
    assert note == (
        "IMB/OSU: no test case for openmpi-4.1.4-ext-llvm14: the lock has the benchmarks, "
        "Spack has not installed them; install their rows (mpimatrix-benchmarks for that "
        "MPI and compiler) in the activated environment: "
        f"`spack install /{root[:7]}`"), note
    both = osu_note(BuildSet(f"lock:{LOCK}", [gcc, llvm, recs["mpich-4.0.2-ext-llvm14"]]))
    mpich_root = next(r["hash"] for r in lock.roots
                      if r["spec"] == "mpimatrix-benchmarks %%c,cxx=clang ^mpich@4.0.2")
    assert both.endswith(f"`spack install /{root[:7]} /{mpich_root[:7]}`"), both
    assert osu_note(BuildSet(f"lock:{LOCK}", [gcc])) == ""


def test_an_mpi_not_installed_is_told_the_spack_install_of_its_row(lock):
    """Spack answered and this MPI is not among its installs: the record names its row's
    root (the MPI with its benchmarks), not the MPI alone."""
    from mpimatrix.builds.record import why_unusable

    gcc = next(n.hash for n in lock.nodes.values() if n.name == "gcc")
    recs = {r.name: r for r in builds_from_lock(LOCK, spack=False, prefixes={gcc: "/usr"})[0]}
    r = recs["openmpi-5.0.8-ucx-gcc12"]
    root = next(x["hash"] for x in lock.roots if x["spec"] ==
                "mpimatrix-benchmarks %%c,cxx=gcc ^openmpi@5 fabrics=ucx schedulers=slurm")
    assert why_unusable(r) == [f"not installed (`spack install /{root[:7]}`)"]
