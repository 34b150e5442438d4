"""ReFrame session reports (the JSON of a run, or a session from the results
database): loading them, and reading their info (measurements.py reads the rest)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard, TypeVar

_T = TypeVar("_T")


class SessionError(Exception):
    """A report or session that cannot be used; the message names it and the fix."""


def load_report(path: Path) -> dict[str, Any]:
    """A ReFrame report as its JSON (the callers derive sessions and reports from it)."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise SessionError(f"{path}: cannot read ReFrame report: {err.strerror}") from None
    except ValueError as err:
        raise SessionError(f"{path}: not a ReFrame JSON report ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise SessionError(f"{path}: not a ReFrame JSON report (no 'runs' list)")
    return data


def session_info(session: Mapping[str, Any]) -> dict[str, Any]:
    """The session's info with the extras `mpimatrix run` gave (--session-extras: mode,
    confirms, builds, ...), which ReFrame stores beside the info or under 'extras'."""
    info = session.get("session_info") or {}
    return {**info, **(info.get("extras") or {})}


def session_mode(info: Mapping[str, Any]) -> str:
    """The ReFrame mode a session ran in ("" if none): the extra `mpimatrix run` adds,
    else --mode on ReFrame's command line (plain `reframe -r --mode nightly`)."""
    if info.get("mode"):
        return str(info["mode"])
    m = re.search(r"--mode[= ](\S+)", info.get("cmdline") or "")
    return m.group(1) if m else ""


def defined(value: _T | None) -> TypeGuard[_T]:
    """ReFrame writes '<undefined>' for variables a test case never set (True: the value
    is not None, for the type checker)."""
    return value not in (None, "", "<undefined>")
