"""An explicit list of builds (MPIMATRIX_BUILDS=<file.yaml|json>).

A list of build records, or a mapping with a `builds` list; the fields are
those of builds.record.BuildRecord (`mpimatrix builds --json` prints complete
records to start from). An entry may instead name an Lmod module, `{module:
mpich/4.0.2, needs: [gcc/12]}`: its record comes from loading it (builds/lmod.py), and
its benchmarks as discovery finds them for the MPIs it finds. A record that is not
valid is skipped with the reason; the other builds of the file still run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from .discovery import attach_bench_installs, attach_intel_imb, pypi_builds
from .lmod import module_build
from .record import BuildError, BuildRecord, Skipped

MAX_BYTES = 16 << 20


def load_builds_file(path: str | os.PathLike) -> tuple[list[BuildRecord], list[Skipped]]:
    path = Path(path)
    fix = "check MPIMATRIX_BUILDS"
    try:
        if path.stat().st_size > MAX_BYTES:
            raise BuildError(f"{path}: builds file larger than {MAX_BYTES >> 20} MiB; {fix}")
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise BuildError(f"{path}: cannot read builds file: {err.strerror}; {fix}") from None
    except UnicodeDecodeError as err:
        raise BuildError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start}); "
                         f"{fix}") from None
    kind = "JSON" if path.suffix == ".json" else "YAML"
    try:
        data = json.loads(text) if kind == "JSON" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as err:
        raise BuildError(f"{path}: not valid {kind}: {err}") from None
    if isinstance(data, dict):
        data = data.get("builds")
    if not isinstance(data, list):
        raise BuildError(f"{path}: expected a list of builds or a mapping with a 'builds' "
                         "list (`mpimatrix builds --json` prints one)")
    builds, skipped = [], []
    for i, item in enumerate(data):
        origin = f"{path}, item {i + 1}"
        try:
            if isinstance(item, dict) and "module" in item:
                builds.append(module_build(item, origin))
            else:
                builds.append(BuildRecord.from_dict(item, origin=origin))
        except BuildError as err:
            name = item.get("name") or item.get("module") if isinstance(item, dict) else None
            skipped.append(Skipped(name if isinstance(name, str) else f"item {i + 1}", str(err)))
    modules = [b for b in builds if b.modules]
    if modules:  # benchmarks as discovery gives them; the wheel's IMB from any Intel MPI
        attach_intel_imb([*builds, *pypi_builds()[0]], modules)
        attach_bench_installs(modules)
    return builds, skipped
