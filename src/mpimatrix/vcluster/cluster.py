"""Bring the emulated cluster up, inspect it, inject a node failure, tear it down."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path

from . import cpus, daemons, health, namespaces, privileges, slurm_conf
from .daemons import Proc
from .inside import command, env_for, node_states, run
from .layout import ClusterError, Layout
from .state import (
    STATE_VERSION,
    holder_pid,
    is_up,
    load_state,
    procs_of,
    save_state,
)

__all__ = ["command", "down", "env_for", "holder_pid", "is_up", "kill_node", "load_state",
           "node_states", "run", "status", "up"]


# -- up ----------------------------------------------------------------------------------
def up(lay: Layout, timeout: float = 60.0, force: bool = False, cron: bool = False) -> dict:
    """Start the cluster (idempotent). Returns the status with timings and what was
    done (`action`, see health.assess; `restarted`: the dead processes and the work
    in head that a restart killed). A degraded cluster is restarted, but not over
    live work in head unless `force`. `cron`: also Debian's cron daemon in head, the
    login node, so that the accounts' crontabs run there."""
    t0 = time.monotonic()
    privileges.require()
    plan = health.assess(lay)
    old = load_state(lay)
    if plan["action"] == health.REFUSE_NODES:
        raise ClusterError(f"the cluster in {lay.dir} is up with {plan['nodes']} node(s), "
                           f"not {lay.nodes}: run `mpimatrix cluster down` first")
    if plan["action"] == health.REUSE:
        _wait_idle(lay, old, timeout)
        if cron:
            start_cron(lay, old)
        return {**status(lay), "up_seconds": time.monotonic() - t0, "reused": True,
                "action": health.REUSE}
    if plan["action"] == health.RESTART:
        if plan["work"] and not force:
            raise ClusterError(
                f"the cluster in {lay.dir} is degraded (dead: {', '.join(plan['dead'])}); "
                f"restarting it would kill what runs in head: {'; '.join(plan['work'][:3])}"
                f"{' ...' if len(plan['work']) > 3 else ''}. Let it finish (or stop it), "
                "or restart anyway with `mpimatrix cluster up --force`")
        _teardown(Layout(lay.dir, plan["nodes"]), old)
    _prepare_files(lay)
    state = {"version": STATE_VERSION, "dir": str(lay.dir), "nodes": lay.nodes,
             "phase": "starting", "created": time.time(), "procs": [], "netns": {}}
    try:
        _start(lay, state, timeout)
    except BaseException:
        _teardown(lay, state)
        raise
    if cron:
        start_cron(lay, state)
    state["phase"] = "up"
    state["up_seconds"] = round(time.monotonic() - t0, 3)
    save_state(lay, state)
    return {**status(lay), "up_seconds": state["up_seconds"], "reused": False,
            "action": plan["action"], "restarted": plan}


def _prepare_files(lay: Layout) -> None:
    for d in lay.generated_dirs():
        shutil.rmtree(d, ignore_errors=True)
    for d in (lay.dir, lay.etc, lay.munge_dir, lay.run_dir, lay.log_dir, lay.state_save):
        d.mkdir(mode=0o755, parents=True, exist_ok=True)
        os.chmod(d, 0o755)  # munged refuses group/other-writable directories
    for node in lay.node_names:
        lay.spool(node).mkdir(mode=0o755, parents=True)
        lay.node_tmp(node).mkdir(mode=0o755, parents=True)
    lay.slurm_conf.write_text(slurm_conf.slurm_conf(lay))
    (lay.etc / "cgroup.conf").write_text(slurm_conf.cgroup_conf())
    (lay.etc / "plugstack.conf").write_text("")
    lay.hosts_file.write_text(slurm_conf.hosts(lay))
    for node in lay.node_names:
        lay.boot_id_file(node).write_text(f"{uuid.uuid4()}\n")
    fd = os.open(lay.munge_key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o400)
    try:
        os.write(fd, os.urandom(1024))
    finally:
        os.close(fd)
    os.chmod(lay.munge_key, 0o400)


def _start(lay: Layout, state: dict, timeout: float) -> None:
    holders = {m: namespaces.start_holder(lay, m) for m in lay.members}
    state["procs"] = [Proc.of(f"holder@{m}", m, p.pid).to_dict() for m, p in holders.items()]
    save_state(lay, state)
    namespaces.wait_ready(lay, holders)
    pids = {m: p.pid for m, p in holders.items()}
    state["netns"] = {m: namespaces.netns_id(pid) for m, pid in pids.items()}
    save_state(lay, state)
    namespaces.wire(lay, pids)

    munged = daemons.start(lay, "munged", "head", pids["head"], daemons.munged_argv(lay))
    state["procs"].append(munged.to_dict())
    save_state(lay, state)
    _wait_for(lambda: lay.munge_socket.exists(), 10, "munged socket",
              lambda: munged.alive(), lay.log("munged"))
    ctld = daemons.start(lay, "slurmctld", "head", pids["head"], daemons.slurmctld_argv(lay))
    state["procs"].append(ctld.to_dict())
    save_state(lay, state)
    # Slurm clients and slurmd retry a refused connection only after a second:
    # start them once slurmctld listens.
    _wait_for(lambda: daemons.listening(ctld.pid, slurm_conf.SLURMCTLD_PORT), timeout,
              "slurmctld port", ctld.alive, lay.log("slurmctld"))
    own = cpus.own_cpus(lay.node_names)
    state["cpus"] = own
    started = [daemons.start(lay, f"slurmd@{n}", n, pids[n],
                             daemons.slurmd_argv(lay, n, own.get(n)))
               for n in lay.node_names]
    state["procs"] += [p.to_dict() for p in started]
    save_state(lay, state)
    _wait_idle(lay, state, timeout)


def start_cron(lay: Layout, state: dict) -> None:
    """cron in head (once): it runs each account's crontab on the login node."""
    if any(p.name == "cron" and p.alive() for p in procs_of(state)):
        return
    if privileges.tool("cron") == "cron":
        raise ClusterError("cron not found: apt-get install cron")
    proc = daemons.start(lay, "cron", "head", holder_pid(state, "head"), daemons.cron_argv())
    time.sleep(0.5)
    if not proc.alive():
        raise ClusterError(f"cron exited at start: {namespaces.tail(lay.log('cron.out'))} "
                           "(a cron daemon already running on this machine holds its pid "
                           "file: stop it, the login node's cron runs the crontabs)")
    state["procs"].append(proc.to_dict())
    save_state(lay, state)


def _wait_for(cond, timeout, what, still_ok, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if not still_ok():
            raise ClusterError(f"{what}: daemon exited: {namespaces.tail(log)}")
        if time.monotonic() > deadline:
            raise ClusterError(f"{what} not ready after {timeout:.0f} s: "
                               f"{namespaces.tail(log)}")
        time.sleep(0.005)


def _wait_idle(lay: Layout, state: dict, timeout: float) -> None:
    """Wait until every node is idle (or allocated/mixed: in use) in sinfo."""
    deadline = time.monotonic() + timeout
    last = ""
    while True:
        dead = [p for p in procs_of(state) if not p.name.startswith("holder") and not p.alive()]
        if dead:
            p = dead[0]
            raise ClusterError(f"{p.name} exited during start-up: "
                               f"{_daemon_log_tail(lay, p.name)}")
        states = node_states(lay, state)
        last = " ".join(f"{n}={s}" for n, s in sorted(states.items())) or last
        if len(states) == lay.nodes and all(
                s.rstrip("*~#!%$@^-").lower() in ("idle", "mixed", "allocated", "completing")
                for s in states.values()):
            return
        if time.monotonic() > deadline:
            raise ClusterError(f"nodes not idle after {timeout:.0f} s ({last or 'no sinfo'}); "
                               f"slurmctld: {_daemon_log_tail(lay, 'slurmctld')}")
        time.sleep(0.05)


def _daemon_log_tail(lay: Layout, name: str) -> str:
    base = name.replace("@", "-")
    logs = {"slurmctld": lay.log("slurmctld"), "munged": lay.log("munged")}
    if name.startswith("slurmd@"):
        logs[name] = lay.log_dir / f"slurmd-{name.split('@')[1]}.log"
    path = logs.get(name, lay.log(base))
    out = lay.log(base + ".out")
    text = namespaces.tail(path)
    if out.exists() and out.stat().st_size:
        text += " | stdout: " + namespaces.tail(out)
    return text


# -- status --------------------------------------------------------------------------------------
def status(lay: Layout) -> dict:
    state = load_state(lay)
    if not state:
        return {"dir": str(lay.dir), "up": False, "phase": "down", "nodes": 0, "members": {},
                "processes": [], "sinfo": {}}
    nodes = state["nodes"]
    full = Layout(lay.dir, nodes)
    procs = procs_of(state)
    members = {}
    for m in full.members:
        members[m] = {"address": full.address(m), "netns": state["netns"].get(m, ""),
                      "holder_alive": holder_pid(state, m) is not None}
    sinfo = node_states(full, state)
    return {
        "dir": str(lay.dir), "phase": state["phase"], "nodes": nodes,
        "up": state["phase"] == "up" and not health.dead(state),
        "members": members,
        "processes": [{"name": p.name, "pid": p.pid, "alive": p.alive()} for p in procs],
        "sinfo": sinfo,
        "cpus": state.get("cpus") or {},
        "slurm_conf": str(full.slurm_conf),
    }


# -- failure injection ------------------------------------------------------------------------
def kill_node(lay: Layout, node: str, slurmd_only: bool = False) -> list[int]:
    """Simulate a crash: SIGKILL every process of a node (or only its slurmd)."""
    privileges.require_root(f"kill {node}")
    state = load_state(lay)
    if not state:
        raise ClusterError(f"no cluster in {lay.dir}")
    if not node.startswith("node") or node not in state["netns"]:
        raise ClusterError(f"unknown node {node!r}")
    if slurmd_only:
        pids = [p.pid for p in procs_of(state) if p.name == f"slurmd@{node}" and p.alive()]
    else:
        pids = namespaces.pids_in({state["netns"][node]})
    daemons.kill_wait(pids)
    return pids


# -- down -----------------------------------------------------------------------------------------
def down(lay: Layout) -> dict:
    """Stop every process of the cluster, let its namespaces vanish, remove its files."""
    t0 = time.monotonic()
    privileges.require_root(f"stop the cluster in {lay.dir}")
    state = load_state(lay)
    if state is None:
        stray = _stray_pids(lay)
        if stray:
            daemons.kill_wait(stray)
        _remove_files(lay)
        return {"was_up": False, "killed_stray": stray, "down_seconds":
                round(time.monotonic() - t0, 3), "left": []}
    left = _teardown(Layout(lay.dir, state.get("nodes", lay.nodes)), state)
    return {"was_up": True, "down_seconds": round(time.monotonic() - t0, 3), "left": left}


def _teardown(lay: Layout, state: dict) -> list[int]:
    procs = procs_of(state)
    netns = {v for v in state.get("netns", {}).values() if v}
    # Learn the namespaces of live holders too (a state saved before they were recorded).
    netns |= {namespaces.netns_id(p.pid) for p in procs
              if p.name.startswith("holder") and p.alive()} - {""}
    # Daemons first (slurmd kills its steps on SIGTERM), then the holders.
    daemons.stop([p for p in procs if not p.name.startswith("holder")], grace=5.0)
    daemons.stop([p for p in procs if p.name.startswith("holder")], grace=1.0)
    # Anything else still inside (job steps, MPI ranks, user shells): SIGKILL.
    left: list[int] = []
    for _ in range(3):
        pids = namespaces.pids_in(netns) if netns else []
        pids += [p for p in _stray_pids(lay) if p not in pids]
        if not pids:
            break
        left = daemons.kill_wait(pids)
    _remove_files(lay)
    return left


def _stray_pids(lay: Layout) -> list[int]:
    """Live processes started for this cluster dir but not in the state (lost state file)."""
    needle = str(lay.dir).encode()
    out = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and (b"slurm" in cmdline or b"munged" in cmdline
                                  or b"mpimatrix-init" in cmdline):
            if daemons.alive(int(entry.name)):
                out.append(int(entry.name))
    return out


def _remove_files(lay: Layout) -> None:
    for d in lay.generated_dirs():
        shutil.rmtree(d, ignore_errors=True)
    for f in (lay.state_file, lay.state_file.with_suffix(".tmp")):
        f.unlink(missing_ok=True)
