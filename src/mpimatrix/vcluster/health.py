"""Is the cluster healthy, and what would restarting it kill?

`up` over an existing cluster reuses it when every process of it lives, and
otherwise (a node killed, a daemon dead, a half-finished `up`) restarts it from
scratch, which kills everything in its namespaces, including work in `head`
such as a ReFrame session, whose results would be lost. `assess` says which of
these `up` is about to do, and what it would kill, before it does anything.
"""

from __future__ import annotations

from pathlib import Path

from . import namespaces
from .layout import Layout
from .state import load_state, procs_of

#: What `up` does over what it finds.
START, REUSE, RESTART, REFUSE_NODES = "start", "reuse", "restart", "refuse-nodes"


def dead(state: dict) -> list[str]:
    """Processes of the cluster that should run but do not."""
    return [p.name for p in procs_of(state) if not p.alive()]


def _ppid(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:80] or "?"


def head_work(state: dict) -> list[str]:
    """Processes in head that are not the cluster's own ('PID command'): a ReFrame
    session, a shell from `cluster exec head`, ... (a restart kills them)."""
    netns = state.get("netns", {}).get("head")
    if not netns:
        return []
    ours = {p.pid for p in procs_of(state)}
    return [f"{pid} {_cmdline(pid)}" for pid in sorted(namespaces.pids_in({netns}))
            if pid not in ours and _ppid(pid) not in ours]


def assess(lay: Layout) -> dict:
    """What `up` would do here: action, the dead processes, the work in head it
    would kill, and the node count of a running cluster."""
    old = load_state(lay)
    if not old:
        return {"action": START, "dead": [], "work": [], "nodes": lay.nodes}
    gone = dead(old)
    if not gone and old.get("phase") == "up":
        action = REUSE if old["nodes"] == lay.nodes else REFUSE_NODES
        return {"action": action, "dead": [], "work": [], "nodes": old["nodes"]}
    return {"action": RESTART, "dead": gone, "work": head_work(old),
            "nodes": old.get("nodes", lay.nodes), "phase": old.get("phase", "?")}
