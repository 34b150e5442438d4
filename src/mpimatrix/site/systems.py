"""A site's own ReFrame systems (its Slurm partitions), from site_config/systems/*.yaml.

Each file holds one ReFrame system (the `systems` entry of a ReFrame
configuration, in YAML). The environments are not written there: every
partition gets the environments of all builds (or those whose name matches the
partition's `environs_match` regex), because the builds change with the Spack
lock while the partitions do not. MPIMATRIX_SYSTEMS=<dir> reads another
directory; MPIMATRIX_REFRAME_CONFIG (`reframe_config:` in site_config/site.yaml) adds the
systems of the site's existing ReFrame configuration, its `mpirun`/`mpiexec` partitions
launching with each build's own. ReFrame picks the system whose `hostnames` match, so a cluster's
file is inert everywhere else.
"""

from __future__ import annotations

import os
import re
import runpy
from pathlib import Path

import yaml

from ..builds.record import BuildError
from ..paths import project_root, results_dir
from ..placement import node_features
from ..rfm.launchers import BUILD_MPIEXEC, METHODS, SRUN

REQUIRED = ("name", "hostnames", "partitions")
#: A site's existing ReFrame configuration whose systems mpimatrix runs on.
REFRAME_CONFIG_ENV = "MPIMATRIX_REFRAME_CONFIG"
#: Launchers of a site's configuration that mean the MPI's own: each build's mpirun/mpiexec.
EACH_BUILDS_OWN = ("mpirun", "mpiexec")
PART_REQUIRED = ("name", "scheduler")


def systems_dir() -> Path:
    return Path(os.environ.get("MPIMATRIX_SYSTEMS") or project_root() / "site_config" / "systems")


def _fail(path: Path, what: str) -> BuildError:
    return BuildError(f"{path}: {what}; see site_config/systems/slurm-cluster.yaml.example")


def load_system(path: Path, envs: list[str]) -> dict:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise _fail(path, f"cannot read the ReFrame system ({err})") from None
    return as_system(data, path, envs)


def reframe_config_systems(path: Path, envs: list[str]) -> list[dict]:
    """The systems of a site's own ReFrame configuration (a Python file setting
    `site_configuration`, or YAML/JSON with a `systems` list), each given the builds'
    environments as the systems files are."""
    try:
        if path.suffix == ".py":
            data = runpy.run_path(str(path)).get("site_configuration")
        else:
            data = yaml.safe_load(path.read_text())
    except Exception as err:  # the site's own code: any error is the file's
        raise BuildError(f"{path}: cannot load the site's ReFrame configuration "
                         f"({type(err).__name__}: {err}); {REFRAME_CONFIG_ENV} names it"
                         ) from None
    systems = data.get("systems") if isinstance(data, dict) else None
    if not isinstance(systems, list) or not systems:
        raise BuildError(f"{path}: no `systems` list in the site's ReFrame configuration "
                         f"(site_configuration['systems']); {REFRAME_CONFIG_ENV} names it")
    out = []
    for system in systems:
        system = dict(system) if isinstance(system, dict) else system
        for part in system.get("partitions") or [] if isinstance(system, dict) else []:
            if isinstance(part, dict) and part.get("launcher") in EACH_BUILDS_OWN:
                part["launcher"] = BUILD_MPIEXEC  # the MPI's own: each build's
        out.append(as_system(system, path, envs))
    return out


def as_system(data, path: Path, envs: list[str]) -> dict:
    """One ReFrame system for mpimatrix: every partition gets the builds' environments
    (those matching its `environs_match`), serial jobs, the placements' features."""
    if not isinstance(data, dict):
        raise _fail(path, "expected one ReFrame system (a mapping with name, hostnames, "
                    "partitions)")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise _fail(path, f"missing {', '.join(missing)}")
    data.setdefault("modules_system", "nomod")
    # Stage and output must be on a file system the compute nodes share.
    data.setdefault("prefix", str(results_dir()))
    for part in data["partitions"]:
        part.pop("environs", None)  # a site configuration's own: the builds' replace them
        pmiss = [k for k in PART_REQUIRED if k not in part]
        if pmiss:
            raise _fail(path, f"partition {part.get('name', '?')}: missing {', '.join(pmiss)}")
        pattern = part.pop("environs_match", None)
        try:
            part["environs"] = [e for e in envs if not pattern or re.search(pattern, e)]
        except re.error as err:
            raise _fail(path, f"partition {part['name']}: bad environs_match: {err}") from None
        slurm = "slurm" in part["scheduler"] or "squeue" in part["scheduler"]
        part.setdefault("launcher", SRUN if slurm else BUILD_MPIEXEC)
        if part["launcher"] not in METHODS:
            raise _fail(path, f"partition {part['name']}: launcher {part['launcher']!r}: use "
                        f"{SRUN} (Slurm direct launch, srun --mpi=<the build's PMI>) or "
                        f"{BUILD_MPIEXEC} (each build's own mpiexec/mpirun, in the allocation)")
        part.setdefault("max_jobs", 1)  # performance runs are serial
        extras = part.setdefault("extras", {})
        if not isinstance(extras, dict):
            raise _fail(path, f"partition {part['name']}: extras must be a mapping")
        nodes = int(extras.setdefault("nodes", 1))
        feats = part.setdefault("features", [])
        feats += [f for f in node_features(nodes) if f not in feats]
    return data


def site_systems(envs: list[str]) -> list[dict]:
    """The systems files, then the systems of the site's ReFrame configuration (if
    MPIMATRIX_REFRAME_CONFIG names one)."""
    d = systems_dir()
    files = [load_system(p, envs) for p in sorted(d.glob("*.yaml"))] if d.is_dir() else []
    config = os.environ.get(REFRAME_CONFIG_ENV)
    return [*files, *(reframe_config_systems(Path(config), envs) if config else [])]


#: Partition extras a report reads for cost (ReFrame ignores unknown extras).
PRICE_KEYS = ("price_per_node_hour", "currency", "fabric")


def partition_prices() -> dict[str, dict]:
    """{"system:partition": {price_per_node_hour, currency, fabric}} of the site's
    partitions that set `extras: {price_per_node_hour: ...}`."""
    out = {}
    d = systems_dir()
    for path in sorted(d.glob("*.yaml")) if d.is_dir() else []:
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as err:
            raise _fail(path, f"cannot read the ReFrame system ({err})") from None
        for part in data.get("partitions") or [] if isinstance(data, dict) else []:
            extras = part.get("extras") if isinstance(part, dict) else None
            if not isinstance(extras, dict) or "price_per_node_hour" not in extras:
                continue
            price = extras["price_per_node_hour"]
            if isinstance(price, bool) or not isinstance(price, (int, float)) or price < 0:
                raise _fail(path, f"partition {part.get('name', '?')}: price_per_node_hour "
                            f"{price!r} must be a number >= 0 (price of one node for one hour)")
            out[f"{data.get('name', path.stem)}:{part.get('name', '?')}"] = {
                k: extras[k] for k in PRICE_KEYS if k in extras}
    return out
