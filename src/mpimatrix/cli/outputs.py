"""Where a command writes: a name that is one plain file name (no directory, no
`..`) and a directory that is one (made if missing), checked the same way for
`report`, `accept` and `run --requirements` before anything is read or run."""

from __future__ import annotations

import re
from pathlib import Path

from ..paths import reports_dir
from ..results.sessions import SessionError

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def output_name(name: str, option: str = "--name") -> str:
    """A file name (without suffix) for what a command writes."""
    if not NAME.fullmatch(name or "") or len(name) > 200:
        raise SessionError(f"{option} {name!r}: letters, digits, '.', '_' and '-' only (a "
                           "file name: no directory, no leading '.' or '-', at most 200 "
                           "characters); --output-dir says where")
    return name


def output_dir(path: str | None, option: str = "--output-dir") -> Path:
    """The directory to write in (default results/reports), checked before anything is
    read: a directory, or one that can be made (the writer makes it)."""
    if path is not None and not path.strip():
        raise SessionError(f"{option} is empty: name a directory (default {reports_dir()})")
    d = Path(path) if path is not None else reports_dir()
    up = d
    while not up.exists() and up.parent != up:
        up = up.parent
    if not up.is_dir():
        what = "is a file, not a directory" if up == d else f"cannot be made: {up} is a file"
        raise SessionError(f"{option} {d}: {what}; name a directory (it is made if missing)")
    return d


def write_failed(path: Path, err: OSError, option: str = "--output-dir") -> SessionError:
    """The error of a file that could not be written where the command was told to."""
    return SessionError(f"cannot write {path}: {err.strerror or err}; choose another "
                        f"{option} (default {reports_dir()})")
