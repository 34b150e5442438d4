"""Concretize (a subset of) spack.yaml for real with the debian-local overlay.

Needs Spack 1.x ($SPACK_ROOT/bin/spack or `spack` on PATH) with a working
concretizer (clingo: SPACK_PYTHON pointing at a Python with `clingo`, or
Spack's own bootstrap), the builtin packages reachable (debian-local expects a
checkout at $spack/../spack-packages), and the Debian MPIs. Skipped otherwise,
saying which of these is missing.

The whole matrix takes about 3 minutes cold on 2 cores (docs/history.md),
too long for a test: this test keeps spack.yaml and its overlay as they are and
replaces only the specs by a subset that still goes through every mechanism: the
site overlay chosen by MPIMATRIX_SPACK_SITE, the Debian externals from the
generated shims, a source-built MPI (MVAPICH 4 with a netmod) and the `%%`
toolchain, and both benchmarks through the project's bundle package. Set
MPIMATRIX_SPACK_FULL=1 to concretize the whole matrix instead. Concretizing runs no
compiler: clang need not be installed (the llvm external only names it).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from mpimatrix.builds.spack import site_overlay
from mpimatrix.builds.spack import tool as spack_tool
from mpimatrix.builds.spack.lock_builds import builds_from_lock
from mpimatrix.builds.spack.lockfile import read_lock
from mpimatrix.paths import project_root

pytestmark = pytest.mark.spack

ROOT = project_root()
# `%%c,cxx=...` before `^`: written after `^openmpi@4.1.4` it binds to openmpi (its own
# compiler), which an external, having none, cannot satisfy: Open MPI gets built.
SUBSET = [
    "mpimatrix-benchmarks %%c,cxx=gcc ^openmpi@=4.1.4",  # the Debian external (site_mpis)
    "mpimatrix-benchmarks %%c,cxx=llvm ^mpich@=4.0.2",
    "mpimatrix-benchmarks %%c,cxx=gcc ^mvapich@4 netmod=ucx",
]


def _skip(msg: str):
    """Skip saying why; with MPIMATRIX_REQUIRE_SPACK set (CI with the offline kit), fail."""
    if os.environ.get("MPIMATRIX_REQUIRE_SPACK"):
        pytest.fail(msg + " (MPIMATRIX_REQUIRE_SPACK is set)")
    pytest.skip(msg)


def spack_requirements(need: tuple[str, ...] = ("/usr/bin/mpicc.openmpi",
                                                "/usr/bin/mpicc.mpich")) -> str:
    """The spack executable, or skip saying what is missing (also used by the other
    Spack tests)."""
    spack = spack_tool.find_spack()
    if spack is None:
        _skip("Spack not found: set SPACK_ROOT or put `spack` on PATH "
                    "(`mpimatrix spack locate` says how to get the pinned release)")
    version, _ = spack_tool.spack_version(spack)
    if not version.startswith("1."):
        _skip(f"{spack} is Spack {version or '?'}; spack.yaml needs Spack 1.x")
    site = os.environ.get(spack_tool.SITE_ENV, "debian-local")
    if site != "debian-local":
        _skip(f"{spack_tool.SITE_ENV}={site}: this test concretizes with debian-local")
    for exe in need:
        if not os.path.exists(exe):
            _skip(f"debian-local needs the Debian MPIs ({exe} missing): apt install "
                        "openmpi-bin libopenmpi-dev mpich libmpich-dev")
    packages = Path(spack).resolve().parents[1].parent / "spack-packages"
    if not (packages / "repos" / "spack_repo" / "builtin").is_dir():
        _skip(f"debian-local reads the builtin packages from {packages} (a checkout "
                    f"of spack-packages {spack_tool.PACKAGES_TAG}); none there")
    return spack


def test_concretize_with_debian_local(tmp_path):
    spack = spack_requirements()
    if not (ROOT / ".cache" / "spack" / "debian-local" / "packages.yaml").is_file():
        site_overlay.write_shims("debian-local")
    full = os.environ.get("MPIMATRIX_SPACK_FULL") == "1"
    env_dir = spack_tool.env_copy(tmp_path / "env", None if full else SUBSET)
    env = dict(os.environ, MPIMATRIX_SPACK_SITE="debian-local")
    t0 = time.monotonic()
    proc = subprocess.run([spack, "-e", str(env_dir), "concretize"], env=env,
                          capture_output=True, text=True, timeout=6 * 3600)
    elapsed = time.monotonic() - t0
    print(f"concretization of {'the whole matrix' if full else len(SUBSET)} roots: "
          f"{elapsed:.0f} s (load average {os.getloadavg()})")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    lock = read_lock(env_dir / "spack.lock")
    assert lock.version == 6
    if not full:
        assert len(lock.roots) == len(SUBSET)
    # the bundle: one root per MPI build, OSU and IMB on that MPI node
    benches = {n.hash: str(tmp_path / n.hash) for n in lock.nodes.values()
               if n.name in ("osu-micro-benchmarks", "intel-mpi-benchmarks")}
    assert all(r["spec"].startswith("mpimatrix-benchmarks") for r in lock.roots)
    builds, _sha = builds_from_lock(env_dir / "spack.lock", spack=False, prefixes=benches)
    names = {b.name for b in builds}
    assert {"openmpi-4.1.4-ext-gcc12", "mpich-4.0.2-ext-llvm14"} <= names, names
    if not full:
        assert len(builds) == len(SUBSET)
    for b in builds:
        assert set(b.benchmarks) == {"osu", "imb"}, (b.name, b.notes)
    # MVAPICH 4 launches with its own Hydra (PMI-1), whichever the netmod and compiler
    mv = [b for b in builds if b.family == "mvapich"]
    assert any(b.name.endswith("-ucx-gcc12") for b in mv), names
    assert all(b.pmi == "pmi1" for b in mv), [(b.name, b.pmi) for b in mv]
    ext = next(b for b in builds if b.name == "openmpi-4.1.4-ext-gcc12")
    assert ext.prefix.endswith(".cache/spack/shims/openmpi-4.1.4-debian")


def test_concretize_needs_a_site(tmp_path):
    """Without MPIMATRIX_SPACK_SITE, Spack refuses the environment and names the path."""
    spack = spack_requirements()
    env_dir = tmp_path / "env"
    env_dir.mkdir()
    (env_dir / "spack.yaml").write_text((ROOT / "spack.yaml").read_text())
    for d in ("packages", "site_config"):
        (env_dir / d).symlink_to(ROOT / d)
    env = {k: v for k, v in os.environ.items() if k != spack_tool.SITE_ENV}
    proc = subprocess.run([spack, "-e", str(env_dir), "config", "get", "repos"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert spack_tool.SITE_ENV in proc.stderr + proc.stdout


POSSIBLE = """
import spack.deptypes as dt, spack.solver.input_analysis as ia, spack.spec
g = ia.create_graph_analyzer().possible_dependencies(
    spack.spec.Spec("mpimatrix-benchmarks"), allowed_deps=dt.LINK | dt.RUN | dt.BUILD)
print(" ".join(sorted(g.real_pkgs)))
"""


def test_not_built_list_prunes_the_possible_dependencies(tmp_path):
    """site_config/spack-matrix takes most of what the solver would ground out of a
    root's possible dependencies, and none of the matrix's own packages."""
    spack = spack_requirements()
    if not (ROOT / ".cache" / "spack" / "debian-local" / "packages.yaml").is_file():
        site_overlay.write_shims("debian-local")
    env = dict(os.environ, MPIMATRIX_SPACK_SITE="debian-local")
    script = tmp_path / "possible.py"
    script.write_text(POSSIBLE)
    possible = {}
    for label in ("with", "without"):
        env_dir = spack_tool.env_copy(tmp_path / label, SUBSET)
        if label == "without":
            manifest = env_dir / "spack.yaml"
            data = yaml.safe_load(manifest.read_text())
            data["spack"]["include"] = [i for i in data["spack"]["include"]
                                        if i.get("path") != "site_config/spack-matrix"]
            manifest.write_text(yaml.safe_dump(data, sort_keys=False))
        proc = subprocess.run([spack, "-e", str(env_dir), "python", str(script)], env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        possible[label] = set(proc.stdout.split())
    print({k: len(v) for k, v in possible.items()})
    assert possible["with"] < possible["without"]
    assert len(possible["with"]) * 2 < len(possible["without"])
    assert {"openmpi", "mpich", "mvapich", "mvapich2", "intel-oneapi-mpi", "ucx",
            "libfabric", "pmix", "prrte", "osu-micro-benchmarks",
            "intel-mpi-benchmarks"} <= possible["with"]
    assert not {"cuda", "papi", "qt", "py-sphinx"} & possible["with"]


def test_a_changed_recipe_of_packages_gets_a_new_hash_at_the_next_concretize(tmp_path):
    """Edit a recipe of packages/ (a statement in intel-mpi-benchmarks' build), concretize
    again: IMB's hash changes and nothing else's, so `spack install` builds the changed
    recipe. With Spack 1.1's concretization cache on, the second concretize returned the
    first solution, the old recipe's hash with it (seen here), and nothing was rebuilt:
    spack.yaml turns the cache off."""
    import shutil

    spack = spack_requirements()
    if not (ROOT / ".cache" / "spack" / "debian-local" / "packages.yaml").is_file():
        site_overlay.write_shims("debian-local")
    project = tmp_path / "project"  # spack.yaml and a copy of packages/ to edit
    project.mkdir()
    shutil.copy2(ROOT / "spack.yaml", project / "spack.yaml")
    shutil.copytree(ROOT / "packages", project / "packages",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (project / "site_config").symlink_to(ROOT / "site_config")
    (project / ".cache").mkdir()
    (project / ".cache" / "spack").symlink_to(ROOT / ".cache" / "spack")
    env_dir = spack_tool.env_copy(tmp_path / "env", [SUBSET[0]], root=project)
    env = dict(os.environ, MPIMATRIX_SPACK_SITE="debian-local")

    def hashes() -> dict[str, str]:
        proc = subprocess.run([spack, "-e", str(env_dir), "concretize", "--fresh", "--force"],
                              env=env, capture_output=True, text=True, timeout=1800)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return {n.name: n.hash for n in read_lock(env_dir / "spack.lock").nodes.values()}

    before = hashes()
    recipe = project / "packages/spack_repo/mpimatrix/packages/intel_mpi_benchmarks/package.py"
    text = recipe.read_text()
    anchor = '                make("-C", folder, "-f", "Makefile", f"TARGET={suite}", *extra)\n'
    assert anchor in text, "the edit's anchor is gone from the recipe: update this test"
    recipe.write_text(text.replace(anchor, anchor.replace("*extra)", "*extra, 'V=1')")))
    after = hashes()
    changed = sorted(n for n in before if before[n] != after.get(n))
    # the bundle root depends on IMB, so its hash follows
    assert changed == ["intel-mpi-benchmarks", "mpimatrix-benchmarks"], (before, after)
