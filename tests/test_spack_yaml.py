"""Structure of spack.yaml, the site overlays and the packages/ repository (no Spack needed)."""

from __future__ import annotations

import re

import pytest
import yaml

from mpimatrix.builds.spack import site_overlay
from mpimatrix.builds.spack import tool as spack_tool
from mpimatrix.paths import project_root

ROOT = project_root()
SPACK_YAML = ROOT / "spack.yaml"


@pytest.fixture(scope="module")
def env() -> dict:
    return yaml.safe_load(SPACK_YAML.read_text())["spack"]


def _definitions(env: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for d in env["definitions"]:
        for k, v in d.items():
            if k != "when":
                out.setdefault(k, []).extend(v)
    return out


def _package(spec: str) -> str:
    return re.split(r"[@\s+~%^]", spec.strip(), maxsplit=1)[0]


def test_unify_false_and_no_view(env):
    assert env["concretizer"]["unify"] is False
    # off: it returned a changed recipe's old hash (test_spack_concretize)
    assert env["concretizer"]["concretization_cache"]["enable"] is False
    assert env["view"] is False


def test_every_mpi_family(env):
    names = {_package(s) for s in _definitions(env)["mpis"]}
    assert {"openmpi", "mpich", "intel-oneapi-mpi"} <= names
    assert names & {"mvapich2", "mvapich"}


def test_two_compilers_at_least(env):
    compilers = _definitions(env)["compilers"]
    assert len(compilers) >= 2
    names = {re.search(r"=\s*([\w-]+)", c).group(1) for c in compilers}
    assert {"gcc", "llvm"} <= names
    # The compiler entries carry their own %% (propagated to the MPI): a `$%` reference
    # would give `%%%`.
    assert all(c.startswith("%%") for c in compilers)
    assert "$%compilers" not in SPACK_YAML.read_text()


@pytest.mark.parametrize("family,variant", [("openmpi", "fabrics"), ("mpich", "netmod")])
def test_two_fabric_variants(env, family, variant):
    values = {m.group(1) for s in _definitions(env)["mpis"] if _package(s) == family
              for m in [re.search(rf"\b{variant}=(\S+)", s)] if m}
    assert len(values) >= 2, values


def test_openmpi_schedulers_explicit(env):
    # `schedulers=auto` (the default) conflicts with the external PMIx of Open MPI 5.
    for s in _definitions(env)["mpis"]:
        if _package(s) == "openmpi":
            assert "schedulers=" in s and "schedulers=auto" not in s, s


def test_seed_002_combinations(env):
    mpis = _definitions(env)["mpis"]
    assert any(s.startswith("openmpi@4.1") and "schedulers=slurm" in s and "+pmi" in s
               and "+legacylaunchers" in s for s in mpis)
    assert any(s.startswith("mpich") and "device=ch3" in s and "netmod=tcp" in s
               for s in mpis)


def test_every_suite_on_each_mpi_in_one_root(env):
    """One root per MPI x fabric x compiler: the project's bundle package depends on
    the suites, so each MPI build is concretized once, with OSU and IMB (and NPB where
    the MPI has Fortran bindings: the site's) on it."""
    assert _definitions(env)["benchmarks"] == ["mpimatrix-benchmarks"]
    assert _definitions(env)["benchmarks_npb"] == ["mpimatrix-benchmarks+npb"]
    matrices = [m["matrix"] for m in env["specs"] if isinstance(m, dict)]
    assert [["$benchmarks"], ["$^mpis"], ["$compilers"]] in matrices
    assert [["$benchmarks_npb"], ["$^site_mpis"], ["$compilers"]] in matrices
    # the built MPIs have no Fortran bindings, which NPB's Fortran kernels need
    assert all("~fortran" in m for m in _definitions(env)["mpis"]
               if m.startswith(("openmpi", "mpich")))
    bundle = (ROOT / "packages/spack_repo/mpimatrix/packages/mpimatrix_benchmarks/package.py"
              ).read_text()
    assert "class MpimatrixBenchmarks(BundlePackage)" in bundle
    for dep in ('depends_on("mpi")', 'depends_on("osu-micro-benchmarks", when="+osu")',
                'depends_on("intel-mpi-benchmarks+mpi1+p2p+nbc+rma+ext+io~mt", when="+imb")',
                'depends_on("npb implementation=mpi", when="+npb")',
                'depends_on("c", type="build")', 'depends_on("cxx", type="build")'):
        assert dep in bundle


def test_every_exclude_has_a_comment_naming_the_conflict(env):
    lines = SPACK_YAML.read_text().splitlines()
    excludes = [e for m in env["specs"] if isinstance(m, dict) for e in m.get("exclude", [])]
    assert excludes
    for ex in excludes:
        idx = next(i for i, line in enumerate(lines)
                   if line.strip().startswith("- ") and ex in line)
        comment = []
        j = idx - 1
        while j >= 0 and lines[j].strip().startswith("#"):
            comment.append(lines[j])
            j -= 1
        assert comment, f"exclude {ex!r} has no comment above it"
        assert re.search(r"conflict", " ".join(comment), re.I), comment


def test_repos_pinned_and_project_repo_first(env):
    repos = env["repos"]
    assert next(iter(repos)) == "mpimatrix"
    assert repos["builtin"]["commit"] == spack_tool.PACKAGES_COMMIT
    assert "spack/spack-packages" in repos["builtin"]["git"]
    assert spack_tool.PACKAGES_COMMIT in SPACK_YAML.read_text()


def test_site_overlay_chosen_by_environment_variable(env):
    paths = [i["path"] if isinstance(i, dict) else i for i in env["include"]]
    assert any(spack_tool.SITE_ENV in p for p in paths)


def test_lmod_hierarchy_per_mpi(env):
    lmod = env["modules"]["default"]["lmod"]
    assert lmod["hierarchy"] == ["mpi"]
    # Several builds of one MPI version per compiler must not share a module name.
    for mpi in ("openmpi", "mpich", "mvapich2", "mvapich", "intel-oneapi-mpi"):
        assert "{hash" in lmod["projections"][mpi]


def test_sites():
    sites = site_overlay.list_sites()
    assert "debian-local" in sites
    assert any(s != "debian-local" for s in sites), "a template for a real cluster"
    for site in sites:
        d = site_overlay.overlay_dir(site)
        for f in d.glob("*.yaml"):
            yaml.safe_load(f.read_text())  # valid YAML, also when all commented


def test_debian_local_overlay():
    d = site_overlay.overlay_dir("debian-local")
    packages = yaml.safe_load((d / "packages.yaml").read_text())["packages"]
    assert packages["gcc"]["buildable"] is False and packages["llvm"]["buildable"] is False
    # The MPIs are not made non-buildable (the matrix builds them from source beside the
    # Debian externals); their requirements here apply to the kit's sources only.
    for mpi in ("openmpi", "mpich"):
        assert "buildable" not in packages[mpi] and "externals" not in packages[mpi]
        assert all(r["when"].startswith("@") for r in packages[mpi]["require"])
    assert packages["mpich"]["require"][0]["when"].startswith("@=4.0.2-kit ")
    shims = yaml.safe_load((d / "shims.yaml").read_text())["shims"]
    specs = {s["spec"].split("~")[0].split("+")[0] for s in shims.values()}
    assert {"openmpi@4.1.4", "mpich@4.0.2"} <= specs
    defs = yaml.safe_load((d / "definitions.yaml").read_text())["definitions"]
    # exactly the Debian releases: never the kit's source trees of the same releases
    assert {"openmpi@=4.1.4", "mpich@=4.0.2"} <= set(defs[0]["site_mpis"])
    inc = yaml.safe_load((d / "include.yaml").read_text())["include"]
    assert (d / inc[0]["path"]).resolve() == (ROOT / ".cache" / "spack" / "debian-local")
    repos = yaml.safe_load((d / "repos.yaml").read_text())["repos"]
    assert "destination" in repos["builtin"]


def test_packages_repo_layout():
    repo = ROOT / "packages" / "spack_repo" / "mpimatrix"
    meta = yaml.safe_load((repo / "repo.yaml").read_text())["repo"]
    assert meta == {"namespace": "mpimatrix", "api": "v2.2"}
    for pkg in (repo / "packages").glob("*/package.py"):
        text = pkg.read_text()
        assert "Verified" in text or "verified" in text, f"{pkg}: say how the fix was verified"
        assert re.fullmatch(r"[a-z0-9_]+", pkg.parent.name)


NOT_BUILT = ROOT / "site_config" / "spack-matrix" / "packages.yaml"


def _lock_package_names() -> set[str]:
    names: set[str] = set()
    for lock in (ROOT / "tests" / "fixtures" / "spack").glob("*.spack.lock"):
        data = yaml.safe_load(lock.read_text())  # JSON is YAML
        names |= {s["name"] for s in data["concrete_specs"].values()}
    return names


def test_not_built_list_spares_what_the_matrix_builds(env):
    """The list only forbids building: nothing a committed lock contains, no matrix
    family or benchmark. A site overlay that names a listed package gives it as an
    external (usable: static analysis keeps externals) or re-allows building it."""
    packages = yaml.safe_load(NOT_BUILT.read_text())["packages"]
    assert len(packages) > 20
    for name, conf in packages.items():
        assert conf == {"buildable": False}, (name, conf)
    in_locks = _lock_package_names()
    assert {"openmpi", "mpich", "osu-micro-benchmarks", "gcc"} <= in_locks  # fixtures read
    assert not set(packages) & in_locks
    defs = _definitions(env)
    matrix = {_package(s) for key in ("benchmarks", "mpis") for s in defs[key]}
    assert not set(packages) & (matrix | {"mvapich", "mvapich2", "intel-oneapi-mpi"})
    for site in site_overlay.list_sites():
        f = site_overlay.overlay_dir(site) / "packages.yaml"
        site_pkgs = (yaml.safe_load(f.read_text()) or {}).get("packages") or {}
        for name in set(packages) & set(site_pkgs):
            conf = site_pkgs[name] or {}
            assert conf.get("externals") or conf.get("buildable") is True, (site, name)


def test_not_built_list_has_the_lowest_precedence(env):
    """Included last (Spack: earlier includes win), so a site overlay can re-allow."""
    paths = [i["path"] if isinstance(i, dict) else i for i in env["include"]]
    assert paths[-1] == "site_config/spack-matrix"
    assert paths.index("site_config/spack-matrix") > next(
        i for i, p in enumerate(paths) if spack_tool.SITE_ENV in p)
