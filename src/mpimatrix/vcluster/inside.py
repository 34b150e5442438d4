"""Running commands inside the cluster's members (head, nodeN)."""

from __future__ import annotations

import os
import subprocess

from . import namespaces
from .layout import ClusterError, Layout
from .state import holder_pid, load_state


def env_for(lay: Layout) -> dict[str, str]:
    env = dict(os.environ)
    env["SLURM_CONF"] = str(lay.slurm_conf)
    env["MPIMATRIX_CLUSTER_DIR"] = str(lay.dir)
    return env


def command(lay: Layout, member: str, argv: list[str], state: dict | None = None,
            wd: str | None = None) -> list[str]:
    """Full argv running `argv` inside `member` (head or nodeN)."""
    state = state or load_state(lay)
    if not state:
        raise ClusterError(f"no cluster in {lay.dir}: run `mpimatrix cluster up` first")
    members = ["head", *[f"node{i}" for i in range(1, state["nodes"] + 1)]]
    if member not in members:
        raise ClusterError(f"unknown member {member!r}: choose from {', '.join(members)}")
    pid = holder_pid(state, member)
    if pid is None:
        raise ClusterError(f"{member} is not running (killed, or the cluster is down); "
                           "`mpimatrix cluster status` shows what is left")
    return [*namespaces.nsenter(pid, wd=wd or os.getcwd()), *argv]


def run(lay: Layout, member: str, argv: list[str], state: dict | None = None,
        **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 60)
    return subprocess.run(command(lay, member, argv, state), env=env_for(lay), **kw)


def node_states(lay: Layout, state: dict | None = None) -> dict[str, str]:
    state = state or load_state(lay)
    if not state or holder_pid(state, "head") is None:
        return {}
    try:
        proc = run(lay, "head", ["sinfo", "-h", "-N", "-o", "%N %T"], state, timeout=20)
    except (ClusterError, subprocess.TimeoutExpired):
        return {}
    out = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            out[parts[0]] = parts[1]
    return out
