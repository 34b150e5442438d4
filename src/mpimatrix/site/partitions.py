"""Choosing partitions: MPIMATRIX_PARTITIONS (`mpimatrix run --partition REGEX`).

ReFrame 4.10's `-p` is ignored under `--mode` (the option's default `.*` stays
in the list the mode's options start) and `--system` takes one partition, so
builds (MPIMATRIX_ONLY, builds/sources.py) and partitions are chosen in the
generated configuration: a partition stays when one of the regular expressions
(one per line) matches `system:partition` (re.search: `compute$` keeps
`vcluster:compute`, not `vcluster:compute_mpirun`). A system left without
partitions is left out; `check_current_system` tells before ReFrame starts when
that would be the system of this host (ReFrame would then pick another one).
"""

from __future__ import annotations

import os
import re
import socket

from ..builds.record import BuildError
from ..builds.sources import regex_lines

PARTITIONS_ENV = "MPIMATRIX_PARTITIONS"


def partition_patterns(text: str | None = None) -> list[re.Pattern]:
    text = os.environ.get(PARTITIONS_ENV, "") if text is None else text
    return regex_lines(text, f"--partition / {PARTITIONS_ENV}")


def full_names(system: dict) -> list[str]:
    return [f"{system['name']}:{p['name']}" for p in system["partitions"]]


def keep_partitions(systems: list[dict], pats: list[re.Pattern] | None = None) -> list[dict]:
    """The systems with only the chosen partitions (all without patterns)."""
    pats = partition_patterns() if pats is None else pats
    if not pats:
        return systems
    out = []
    for s in systems:
        parts = [p for p, full in zip(s["partitions"], full_names(s), strict=True)
                 if any(pat.search(full) for pat in pats)]
        if parts:
            out.append({**s, "partitions": parts})
    return out


def current_system(systems: list[dict], hostname: str | None = None) -> dict | None:
    """The system ReFrame picks on this host: the first whose hostnames match."""
    hostname = hostname or socket.gethostname()
    for s in systems:
        if any(re.search(h, hostname) for h in s.get("hostnames", [])):
            return s
    return None


def check_current_system(systems: list[dict], hostname: str | None = None) -> None:
    """Raise BuildError when the patterns leave this host's system no partition."""
    pats = partition_patterns()
    here = current_system(systems, hostname)
    if not pats or here is None or keep_partitions([here], pats):
        return
    raise BuildError(f"--partition {' '.join(p.pattern for p in pats)} matches none of the "
                     f"partitions of this host's system: {', '.join(full_names(here))}")
