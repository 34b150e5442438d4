"""`mpimatrix spack ...`: get Spack, prepare a site overlay, fill a local mirror.

    mpimatrix spack locate            which Spack, is it the pinned one, is builtin pinned
    mpimatrix spack shims [--site S]  machine-local externals of a site overlay (Debian MPIs)
    mpimatrix spack mirror-add FILE   put a source tarball where a file:// mirror is read

The pins (Spack release, builtin package repository commit) are the ones this
project was verified with; spack.yaml repeats the package-repository pin.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from .paths import project_root

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


def cmd_locate(args) -> int:
    exe = find_spack()
    if exe is None:
        print("mpimatrix: no Spack found (neither $SPACK_ROOT/bin/spack nor `spack` on PATH).\n"
              f"Get the pinned release (Spack {SPACK_VERSION}, builtin packages "
              f"{PACKAGES_TAG}) with `mpimatrix spack get`, or:\n\n{get_spack_instructions()}\n\n"
              "then see docs/spack.md (offline sites: mirror and bootstrap).",
              file=sys.stderr)
        return 1
    version, commit = spack_version(exe)
    print(f"spack: {exe}")
    print(f"version: {version or '?'} ({commit or 'no commit'})")
    rc = 0
    if not version.startswith("1."):
        print(f"  WARNING: this project needs Spack 1.x (verified: {SPACK_VERSION})")
        rc = 1
    elif version != SPACK_VERSION:
        print(f"  note: verified with {SPACK_VERSION}; {version} may concretize differently")
    packages = Path(exe).resolve().parents[1].parent / "spack-packages"
    head = _git_head(packages)
    if head:
        ok = head == PACKAGES_COMMIT
        print(f"builtin checkout: {packages} at {head[:12]}"
              + ("" if ok else f"  WARNING: pinned {PACKAGES_COMMIT[:12]} ({PACKAGES_TAG}); "
                 f"run: git -C {packages} fetch --depth=1 origin {PACKAGES_TAG} && "
                 f"git -C {packages} checkout {PACKAGES_COMMIT}"))
        rc = rc or (0 if ok else 1)
    else:
        print(f"builtin checkout: none at {packages} (Spack clones the pinned commit "
              "itself when online; offline sites: docs/spack.md)")
    site = os.environ.get(SITE_ENV)
    print(f"{SITE_ENV}: {site or '(unset: set it before `spack env activate .`)'}")
    if os.environ.get("SPACK_PYTHON"):
        print(f"SPACK_PYTHON: {os.environ['SPACK_PYTHON']}")
    return rc


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


def cmd_get(args) -> int:
    exe = find_spack()
    if exe is not None and not args.force:
        print(f"Spack is already here: {exe} (`mpimatrix spack locate` checks it against "
              "the pins; --force clones anyway)")
        return 0
    dest = Path(args.dest).expanduser().resolve()
    clone_pinned(dest)
    head = _git_head(dest)
    if head and head != SPACK_COMMIT:
        print(f"  WARNING: {dest} is at {head[:12]}, the pin is {SPACK_COMMIT[:12]}")
    print(f"Spack {SPACK_VERSION} in {dest}, builtin packages {PACKAGES_TAG} in "
          f"{dest.parent / 'spack-packages'}.\nNext:\n  . {dest}/share/spack/setup-env.sh\n"
          f"  export {SITE_ENV}=<site>   # a directory under site_config/spack/\n"
          "  spack env activate . && spack concretize && spack install")
    return 0


def _git_head(path: Path) -> str:
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
    replaced by `specs` if given) and links to packages/, site_config/ and .cache/,
    so that `spack -e dest concretize` writes its lock there, not in the project."""
    root = root or project_root()
    dest.mkdir(parents=True, exist_ok=True)
    manifest = yaml.safe_load((root / "spack.yaml").read_text())
    if specs is not None:
        manifest["spack"]["specs"] = list(specs)
    (dest / "spack.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    for d in ("packages", "site_config", ".cache"):
        link = dest / d
        if not link.exists():
            link.symlink_to(root / d)
    return dest


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


def cmd_shims(args) -> int:
    site = args.site or os.environ.get(SITE_ENV) or "debian-local"
    try:
        _, skipped = write_shims(site)
    except ShimError as err:
        print(f"mpimatrix spack shims: {err}", file=sys.stderr)
        return 2
    for s in skipped:
        print(f"  skipped {s}", file=sys.stderr)
    return 0


# -- mirror ------------------------------------------------------------------------------------
def mirror_path(mirror: Path, sha256: str, ext: str) -> Path:
    """Where a file:// source mirror must hold a file for Spack to find it."""
    return mirror / "_source-cache" / "archive" / sha256[:2] / f"{sha256}{ext}"


def _archive_ext(name: str) -> str:
    for ext in (".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".tar", ".zip", ".patch"):
        if name.endswith(ext):
            return ext
    return ""


def cmd_mirror_add(args) -> int:
    src = Path(args.file)
    data = src.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    if args.sha256 and args.sha256 != sha:
        print(f"mpimatrix: {src}: sha256 {sha} is not the expected {args.sha256}; Spack would "
              "reject it (a re-rolled or differently packed tarball)", file=sys.stderr)
        return 1
    mirror = Path(args.mirror) if args.mirror else generated_dir() / "mirror"
    ext = "" if args.patch else _archive_ext(src.name)
    dest = mirror_path(mirror, sha, ext)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    print(dest)
    return 0


def register(sub) -> None:
    p = sub.add_parser("spack", help="Spack: locate it, prepare site overlays, local mirror")
    ssub = p.add_subparsers(dest="spack_cmd", required=True)

    s = ssub.add_parser("locate", help="find Spack and check it against the pins")
    s.set_defaults(func=cmd_locate)

    s = ssub.add_parser("get", help="no Spack here: clone the pinned Spack release and "
                        "builtin packages")
    s.add_argument("--dest", default="~/spack", help="where Spack goes (default ~/spack; "
                   "the packages go next to it)")
    s.add_argument("--force", action="store_true", help="clone even if Spack is found")
    s.set_defaults(func=cmd_get)

    s = ssub.add_parser("shims", help="make a site's machine-local externals (Debian MPIs)")
    s.add_argument("--site", help=f"overlay under site_config/spack (default ${SITE_ENV}, "
                   "else debian-local)")
    s.set_defaults(func=cmd_shims)

    s = ssub.add_parser("mirror-add", help="copy a source tarball into a file:// mirror "
                        "at the path Spack reads")
    s.add_argument("file")
    s.add_argument("--sha256", help="expected sha256 (the recipe's); refuse on mismatch")
    s.add_argument("--mirror", help="mirror root (default <project>/.cache/spack/mirror)")
    s.add_argument("--patch", action="store_true",
                   help="a recipe patch: stored without extension, as Spack expects")
    s.set_defaults(func=cmd_mirror_add)
