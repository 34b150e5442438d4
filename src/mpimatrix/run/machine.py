"""Was the machine quiet while a session ran? CPU time used by anything but the
session itself (its ReFrame process and every job ReFrame ran), from /proc/stat.
On a batch partition the jobs run under the scheduler, on other nodes: there each
benchmark measures its own nodes (rfm/slurm_job.node_load), and the session is
judged by what other programs used there while the benchmarks ran.

A session disturbed by other programs measures them: its values are stored, but
the gate withholds its verdicts and bless leaves it out. The record per session
is kept in <results>/db/machine-load.json.
"""

from __future__ import annotations

import json
import os
import resource
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..atomic import atomic_write

#: Other programs may use this share of the machine's CPU time during a session.
MAX_FOREIGN_SHARE = 0.05
_TICK = os.sysconf("SC_CLK_TCK")


def _busy_seconds() -> float:
    """CPU time of the whole machine that was not idle (steal included)."""
    with open("/proc/stat") as fp:
        fields = [int(x) for x in fp.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / _TICK


def _own_seconds() -> float:
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    return total


#: Load.where of a session judged on the machine that ran `mpimatrix run`.
MACHINE = "machine"
#: Load.where of a session judged on the nodes its benchmark jobs ran on.
JOB_NODES = "job nodes"


@dataclass
class Load:
    seconds: float  # wall time
    foreign_cpu: float  # CPU seconds of other programs
    cores: float  # cores of the machine, or the jobs' nodes' cores on average
    where: str = MACHINE

    @classmethod
    def from_record(cls, record: dict) -> Load:
        return cls(record["seconds"], record["foreign_cpu"], record["cores"],
                   record.get("where", MACHINE))

    @property
    def share(self) -> float:
        return self.foreign_cpu / max(self.seconds * self.cores, 1e-9)

    @property
    def disturbed(self) -> bool:
        return self.share > MAX_FOREIGN_SHARE

    def text(self) -> str:
        if self.where == JOB_NODES:
            return (f"other programs used {self.foreign_cpu:.1f} CPU-s ({self.share:.1%} of "
                    f"the CPU time of the benchmarks' nodes) during the {self.seconds:.0f} s "
                    "the benchmarks ran")
        return (f"other programs used {self.foreign_cpu:.1f} CPU-s ({self.share:.1%} of the "
                f"machine's {self.cores:g} cores) during the {self.seconds:.0f} s session")


def on_job_nodes(node_loads: list[dict], own_rate: float = 0.0) -> Load | None:
    """The load of the nodes the benchmark jobs ran on (each case's node_load), or
    None when no case measured its nodes (a local partition). Nodes on this machine's
    kernel (the emulated cluster) also run the session itself (ReFrame polling Slurm):
    its CPU time, at the session's average rate `own_rate`, is not other programs'."""
    loads = [x for x in node_loads if x and x.get("capacity_cpu", 0) > 0]
    if not loads:
        return None
    seconds = sum(x["wall"] for x in loads)
    capacity = sum(x["capacity_cpu"] for x in loads)
    foreign = sum(max(x["foreign_cpu"] - own_rate * x.get("wall_here", 0.0), 0.0)
                  for x in loads)
    return Load(seconds, foreign, capacity / max(seconds, 1e-9), JOB_NODES)


class LoadMeter:
    def __init__(self):
        self.t0, self.busy0, self.own0 = time.monotonic(), _busy_seconds(), _own_seconds()

    def stop(self) -> Load:
        busy, own = _busy_seconds() - self.busy0, _own_seconds() - self.own0
        seconds = time.monotonic() - self.t0
        self.own_rate = own / max(seconds, 1e-9)  # the session's own CPU-s per second
        return Load(seconds, max(busy - own, 0.0), os.cpu_count() or 1)


def record(path: Path, uuid: str, load: Load) -> None:
    data = loads(path)
    data[uuid] = {**asdict(load), "disturbed": load.disturbed}
    atomic_write(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def disturbed_uuids(path: Path) -> set[str]:
    """The sessions the record at `path` says other programs disturbed."""
    return {u for u, rec in loads(path).items() if isinstance(rec, dict) and rec.get("disturbed")}


def loads(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
