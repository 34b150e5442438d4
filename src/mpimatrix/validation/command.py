"""The `mpimatrix` command the validation runs sessions with: the one running it, else the
one installed beside this Python."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def _mpimatrix() -> str:
    here = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if here is not None and here.name == "mpimatrix" and here.exists():
        return str(here.resolve())
    beside = Path(sys.executable).parent / "mpimatrix"
    return str(beside) if beside.exists() else (shutil.which("mpimatrix") or str(beside))


MPIMATRIX = _mpimatrix()


def description(doc: str | None) -> str:
    """A module docstring's first paragraph, whole, as an argparse description."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())
