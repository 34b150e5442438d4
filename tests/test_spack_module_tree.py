"""The builds file `mpimatrix modules spack` writes from Spack's answers (which modules it
wrote for each hash): the module a user loads for the MPI, its OSU and IMB after it, the
compiler's first where the hierarchy puts the MPI under a compiler, and a build left out,
saying why, when a module is missing. The real tree Spack writes for the kit rows is
tests/test_spack_kit.py's."""

from __future__ import annotations

from mpimatrix.builds.record import BenchmarkInstall, BuildRecord
from mpimatrix.builds.spack.module_tree import REFRESH, module_tree

ROOT = "/site/lmod/linux-debian12-x86_64"


def _build(name: str, mpi: str, osu: str, imb: str, **kw) -> BuildRecord:
    return BuildRecord(
        name=name, family="mpich", version="4.0.2", provenance="spack", prefix="/p",
        cc="/p/bin/mpicc", launcher="/p/bin/mpiexec", launcher_style="hydra",
        dag_hash=mpi, lock_sha256="f" * 64, spec="mpich@4.0.2", fabric="ch3:tcp",
        benchmarks={"osu": BenchmarkInstall("osu", "/o", spec_hash=osu),
                    "imb": BenchmarkInstall("imb", "/i", spec_hash=imb)}, **kw)


def _module(use: str, under: str) -> dict:
    return {"use": use, "path": f"{under}/{use}.lua"}


def test_a_core_compiler_build_loads_its_mpi_then_its_benchmarks():
    mpi_dir = f"{ROOT}/mpich/4.0.2-aaaaaaa/Core"
    names = {"a" * 32: {**_module("mpich/4.0.2-aaaaaaa", f"{ROOT}/Core"),
                        "compiler": _module("gcc/12.2.0", f"{ROOT}/Core")},
             "o" * 32: _module("osu-micro-benchmarks/7.4", mpi_dir),
             "i" * 32: _module("intel-mpi-benchmarks/2021.7", mpi_dir)}
    # the lock's PMI (srun --mpi=) and variables beyond the family's and the module's paths
    build = _build("mpich-4.0.2-ch3-gcc12", "a" * 32, "o" * 32, "i" * 32, pmi="pmi2",
                   env={"MPICH_CC": "/usr/bin/gcc-12", "PATH": "/p/bin:$PATH"})
    tree = module_tree([build], names)
    assert tree.skipped == []
    assert tree.entries == [{
        "name": "mpich-4.0.2-ch3-gcc12", "module": "mpich/4.0.2-aaaaaaa",
        "benchmarks": ["osu-micro-benchmarks/7.4", "intel-mpi-benchmarks/2021.7"],
        "fabric": "ch3:tcp", "pmi": "pmi2", "env": {"MPICH_CC": "/usr/bin/gcc-12"},
        "spec": "mpich@4.0.2", "dag_hash": "a" * 32,
        "lock_sha256": "f" * 64}]
    assert tree.module_paths == [f"{ROOT}/Core"]


def test_a_build_of_another_compiler_needs_the_compilers_module_first():
    under = f"{ROOT}/llvm/14.0.6"
    names = {"b" * 32: {**_module("mpich/4.0.2-bbbbbbb", under),
                        "compiler": _module("llvm/14.0.6", f"{ROOT}/Core")},
             "o" * 32: _module("osu-micro-benchmarks/7.4", f"{under}/mpich/4.0.2-bbbbbbb"),
             "i" * 32: _module("intel-mpi-benchmarks/2021.7", f"{under}/mpich/4.0.2-bbbbbbb")}
    tree = module_tree([_build("mpich-4.0.2-ch3-llvm14", "b" * 32, "o" * 32, "i" * 32)], names)
    [entry] = tree.entries
    assert entry["needs"] == ["llvm/14.0.6"]
    assert tree.module_paths == [f"{ROOT}/Core"]


def test_a_missing_module_or_install_leaves_the_build_out_saying_why():
    names = {"a" * 32: _module("mpich/4.0.2-aaaaaaa", f"{ROOT}/Core"),
             "o" * 32: {"error": "The module for package osu-micro-benchmarks@7.4/ooooooo "
                                 "should be at /x.lua, but it does not exist"},
             "i" * 32: _module("intel-mpi-benchmarks/2021.7", f"{ROOT}/Core")}
    builds = [_build("no-osu-module", "a" * 32, "o" * 32, "i" * 32),
              _build("not-installed", "c" * 32, "o" * 32, "i" * 32,
                     unusable="not installed (`spack install /ccccccc`)")]
    tree = module_tree(builds, names)
    assert tree.entries == []
    why = {s.name: s.reason for s in tree.skipped}
    assert "osu-micro-benchmarks@7.4/ooooooo should be at" in why["no-osu-module"]
    assert f"(write them: `{REFRESH}`)" in why["no-osu-module"]
    assert why["not-installed"] == "not installed (`spack install /ccccccc`)"
