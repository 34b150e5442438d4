"""The cluster's state file (<dir>/state.json): PIDs with start times, namespace
ids, phase. Written as processes start, so that `down` can clean up after a
failed or interrupted `up` too."""

from __future__ import annotations

import json
from pathlib import Path

from .daemons import Proc
from .layout import ClusterError, Layout

STATE_VERSION = 1


def load_state(lay_or_dir: Layout | Path | str | None = None) -> dict | None:
    path = state_path(lay_or_dir)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if data.get("version") == STATE_VERSION else None


def state_path(lay_or_dir) -> Path:
    if isinstance(lay_or_dir, Layout):
        return lay_or_dir.state_file
    return Layout.at(lay_or_dir).state_file


def save_state(lay: Layout, state: dict) -> None:
    tmp = lay.state_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(lay.state_file)


def procs_of(state: dict) -> list[Proc]:
    return [Proc(**p) for p in state.get("procs", [])]


def holder_pid(state: dict, member: str) -> int | None:
    for p in procs_of(state):
        if p.name == f"holder@{member}":
            return p.pid if p.alive() else None
    return None


def is_up(directory: str | Path | None = None) -> dict | None:
    """The state of a cluster whose head is alive (cheap: one file, one /proc read)."""
    try:
        state = load_state(directory)
    except ClusterError:
        return None
    if not state or state.get("phase") != "up":
        return None
    return state if holder_pid(state, "head") else None
