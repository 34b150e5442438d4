"""The cluster's processes: munged, slurmctld, slurmd; started, checked, killed by PID.

PID 1 on the target machines is often not an init that reaps orphans
promptly, so a killed daemon can linger as a zombie and `kill -0` still
succeeds: liveness is read from /proc/PID/status (State: Z = dead), and a
process is identified by PID plus start time (no PID-reuse accidents).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass

from .cpus import taskset_prefix
from .layout import Layout
from .namespaces import nsenter
from .privileges import tool


@dataclass
class Proc:
    name: str  # e.g. "slurmd@node1", "holder@head"
    member: str
    pid: int
    start: int  # /proc/PID/stat field 22 (start time in clock ticks)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def of(cls, name: str, member: str, pid: int) -> Proc:
        return cls(name, member, pid, start_time(pid))

    def alive(self) -> bool:
        return alive(self.pid, self.start)


def start_time(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as fp:
            stat = fp.read()
    except OSError:
        return -1
    # comm may contain spaces: split after the closing parenthesis
    return int(stat.rsplit(")", 1)[1].split()[19])


def state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/status") as fp:
            for line in fp:
                if line.startswith("State:"):
                    return line.split()[1]
    except OSError:
        pass
    return ""


def alive(pid: int, start: int | None = None) -> bool:
    st = state(pid)
    if st in ("", "Z", "X"):
        return False
    return start is None or start_time(pid) == start


def listening(pid: int, port: int) -> bool:
    """Does anything in the network namespace of `pid` listen on TCP `port`?"""
    want = f":{port:04X}"
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as fp:
                next(fp, None)
                for line in fp:
                    fields = line.split()
                    if fields[1].endswith(want) and fields[3] == "0A":  # LISTEN
                        return True
        except OSError:
            continue
    return False


def reap(pid: int) -> None:
    """Collect our own exited children (others are PID 1's business)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def start(lay: Layout, name: str, member: str, holder: int, argv: list[str]) -> Proc:
    """Start a daemon (in the foreground mode of its own) inside a member."""
    log = open(lay.log(name.replace("@", "-") + ".out"), "ab")
    try:
        proc = subprocess.Popen([*nsenter(holder, wd=str(lay.dir)), *argv],
                                stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                close_fds=True, env=daemon_env(lay))
    finally:
        log.close()
    return Proc.of(name, member, proc.pid)


def daemon_env(lay: Layout) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["SLURM_CONF"] = str(lay.slurm_conf)
    return env


def munged_argv(lay: Layout) -> list[str]:
    return [tool("munged"), "--foreground", f"--key-file={lay.munge_key}",
            f"--socket={lay.munge_socket}", f"--pid-file={lay.run_dir}/munged.pid",
            f"--log-file={lay.log('munged')}", f"--seed-file={lay.munge_dir}/munged.seed",
            "--num-threads=2"]


def slurmctld_argv(lay: Layout) -> list[str]:
    return [tool("slurmctld"), "-D", "-i", "-f", str(lay.slurm_conf)]


def slurmd_argv(lay: Layout, node: str, cpus: list[int] | None = None) -> list[str]:
    """slurmd of a node, confined to the node's own CPUs when it has some (cpus.py)."""
    return [*taskset_prefix(cpus or []), tool("slurmd"), "-D", "-N", node, "-f",
            str(lay.slurm_conf)]


def cron_argv() -> list[str]:
    """Debian's cron in the foreground: the accounts' crontabs run on the login node."""
    return [tool("cron"), "-f"]


def stop(procs: list[Proc], grace: float = 5.0) -> list[str]:
    """SIGTERM, wait up to `grace` s, then SIGKILL. Returns what needed SIGKILL."""
    live = [p for p in procs if p.alive()]
    for p in live:
        _signal(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while live and time.monotonic() < deadline:
        time.sleep(0.02)
        for p in live:
            reap(p.pid)
        live = [p for p in live if p.alive()]
    for p in live:
        _signal(p.pid, signal.SIGKILL)
    kill_wait([p.pid for p in live])
    return [p.name for p in live]


def kill_wait(pids: list[int], timeout: float = 5.0) -> list[int]:
    """SIGKILL and wait until gone (zombies count as gone). Returns survivors."""
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    left = list(pids)
    while left and time.monotonic() < deadline:
        for pid in left:
            reap(pid)
        left = [pid for pid in left if alive(pid)]
        if left:
            time.sleep(0.01)
    return left


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
