"""Build once, install anywhere: the matrix rows through Spack's binary build cache.

Spack does the work, and the project does not wrap it (docs/spack.md, "Build once, install
anywhere"): `spack buildcache push` packs installed specs into a mirror, and
`spack install --use-buildcache only` extracts and relocates them into another install tree
without compiling. What the benchmarks (measure/spack_matrix_build.py,
measure/spack_buildcache.py) and tests/test_spack_kit.py share is here:

- `tree_scope()`: a Spack configuration scope (`spack -C DIR ...`) naming an install tree and,
  optionally, a binary mirror; it outranks the environment's own scopes;
- the nodes of each row of a lock, where an install tree has them, and what Spack recorded of
  their builds (`<prefix>/.spack/install_times.json`);
- what an install log says was extracted from a binary cache and what was compiled;
- a row's `osu_latency`, launched through its own MPI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..families import FAMILIES
from .lockfile import Lock, Node
from .site_overlay import generated_dir
from .spec_naming import MPI_FAMILIES
from .tool import env_copy

#: The name the binary mirror has in the scopes written here.
MIRROR_NAME = "mpimatrix-buildcache"
#: What the row's role is called in reports, per package.
ROLES = {"osu-micro-benchmarks": "OSU", "intel-mpi-benchmarks": "IMB", "npb": "NPB",
         "mpimatrix-benchmarks": "bundle"}
OSU_LATENCY = "libexec/osu-micro-benchmarks/mpi/pt2pt/osu_latency"


def default_cache(root: Path | None = None) -> Path:
    """The project's binary cache: <project>/.cache/spack/buildcache (git-ignored)."""
    return generated_dir(root) / "buildcache"


def mirror_url(mirror: str | os.PathLike) -> str:
    """A mirror as Spack takes it: URLs as they are, paths as absolute file:// URLs."""
    text = str(mirror)
    return text if "://" in text else Path(text).expanduser().absolute().as_uri()


def tree_scope(dest: Path, install_root: Path | None = None,
               mirror: str | os.PathLike | None = None) -> Path:
    """A configuration scope for `spack -C dest`: `config: install_tree: root:` and,
    given a mirror, that mirror as an unsigned binary-only one. Returns dest."""
    dest.mkdir(parents=True, exist_ok=True)
    if install_root is not None:
        (dest / "config.yaml").write_text(yaml.safe_dump(
            {"config": {"install_tree": {"root": str(install_root)}}}))
    if mirror is not None:
        (dest / "mirrors.yaml").write_text(yaml.safe_dump({"mirrors": {MIRROR_NAME: {
            "url": mirror_url(mirror), "binary": True, "source": False, "signed": False}}}))
    return dest


def store_root(spack: str, *spack_args: str, env: dict | None = None) -> Path:
    """The install tree Spack uses with these arguments (`-e ENV`, `-C SCOPE`): its
    configuration's, which a site overlay or a scope may move from `$spack/opt/spack`."""
    proc = subprocess.run([spack, *spack_args, "python", "-c",
                           "import spack.store; print(spack.store.STORE.root)"],
                          env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"`spack {' '.join(spack_args)} python`: rc {proc.returncode}: "
                           f"{proc.stderr.strip()[-500:]}")
    return Path(proc.stdout.strip().splitlines()[-1])


def env_with_lock(src_env: Path, dest: Path) -> Path:
    """A copy of an environment: its spack.yaml and spack.lock as they are, with
    env_copy's links. Spack installs the lock's specs there without concretizing, as
    another login node with the same checkout and lock does."""
    env_copy(dest)
    for name in ("spack.yaml", "spack.lock"):  # the source's manifest as it is
        shutil.copyfile(src_env / name, dest / name)
    return dest


def cache_size(mirror: Path) -> tuple[int, int]:
    """(bytes, files) under a file mirror."""
    sizes = [p.stat().st_size for p in mirror.rglob("*") if p.is_file()]
    return sum(sizes), len(sizes)


# -- rows of a lock ------------------------------------------------------------------------
@dataclass
class RowNode:
    node: Node
    role: str  # "MPI", "OSU", "IMB", "bundle" or "" (another dependency)

    @property
    def label(self) -> str:
        return f"{self.node.name}@{self.node.version}/{self.node.hash[:7]}"


def row_nodes(lock: Lock, root_hash: str) -> list[RowNode]:
    """Every node a row's root reaches (build dependencies too: they are built for it),
    the MPI and the suites first; externals left out (Spack builds none of them)."""
    root = lock.node(root_hash)
    mpi = root.dep_providing("mpi")
    seen, todo, out = set(), [root_hash], []
    while todo:
        h = todo.pop(0)
        if h in seen or h not in lock.nodes:
            continue
        seen.add(h)
        node = lock.nodes[h]
        todo += [d for d, _, _ in node.deps()]
        if not node.is_external:
            out.append(RowNode(node, "MPI" if h == mpi else ROLES.get(node.name, "")))
    order = {"MPI": 0, "OSU": 1, "IMB": 2, "bundle": 3}
    return sorted(out, key=lambda r: (order.get(r.role, 4), r.node.name))


def row_mpi(lock: Lock, root_hash: str) -> Node | None:
    h = lock.node(root_hash).dep_providing("mpi")
    return lock.nodes.get(h) if h else None


def row_label(lock: Lock, root: dict) -> str:
    """A row as its spec in spack.yaml, else as its MPI."""
    if root.get("spec"):
        return str(root["spec"])
    mpi = row_mpi(lock, root["hash"])
    return f"{mpi.name}@{mpi.version}" if mpi else root["hash"][:7]


# -- an install tree -----------------------------------------------------------------------
def store_index(store: Path) -> dict[str, dict]:
    """{hash: {"path", "installation_time"}} of the specs an install tree's database says
    are installed in it (read without Spack; {} without a database). Externals (recorded
    with their prefix) and build dependencies recorded as not installed are left out."""
    try:
        data = json.loads((store / ".spack-db" / "index.json").read_text())
    except (OSError, ValueError):
        return {}
    installs = (data.get("database") or {}).get("installs") or {}
    return {h: {"path": r["path"], "installation_time": r.get("installation_time")}
            for h, r in installs.items() if r.get("installed", True) and r.get("path")
            and not (r.get("spec") or {}).get("external")}


def install_times(prefix: str | os.PathLike) -> dict | None:
    """What Spack recorded of one install: {"total", "phases": [{name, seconds}], "cache"}
    (cache: extracted from a binary cache, not built), or None."""
    try:
        return json.loads((Path(prefix) / ".spack" / "install_times.json").read_text())
    except (OSError, ValueError):
        return None


def phases_text(times: dict) -> str:
    """'configure 40.1, build 70.2, install 5.3': the top-level phases (a nested one's path
    has a `/`), those under 0.5 s left out."""
    return ", ".join(f"{p['name']} {p['seconds']:.1f}" for p in times.get("phases") or []
                     if "/" not in str(p.get("path", "")) and p.get("seconds", 0) >= 0.5) or "-"


# -- install logs --------------------------------------------------------------------------
@dataclass
class InstallLog:
    extracted: list[str]  # "Extracting <name>-<version>-<hash> from binary cache"
    compiled: list[str]   # packages with an "Executing phase: '...'" line
    from_source: list[str]  # "No binary for <id> found: installing from source"
    errors: list[str]     # "==> Error: ..." lines


def read_install_log(out: str) -> InstallLog:
    extracted = re.findall(r"Extracting (\S+) from binary cache", out)
    compiled = sorted(set(re.findall(r"==> (\S+): Executing phase: '", out)))
    from_source = re.findall(r"No binary for (\S+) found: installing from source", out)
    errors = [ln.strip() for ln in out.splitlines() if ln.startswith("==> Error")]
    return InstallLog(extracted, compiled, from_source, errors)


def build_log_path(out: str) -> str | None:
    """The build log Spack names for a failed build (spack-build-out.txt in the stage)."""
    m = re.search(r"See build log for details:\s*\n?\s*(\S+)", out)
    if m:
        return m.group(1)
    m = re.search(r"(/\S+/spack-build-out\.txt)", out)
    return m.group(1) if m else None


# -- running a row's benchmark -------------------------------------------------------------
def osu_latency_command(lock: Lock, root_hash: str, index: dict[str, dict],
                        ranks: int = 2) -> tuple[list[str], dict[str, str]]:
    """The row's osu_latency as installed in the tree `index` describes, launched with
    `ranks` ranks through the row's MPI (an external MPI's from its prefix), and the
    variables its family needs (Open MPI as root). KeyError names what is not installed."""
    mpi = row_mpi(lock, root_hash)
    osu = next((r.node for r in row_nodes(lock, root_hash) if r.role == "OSU"), None)
    if mpi is None or osu is None:
        raise KeyError(f"row {root_hash[:7]} has no MPI or no OSU")
    family = FAMILIES[MPI_FAMILIES.get(mpi.name, "mpich")]
    mpi_prefix = mpi.external_path if mpi.is_external else index[mpi.hash]["path"]
    launcher = Path(mpi_prefix) / "bin" / family.launcher
    binary = Path(index[osu.hash]["path"]) / OSU_LATENCY
    return [str(launcher), "-n", str(ranks), str(binary), "-m", "1:1024", "-i", "100",
            "-x", "10"], dict(family.env)
