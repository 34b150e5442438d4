"""Spack itself: where it is, whether it is the pinned release, getting it.

The pins (Spack release, builtin package repository commit) are the ones this
project was verified with; spack.yaml repeats the package-repository pin.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from ...paths import project_root

SPACK_VERSION = "1.1.0"
SPACK_COMMIT = "2e907202bcc8209a6a62243aab50c179b524cc3b"
SPACK_GIT = "https://github.com/spack/spack"
PACKAGES_TAG = "v2025.11.0"
PACKAGES_COMMIT = "119680aeee8ea802c6111b7167583bddef97e82f"
PACKAGES_GIT = "https://github.com/spack/spack-packages"

SITE_ENV = "MPIMATRIX_SPACK_SITE"


# -- locating Spack ----------------------------------------------------------------------
def find_spack() -> str | None:
    """The spack executable: $SPACK_ROOT/bin/spack, else `spack` on PATH."""
    root = os.environ.get("SPACK_ROOT")
    if root:
        exe = Path(root) / "bin" / "spack"
        if os.access(exe, os.X_OK):
            return str(exe)
    return shutil.which("spack")


def spack_version(exe: str) -> tuple[str, str]:
    """(version, commit) from `spack --version`, e.g. ('1.1.0', '2e90...')."""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True,
                             timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "", ""
    m = re.match(r"\s*(\S+)(?:\s+\((\w+)\))?", out)
    return (m.group(1), m.group(2) or "") if m else ("", "")


def pinned_clones(spack_dest: str, packages_dest: str) -> list[list[str]]:
    """The `git clone` commands of the pinned Spack release and builtin packages
    (MPIMATRIX_SPACK_GIT / MPIMATRIX_PACKAGES_GIT replace the upstream URLs)."""
    spack_git = os.environ.get("MPIMATRIX_SPACK_GIT", f"{SPACK_GIT}.git")
    packages_git = os.environ.get("MPIMATRIX_PACKAGES_GIT", f"{PACKAGES_GIT}.git")
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


def clone_pinned(dest: Path) -> None:
    """Clone the pinned Spack release and builtin packages side by side
    (dest, dest/../spack-packages, where debian-local looks)."""
    for cmd in pinned_clones(str(dest), str(dest.parent / "spack-packages")):
        if Path(cmd[-1]).exists():
            continue
        proc = subprocess.run([*cmd[:2], "--quiet", *cmd[2:]], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"mpimatrix: `{' '.join(cmd)}` failed: "
                             f"{proc.stderr.strip()[-400:]}\nOffline: see docs/spack.md, "
                             "\"Offline sites\" (copy both repositories at the pins).")


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
