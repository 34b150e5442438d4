"""Namespaces of the cluster: one holder process per member, links between them.

Every member (head, node1..N) is an anonymous network + UTS + mount namespace
created by `unshare` for a holder process (`sleep infinity`). A small init
script run by the holder sets the member up before it sleeps:

- hostname = member name; a cluster hosts file bind-mounted over /etc/hosts;
  the cluster's etc/ (slurm.conf) over /etc/slurm, where Slurm's clients look for it,
  so an account's shell or cron job on a member needs no SLURM_CONF;
- compute nodes only: a private tmpfs on /dev/shm; a random per-node boot_id
  bind-mounted over /proc/sys/kernel/random/boot_id (UCX takes the boot_id as
  the host identity and would otherwise use shared memory between "nodes");
  a private tmpfs on /sys/fs/cgroup with a named,
  controller-less cgroup-v1 hierarchy (slurmd 22.05 insists on a cgroup
  plugin, and a host without a usable v1 tree would refuse it).

Daemons and user commands join a member with `nsenter --target <holder>
--net --uts --mount` (never `ip netns exec`, which remounts /sys and hides
the cgroup mounts). All mounts live in the members' private mount
namespaces and vanish with them; nothing is mounted in the host's namespace
and nothing is created under /run/netns. A member's namespaces disappear when
its last process exits.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from .layout import BRIDGE, ClusterError, Layout
from .privileges import tool

INIT = r"""
set -e
member=$1 kind=$2 dir=$3
hostname "$member"
mount --bind "$dir/etc/hosts" /etc/hosts
# Slurm's clients find the cluster's configuration where a real cluster keeps it
if [ -d /etc/slurm ]; then mount --bind "$dir/etc" /etc/slurm; fi
if [ "$kind" = node ]; then
    mount -t tmpfs -o mode=1777,size=2g mpimatrix-shm /dev/shm
    mount --bind "$dir/etc/boot_id.$member" /proc/sys/kernel/random/boot_id
    mount -t tmpfs -o mode=755 mpimatrix-cgroup /sys/fs/cgroup
    mkdir /sys/fs/cgroup/systemd
    mount -t cgroup -o none,name=mpimatrix cgroup /sys/fs/cgroup/systemd
fi
: > "$dir/run/$member.ready"
exec sleep infinity
"""


def start_holder(lay: Layout, member: str) -> subprocess.Popen:
    kind = "head" if member == "head" else "node"
    log = open(lay.log(f"holder-{member}"), "ab")
    try:
        return subprocess.Popen(
            [tool("unshare"), "--net", "--uts", "--mount", "--propagation", "private", "--",
             "sh", "-c", INIT, "mpimatrix-init", member, kind, str(lay.dir)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            cwd=lay.dir, start_new_session=True, close_fds=True)
    finally:
        log.close()


def wait_ready(lay: Layout, procs: dict[str, subprocess.Popen], timeout: float = 20) -> None:
    """Wait until every holder has finished its init (or say which one failed)."""
    deadline = time.monotonic() + timeout
    pending = dict(procs)
    while pending:
        for member, proc in list(pending.items()):
            if lay.ready_file(member).exists():
                del pending[member]
            elif proc.poll() is not None:
                raise ClusterError(f"{member}: namespace set-up failed (rc={proc.returncode}): "
                                   f"{tail(lay.log(f'holder-{member}'))}")
        if pending and time.monotonic() > deadline:
            raise ClusterError(f"namespace set-up of {', '.join(pending)} did not finish in "
                               f"{timeout:.0f} s; see {lay.log_dir}")
        if pending:
            time.sleep(0.005)


def nsenter(pid: int, *, wd: str | None = None) -> list[str]:
    """Command prefix that runs a command inside the member held by `pid`."""
    cmd = [tool("nsenter"), f"--target={pid}", "--net", "--uts", "--mount"]
    if wd:
        cmd.append(f"--wd={wd}")
    return [*cmd, "--"]


def _ip_batch(pid: int, commands: list[str]) -> subprocess.Popen:
    return subprocess.Popen([*nsenter(pid), tool("ip"), "-batch", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(proc: subprocess.Popen, commands: list[str], what: str) -> None:
    out, _ = proc.communicate("\n".join(commands) + "\n", timeout=30)
    if proc.returncode != 0:
        raise ClusterError(f"network set-up of {what} failed: {out.strip()}")


def wire(lay: Layout, holders: dict[str, int]) -> None:
    """Bridge in the head, one veth pair per node (eth0 inside the node)."""
    head = [
        "link set lo up",
        f"link add {BRIDGE} type bridge",
        f"addr add {lay.address('head')}/24 dev {BRIDGE}",
        f"link set {BRIDGE} up",
    ]
    for node in lay.node_names:
        veth = lay.veth(node)
        head += [f"link add {veth} type veth peer name eth0 netns {holders[node]}",
                 f"link set {veth} master {BRIDGE}",
                 f"link set {veth} up"]
    _finish(_ip_batch(holders["head"], head), head, "head")
    procs = []
    for node in lay.node_names:
        cmds = ["link set lo up", f"addr add {lay.address(node)}/24 dev eth0",
                "link set eth0 up"]
        procs.append((_ip_batch(holders[node], cmds), cmds, node))
    for proc, cmds, node in procs:
        _finish(proc, cmds, node)


def netns_id(pid: int) -> str:
    """The network namespace of a process, e.g. 'net:[4026532301]' ('' if gone)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return ""


def pids_in(netns: set[str]) -> list[int]:
    """Processes (not zombies) whose network namespace is one of `netns`."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "ns" / "net") in netns:
                out.append(int(entry.name))
        except OSError:
            continue
    return out


def tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return f"(no log {path})"
    return " / ".join(text[-lines:]) or f"(empty log {path})"
