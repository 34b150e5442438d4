"""Where the benchmark sources (OSU, IMB) come from: paths the user gives.

    MPIMATRIX_SOURCES     paths, ':'-separated (`mpimatrix run --sources PATH`): an
                          offline kit or Spack mirror folder (searched 3 levels deep),
                          a release tarball, or an unpacked source tree
    MPIMATRIX_OSU_SOURCE  the OSU source (a tarball or a tree): wins over the above
    MPIMATRIX_IMB_SOURCE  the IMB source, likewise

Discovery and the checks' fixtures read these; `mpimatrix run` sets the per-suite
variables to what it found or downloaded (bench_prepare.py), so that the ReFrame
session builds from the same files.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .bench_suites import SUITES, Suite
from .record import BuildError

SOURCES_ENV = "MPIMATRIX_SOURCES"
SOURCE_ENVS = {name: f"MPIMATRIX_{name.upper()}_SOURCE" for name in SUITES}
#: How deep a folder is searched for tarballs and trees (a kit: sources/<package>/<file>).
DEPTH = 3


class SourceError(BuildError):
    """A source that cannot be used; the message names it and says why."""


def _version_key(path: Path) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.findall(r"\d+|[a-z]+", path.name))


def suite_of(path: Path) -> Suite | None:
    """The suite a release tarball (by its name) or a source tree is of, else None."""
    for s in SUITES.values():
        if path.is_file() and s.tarball.search(path.name):
            return s
        if path.is_dir() and s.is_tree(path):
            return s
    return None


def scan(path: Path, depth: int = DEPTH) -> dict[str, Path]:
    """The source of each suite a path holds: itself, or the newest tarball or tree of
    the suite found below it (not below a tree)."""
    s = suite_of(path)
    if s is not None:
        return {s.name: path}
    found: dict[str, list[Path]] = {}
    if path.is_dir() and depth > 0:
        for child in sorted(path.iterdir()):
            if child.name.startswith("."):
                continue
            for name, src in scan(child, depth - 1).items():
                found.setdefault(name, []).append(src)
    return {name: max(paths, key=_version_key) for name, paths in found.items()}


def given_paths() -> list[Path]:
    return [Path(p).expanduser() for p in os.environ.get(SOURCES_ENV, "").split(os.pathsep)
            if p.strip()]


def configured_sources() -> dict[str, Path]:
    """Each suite's source: its own variable, else the first MPIMATRIX_SOURCES path
    holding one. A path that does not exist or holds neither suite is an error."""
    out: dict[str, Path] = {}
    for path in given_paths():
        if not path.exists():
            raise SourceError(f"{SOURCES_ENV} / --sources: {path} does not exist")
        found = scan(path)
        if not found:
            raise SourceError(
                f"{SOURCES_ENV} / --sources: {path} holds no OSU or IMB source: give an "
                "offline kit or mirror folder, a release tarball (osu-micro-benchmarks-"
                "<v>.tar.gz, intel-mpi-benchmarks-<v>.tar.gz or IMB-v<v>.tar.gz) or an "
                "unpacked source tree")
        for name, src in found.items():
            out.setdefault(name, src)
    for name, var in SOURCE_ENVS.items():
        value = os.environ.get(var)
        if value:
            path = Path(value).expanduser()
            if not path.exists():
                raise SourceError(f"{var}: {path} does not exist")
            out[name] = path
    return {name: p.absolute() for name, p in out.items()}


def configured_source(suite: Suite) -> Path | None:
    return configured_sources().get(suite.name)


def add_given(paths: list[str]) -> None:
    """Put paths (from --sources) in front of MPIMATRIX_SOURCES, made absolute for the
    ReFrame session, which runs elsewhere."""
    old = [str(p) for p in given_paths()]
    new = [os.path.abspath(os.path.expanduser(p)) for p in paths]
    joined = os.pathsep.join(dict.fromkeys(new + [os.path.abspath(p) for p in old]))
    if joined:
        os.environ[SOURCES_ENV] = joined
