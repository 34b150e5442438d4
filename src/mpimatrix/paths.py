"""Where the project keeps things. MPIMATRIX_HOME overrides the project root."""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    env = os.environ.get("MPIMATRIX_HOME")
    if env:
        return Path(env).resolve()
    # src/mpimatrix/paths.py -> project root (editable install or source tree)
    return Path(__file__).resolve().parents[2]


def results_dir() -> Path:
    return Path(os.environ.get("MPIMATRIX_RESULTS", project_root() / "results")).resolve()


def references_dir() -> Path:
    return results_dir() / "references"


def reports_dir() -> Path:
    return results_dir() / "reports"


def store_dir() -> Path:
    """The results databases (ReFrame's SQLite file, the session index): they need a
    local disk with working locks. MPIMATRIX_STORE moves them; ReFrame's own
    RFM_SQLITE_DB_FILE, when set, decides alone."""
    if os.environ.get("RFM_SQLITE_DB_FILE"):
        return Path(os.environ["RFM_SQLITE_DB_FILE"]).parent
    env = os.environ.get("MPIMATRIX_STORE")
    return Path(env).expanduser().resolve() if env else results_dir() / "db"


def results_db() -> Path:
    return Path(os.environ.get("RFM_SQLITE_DB_FILE", store_dir() / "results.db"))


def cache_dir() -> Path:
    """Machine-local generated files (ABI link dirs, compiled helpers); never committed."""
    d = Path(os.environ.get("MPIMATRIX_CACHE", project_root() / ".cache"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def user_cache_dir() -> Path:
    """What outlives a checkout and is shared by clones on this machine (Spack and its
    installs, benchmark builds from given sources): $MPIMATRIX_USER_CACHE, else
    ${XDG_CACHE_HOME:-~/.cache}/mpimatrix."""
    env = os.environ.get("MPIMATRIX_USER_CACHE")
    if env:
        return Path(env).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser().resolve() / "mpimatrix"


def offline_kit() -> Path | None:
    """The offline kit (an air-gapped site's mirror of Spack and benchmark sources):
    $MPIMATRIX_OFFLINE_KIT, else ../shared/offline beside the project, if present."""
    env = os.environ.get("MPIMATRIX_OFFLINE_KIT")
    kit = Path(env).expanduser() if env else project_root().parent / "shared" / "offline"
    return kit.resolve() if kit.is_dir() else None


def pypi_mpi_root() -> Path:
    """Where the set-up installs the PyPI MPI wheels, one venv per MPI."""
    return Path(os.environ.get("MPIMATRIX_PYPI_MPIS", project_root() / ".venv-mpi"))
