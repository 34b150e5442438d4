"""Spack itself: where it is, whether it is the pinned release, getting it.

The pins (Spack release, builtin package repository commit) are the ones this
project was verified with; spack.yaml repeats the package-repository pin.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from ...paths import project_root, user_cache_dir

SPACK_VERSION = "1.1.0"
SPACK_COMMIT = "2e907202bcc8209a6a62243aab50c179b524cc3b"
SPACK_GIT = "https://github.com/spack/spack"
PACKAGES_TAG = "v2025.11.0"
PACKAGES_COMMIT = "119680aeee8ea802c6111b7167583bddef97e82f"
PACKAGES_GIT = "https://github.com/spack/spack-packages"

SITE_ENV = "MPIMATRIX_SPACK_SITE"
# Spack 1.1 solves with clingo; Spack's bootstrap downloads it, which offline sites
# cannot: a Python of its own with this clingo from PyPI (SPACK_PYTHON) instead.
CLINGO_VERSION = "5.8.3"


def default_spack_dir() -> Path:
    """Where `mpimatrix spack get` puts Spack (the builtin packages beside it, the
    Python with clingo at ../python): outside any checkout, so its installs are reused."""
    return user_cache_dir() / "spack" / "spack"


def spack_python_dir(spack_dir: Path) -> Path:
    return spack_dir.parent / "python"


# -- locating Spack ----------------------------------------------------------------------
def find_spack() -> str | None:
    """The spack executable: $SPACK_ROOT/bin/spack, else `spack` on PATH, else the one
    `mpimatrix spack get` put in the user cache. If the Python with clingo that `get`
    makes is beside it and SPACK_PYTHON is unset, SPACK_PYTHON is set to it in this
    process, so every Spack run from here (ReFrame's jobs run `spack load`) solves."""
    candidates = [Path(os.environ["SPACK_ROOT"]) / "bin" / "spack"] \
        if os.environ.get("SPACK_ROOT") else []
    on_path = shutil.which("spack")
    candidates += [Path(on_path)] if on_path else []
    candidates.append(default_spack_dir() / "bin" / "spack")
    for exe in candidates:
        if os.access(exe, os.X_OK) and exe.is_file():
            python = spack_python_dir(exe.resolve().parents[1]) / "bin" / "python"
            if python.exists():
                os.environ.setdefault("SPACK_PYTHON", str(python))
            return str(exe)
    return None


def spack_version(exe: str) -> tuple[str, str]:
    """(version, commit) from `spack --version`, e.g. ('1.1.0', '2e90...')."""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True,
                             timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "", ""
    m = re.match(r"\s*(\S+)(?:\s+\((\w+)\))?", out)
    return (m.group(1), m.group(2) or "") if m else ("", "")


def pinned_clones(spack_dest: str, packages_dest: str,
                  sources: tuple[str, str] | None = None) -> list[list[str]]:
    """The `git clone` commands of the pinned Spack release and builtin packages, from
    `sources` (Spack's and the packages' git repositories, e.g. a kit's) if given, else
    upstream (MPIMATRIX_SPACK_GIT / MPIMATRIX_PACKAGES_GIT replace the upstream URLs)."""
    spack_git, packages_git = sources or (
        os.environ.get("MPIMATRIX_SPACK_GIT", f"{SPACK_GIT}.git"),
        os.environ.get("MPIMATRIX_PACKAGES_GIT", f"{PACKAGES_GIT}.git"))
    return [["git", "clone", "--depth=2", "--branch", f"v{SPACK_VERSION}", spack_git,
             spack_dest],
            ["git", "clone", "--depth=2", "--branch", PACKAGES_TAG, packages_git,
             packages_dest]]


def get_spack_instructions(dest: str = "$HOME/spack") -> str:
    clones = pinned_clones(dest, f"{dest}/../spack-packages")
    return "\n".join([*(" ".join(c) for c in clones),
                      f". {dest}/share/spack/setup-env.sh     # or: export SPACK_ROOT={dest}"])


def pin_report(exe: str) -> tuple[list[str], bool]:
    """Lines describing a Spack install against the pins, and whether it matches them."""
    version, commit = spack_version(exe)
    lines = [f"spack: {exe}", f"version: {version or '?'} ({commit or 'no commit'})"]
    ok = True
    if not version.startswith("1."):
        lines.append(f"  WARNING: this project needs Spack 1.x (verified: {SPACK_VERSION})")
        ok = False
    elif version != SPACK_VERSION:
        lines.append(f"  note: verified with {SPACK_VERSION}; {version} may concretize "
                     "differently")
    packages = Path(exe).resolve().parents[1].parent / "spack-packages"
    head = git_head(packages)
    if head:
        pinned = head == PACKAGES_COMMIT
        lines.append(f"builtin checkout: {packages} at {head[:12]}" + (
            "" if pinned else f"  WARNING: pinned {PACKAGES_COMMIT[:12]} ({PACKAGES_TAG}); "
            f"run: git -C {packages} fetch --depth=1 origin {PACKAGES_TAG} && "
            f"git -C {packages} checkout {PACKAGES_COMMIT}"))
        ok = ok and pinned
    else:
        lines.append(f"builtin checkout: none at {packages} (Spack clones the pinned commit "
                     "itself when online; offline sites: docs/spack.md)")
    site = os.environ.get(SITE_ENV)
    lines.append(f"{SITE_ENV}: {site or '(unset: set it before `spack env activate .`)'}")
    if os.environ.get("SPACK_PYTHON"):
        lines.append(f"SPACK_PYTHON: {os.environ['SPACK_PYTHON']}")
    return lines, ok


def clone_pinned(dest: Path, kit: Path | None = None) -> None:
    """Clone the pinned Spack release and builtin packages side by side
    (dest, dest/../spack-packages, where debian-local looks), from the offline kit's
    git repositories if `kit` is given."""
    sources = None
    if kit is not None:
        # file://: git's local-clone shortcut hard-links objects/ and fails on a linked one
        sources = tuple(kit_git_repo(kit / "git" / f"{name}.git", dest.parent / "kit-git")
                        .as_uri() for name in ("spack", "spack-packages"))
    for cmd in pinned_clones(str(dest), str(dest.parent / "spack-packages"), sources):
        if Path(cmd[-1]).exists():
            continue
        proc = subprocess.run([*cmd[:2], "--quiet", "-c", "advice.detachedHead=false",
                               *cmd[2:]], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"mpimatrix: `{' '.join(cmd)}` failed: "
                             f"{proc.stderr.strip()[-400:]}\nOffline: see docs/spack.md, "
                             "\"Offline sites\" (copy both repositories at the pins).")


def kit_git_repo(repo: Path, views: Path) -> Path:
    """A bare repository git accepts, for one of the kit's.

    The kit's bare repositories have no refs/ directory (their refs are all in
    packed-refs), and git takes a directory without refs/ for no repository at
    all ("does not appear to be a git repository"). The kit is read-only, so this
    makes a view beside the clones: an empty refs/, HEAD copied (git refuses a
    symlinked HEAD), everything else linked to the kit.
    """
    if not (repo / "objects").is_dir():
        raise SystemExit(f"mpimatrix: {repo} is no git repository of the offline kit "
                         "(expected objects/ and packed-refs in it); give the kit's "
                         "top folder, the one with git/ and sources/")
    if (repo / "refs").is_dir():
        return repo
    view = views / repo.name
    (view / "refs").mkdir(parents=True, exist_ok=True)
    for entry in repo.iterdir():
        link = view / entry.name
        if entry.name == "HEAD":
            shutil.copyfile(entry, link)
        elif not link.exists() and not link.is_symlink():
            link.symlink_to(entry)
    return view


def ensure_spack_python(spack_dir: Path, wheels: Path | None = None) -> Path:
    """The Python for Spack (a venv with clingo beside Spack); made once. Clingo comes from
    `wheels` (an offline kit's wheels/: no index) when that folder holds it, else PyPI."""
    venv = spack_python_dir(spack_dir)
    python = venv / "bin" / "python"
    probe = [str(python), "-c", f"import clingo; assert clingo.__version__ == '{CLINGO_VERSION}'"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    for cmd in ([sys.executable, "-m", "venv", str(venv)],
                [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                 *offline_wheels(wheels), f"clingo=={CLINGO_VERSION}"]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"mpimatrix: `{' '.join(cmd)}` failed: "
                             f"{proc.stderr.strip()[-400:]}\nSpack needs a Python with "
                             f"clingo ({CLINGO_VERSION} verified): set SPACK_PYTHON to one.")
    return python


def offline_wheels(wheels: Path | None) -> list[str]:
    """pip's options to install clingo from a kit's wheels/ alone ([] without one)."""
    if wheels is None or not any(wheels.glob(f"clingo-{CLINGO_VERSION}-*.whl")):
        return []
    return ["--no-index", "--find-links", str(wheels)]


def git_head(path: Path) -> str:
    if not (path / ".git").exists():
        return ""
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


# -- environment copies --------------------------------------------------------------------
def env_copy(dest: Path, specs: list[str] | None = None, root: Path | None = None) -> Path:
    """A Spack environment directory with the project's spack.yaml (its specs
    replaced by `specs` if given), links to packages/ and site_config/, and a
    .cache/spack of its own: links to the project's machine-local parts (site shims,
    mirror) and an activation of its own (MPIMATRIX_LOCK=<dest>/spack.lock), so that
    `spack -e dest concretize` writes its lock there, not in the project."""
    from .activation import ACTIVATE_DIR, write_activation

    root = root or project_root()
    dest.mkdir(parents=True, exist_ok=True)
    manifest = yaml.safe_load((root / "spack.yaml").read_text())
    if specs is not None:
        manifest["spack"]["specs"] = list(specs)
    (dest / "spack.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    for d in ("packages", "site_config"):
        link = dest / d
        if not link.exists():
            link.symlink_to(root / d)
    cache = dest / ACTIVATE_DIR.parent
    cache.mkdir(parents=True, exist_ok=True)
    project_cache = root / ACTIVATE_DIR.parent
    if project_cache.is_dir():
        for entry in project_cache.iterdir():
            link = cache / entry.name
            if entry.name != ACTIVATE_DIR.name and not link.exists():
                link.symlink_to(entry)
    write_activation(dest, root)
    return dest
