"""Was the machine quiet while a session ran? CPU time used by anything but the
session itself (its ReFrame process and every job ReFrame ran), from /proc/stat.

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


@dataclass
class Load:
    seconds: float  # wall time
    foreign_cpu: float  # CPU seconds of other programs
    cores: int

    @property
    def share(self) -> float:
        return self.foreign_cpu / max(self.seconds * self.cores, 1e-9)

    @property
    def disturbed(self) -> bool:
        return self.share > MAX_FOREIGN_SHARE

    def text(self) -> str:
        return (f"other programs used {self.foreign_cpu:.1f} CPU-s ({self.share:.1%} of the "
                f"machine's {self.cores} cores) during the {self.seconds:.0f} s session")


class LoadMeter:
    def __init__(self):
        self.t0, self.busy0, self.own0 = time.monotonic(), _busy_seconds(), _own_seconds()

    def stop(self) -> Load:
        busy, own = _busy_seconds() - self.busy0, _own_seconds() - self.own0
        return Load(time.monotonic() - self.t0, max(busy - own, 0.0), os.cpu_count() or 1)


def record(path: Path, uuid: str, load: Load) -> None:
    data = loads(path)
    data[uuid] = {**asdict(load), "disturbed": load.disturbed}
    atomic_write(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def loads(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
