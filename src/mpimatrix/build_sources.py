"""Choose where the builds come from: a Spack lock, a builds file, or discovery.

Order: MPIMATRIX_BUILDS (explicit file) > MPIMATRIX_LOCK or an active Spack
environment (SPACK_ENV) > discovery of what this machine has.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .build_record import BuildError, BuildRecord, load_builds_file, problems
from .discover import Skipped, discover


@dataclass
class BuildSet:
    source: str  # "discovery", "lock:<path>", "file:<path>"
    builds: list[BuildRecord]
    skipped: list[Skipped] = field(default_factory=list)
    lock_sha256: str = ""


def lock_path_from_env() -> Path | None:
    if os.environ.get("MPIMATRIX_LOCK"):
        return Path(os.environ["MPIMATRIX_LOCK"])
    if os.environ.get("SPACK_ENV"):
        return Path(os.environ["SPACK_ENV"]) / "spack.lock"
    return None


def _split_usable(builds: list[BuildRecord]) -> tuple[list[BuildRecord], list[Skipped]]:
    ok, skipped = [], []
    for b in builds:
        why = problems(b)
        if why:
            skipped.append(Skipped(b.name, "; ".join(why)))
        else:
            ok.append(b)
    return ok, skipped


def only(bs: BuildSet) -> BuildSet:
    """MPIMATRIX_ONLY=regex[,regex]: keep the builds whose name matches one of them.

    ReFrame's -p does not narrow a --mode run in 4.10 (the option's default '.*'
    stays in the list the mode's options start), so builds are chosen here.
    """
    pats = [p for p in os.environ.get("MPIMATRIX_ONLY", "").split(",") if p]
    if not pats:
        return bs
    keep = [b for b in bs.builds if any(re.search(p, b.name) for p in pats)]
    if not keep:
        raise BuildError(f"MPIMATRIX_ONLY={','.join(pats)} matches none of the builds "
                         f"{[b.name for b in bs.builds]}")
    bs.builds = keep
    return bs


def load_builds() -> BuildSet:
    return only(_load_builds())


def _load_builds() -> BuildSet:
    builds_file = os.environ.get("MPIMATRIX_BUILDS")
    if builds_file:
        ok, skipped = _split_usable(load_builds_file(builds_file))
        return BuildSet(f"file:{builds_file}", ok, skipped)

    lock = lock_path_from_env()
    if lock is not None:
        from .spack_lock import builds_from_lock

        if not lock.is_file():
            raise BuildError(f"{lock}: no such Spack lock file; run `spack -e . concretize` "
                             "or unset MPIMATRIX_LOCK/SPACK_ENV to use discovery")
        builds, sha = builds_from_lock(lock)
        ok, skipped = _split_usable(builds)
        return BuildSet(f"lock:{lock}", ok, skipped, lock_sha256=sha)

    builds, skipped = discover()
    return BuildSet("discovery", builds, skipped)
