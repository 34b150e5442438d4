"""Choose where the builds come from: a builds file, a Spack lock, or discovery.

Order: MPIMATRIX_BUILDS (explicit file) > MPIMATRIX_LOCK or an active Spack
environment (SPACK_ENV) > discovery of what this machine has.
MPIMATRIX_ONLY (regular expressions, one per line) keeps the builds whose name
matches one of them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .builds_file import load_builds_file
from .discovery import discover
from .record import BuildError, BuildRecord, Skipped, why_unusable
from .spack.lock_builds import builds_from_lock

ONLY_ENV = "MPIMATRIX_ONLY"


@dataclass
class BuildSet:
    source: str  # "discovery", "lock:<path>", "file:<path>"
    builds: list[BuildRecord]
    skipped: list[Skipped] = field(default_factory=list)
    lock_sha256: str = ""


def lock_path_from_env() -> Path | None:
    if os.environ.get("MPIMATRIX_LOCK"):
        return Path(os.environ["MPIMATRIX_LOCK"]).absolute()
    if os.environ.get("SPACK_ENV"):
        return Path(os.environ["SPACK_ENV"]).absolute() / "spack.lock"
    return None


def split_usable(builds: list[BuildRecord]) -> tuple[list[BuildRecord], list[Skipped]]:
    ok, skipped = [], []
    for b in builds:
        why = why_unusable(b)
        if why:
            skipped.append(Skipped(b.name, "; ".join(why)))
        else:
            ok.append(b)
    return ok, skipped


def regex_lines(text: str, what: str) -> list[re.Pattern]:
    """Regular expressions, one per line (commas are part of a regex); a bad one
    stops here, named with `what` (the option and variable that gave it)."""
    out = []
    for p in (line.strip() for line in text.splitlines()):
        if not p:
            continue
        try:
            out.append(re.compile(p))
        except re.error as err:
            raise BuildError(f"{what}: {p!r} is not a regular expression ({err})") from None
    return out


def only_patterns(text: str | None = None) -> list[re.Pattern]:
    """The compiled MPIMATRIX_ONLY patterns."""
    text = os.environ.get(ONLY_ENV, "") if text is None else text
    return regex_lines(text, f"--only / {ONLY_ENV}")


def keep_only(bs: BuildSet) -> BuildSet:
    """Keep the builds matching MPIMATRIX_ONLY (ReFrame's -p does not narrow a
    --mode run in 4.10: the option's default '.*' stays in the list the mode's
    options start, so builds are chosen here)."""
    pats = only_patterns()
    if not pats:
        return bs
    keep = [b for b in bs.builds if any(p.search(b.name) for p in pats)]
    if not keep:
        raise BuildError(f"--only {' '.join(p.pattern for p in pats)} matches none of the "
                         f"builds {[b.name for b in bs.builds]}")
    bs.builds = keep
    return bs


def drop_name_clashes(bs: BuildSet) -> BuildSet:
    """Two builds whose names give one ReFrame environment cannot both run."""
    seen: dict[str, str] = {}
    keep = []
    for b in bs.builds:
        other = seen.get(b.environ_name)
        if other is not None:
            bs.skipped.append(Skipped(b.name, f"its ReFrame environment name "
                                      f"{b.environ_name!r} is already {other!r}'s; rename "
                                      "one of them"))
            continue
        seen[b.environ_name] = b.name
        keep.append(b)
    bs.builds = keep
    return bs


def load_builds() -> BuildSet:
    return keep_only(drop_name_clashes(_load_builds()))


def _load_builds() -> BuildSet:
    builds_file = os.environ.get("MPIMATRIX_BUILDS")
    if builds_file:
        path = Path(builds_file).absolute()
        builds, bad = load_builds_file(path)
        ok, skipped = split_usable(builds)
        return BuildSet(f"file:{path}", ok, bad + skipped)

    lock = lock_path_from_env()
    if lock is not None:
        if not lock.is_file():
            via = "MPIMATRIX_LOCK" if os.environ.get("MPIMATRIX_LOCK") else "SPACK_ENV"
            raise BuildError(f"{lock}: no Spack lock file ({via}); make it with `spack -e "
                             f"{lock.parent} concretize`, or unset MPIMATRIX_LOCK/SPACK_ENV "
                             "to use the MPIs discovered on this machine")
        builds, sha = builds_from_lock(lock)
        ok, skipped = split_usable(builds)
        return BuildSet(f"lock:{lock}", ok, skipped, lock_sha256=sha)

    builds, skipped = discover()
    return BuildSet("discovery", builds, skipped)
