"""Spack site overlays (site_config/spack/<site>/): machine-local externals
made of symbolic links ("shims"), and a file:// source mirror.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import sys
from pathlib import Path

import yaml

from ...paths import project_root


# -- shims -------------------------------------------------------------------------------------
def overlay_dir(site: str, root: Path | None = None) -> Path:
    return (root or project_root()) / "site_config" / "spack" / site


def generated_dir(root: Path | None = None) -> Path:
    """Where machine-local Spack files go: <project>/.cache/spack (git-ignored).

    Fixed relative to the project (not MPIMATRIX_CACHE) because the overlays'
    include.yaml refers to it by a path relative to themselves.
    """
    return (root or project_root()) / ".cache" / "spack"


class ShimError(Exception):
    pass


def _spec_version(spec: str) -> str:
    """'openmpi@4.1.4~cuda+pmi fabrics=...' -> '4.1.4' ('' without a version)."""
    head = spec.split()[0] if spec.split() else ""
    version = head.partition("@")[2].lstrip("=")
    return re.split(r"[~+%^ ]", version, maxsplit=1)[0]


def external_releases(site: str, root: Path | None = None) -> dict[str, tuple[str, ...]]:
    """The versions a site provides as externals, per package: its shims (shims.yaml)
    and the `externals` of its packages.yaml."""
    out: dict[str, set[str]] = {}
    here = overlay_dir(site, root)
    for name in ("shims.yaml", "packages.yaml"):
        try:
            data = yaml.safe_load((here / name).read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        if name == "shims.yaml":
            pairs = [(sh.get("package", ""), sh.get("spec", ""))
                     for sh in (data.get("shims") or {}).values() if isinstance(sh, dict)]
        else:
            pairs = [(pkg, ext.get("spec", ""))
                     for pkg, conf in (data.get("packages") or {}).items()
                     if isinstance(conf, dict)
                     for ext in conf.get("externals") or [] if isinstance(ext, dict)]
        for pkg, spec in pairs:
            version = _spec_version(str(spec))
            if pkg and version:
                out.setdefault(pkg, set()).add(version)
    return {pkg: tuple(sorted(vs)) for pkg, vs in out.items()}


def _expand_links(links: dict[str, str]) -> list[tuple[str, str]]:
    """Turn {dest: target} with `*` patterns into concrete (dest, target) pairs."""
    out = []
    for dest, target in links.items():
        if "*" not in target:
            out.append((dest, target))
            continue
        if dest.count("*") != 1 or target.count("*") != 1:
            raise ShimError(f"link {dest}: {target}: use exactly one `*` on each side")
        pre, post = target.split("*")
        dpre, dpost = dest.split("*")
        for match in sorted(glob.glob(target)):
            stem = match[len(pre): len(match) - len(post) if post else None]
            out.append((f"{dpre}{stem}{dpost}", match))
    return out


def make_shim(prefix: Path, links: dict[str, str]) -> list[str]:
    """(Re)create a prefix of symlinks; returns the links that point nowhere."""
    if prefix.exists():
        shutil.rmtree(prefix)
    prefix.mkdir(parents=True)
    dangling = []
    for dest, target in _expand_links(links):
        path = prefix / dest
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)
        if not os.path.exists(target):
            dangling.append(f"{dest} -> {target}")
    return dangling


def write_shims(site: str, root: Path | None = None, out=sys.stdout) -> tuple[Path, list[str]]:
    """Build the shim prefixes of a site and its generated packages.yaml.

    Returns the generated scope directory and the shims skipped (with why).
    """
    spec_file = overlay_dir(site, root) / "shims.yaml"
    if not spec_file.is_file():
        raise ShimError(f"{spec_file}: no such file; site {site!r} declares no shims "
                        f"(sites: {', '.join(list_sites(root)) or 'none'})")
    data = yaml.safe_load(spec_file.read_text()) or {}
    gen = generated_dir(root)
    scope = gen / site
    scope.mkdir(parents=True, exist_ok=True)
    packages: dict[str, dict] = {}
    skipped = []
    for name, shim in (data.get("shims") or {}).items():
        missing = [p for p in shim.get("requires", []) if not os.path.exists(p)]
        if missing:
            skipped.append(f"{name}: {', '.join(missing)} missing (MPI not installed?)")
            continue
        prefix = gen / "shims" / name
        dangling = make_shim(prefix, shim.get("links") or {})
        for d in dangling:
            print(f"  warning: {name}: dangling link {d}", file=out)
        ext = packages.setdefault(shim["package"], {"externals": []})
        ext["externals"].append({"spec": shim["spec"], "prefix": str(prefix)})
        print(f"{name}: {prefix}", file=out)
    header = (f"# GENERATED by `mpimatrix spack shims --site {site}` from\n"
              f"# {spec_file}; machine-local, do not commit.\n")
    (scope / "packages.yaml").write_text(
        header + yaml.safe_dump({"packages": packages}, sort_keys=False))
    print(f"wrote {scope / 'packages.yaml'}", file=out)
    return scope, skipped


def list_sites(root: Path | None = None) -> list[str]:
    base = (root or project_root()) / "site_config" / "spack"
    return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


# -- mirror ------------------------------------------------------------------------------------
def mirror_path(mirror: Path, sha256: str, ext: str) -> Path:
    """Where a file:// source mirror must hold a file for Spack to find it."""
    return mirror / "_source-cache" / "archive" / sha256[:2] / f"{sha256}{ext}"


def archive_ext(name: str) -> str:
    for ext in (".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".tar", ".zip", ".patch"):
        if name.endswith(ext):
            return ext
    return ""
