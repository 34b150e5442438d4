"""What the ping-pong probe (reframe_checks/src/mpi_pingpong.c) printed: one
`MPIMATRIX pingpong label=<intra|inter> key=value ...` line per run."""

from __future__ import annotations

import re

_LINE = re.compile(r"^MPIMATRIX pingpong label=(\w+) (.*)$", re.M)


def pingpong_runs(text: str) -> dict[str, dict[str, str]]:
    """{label: {key: value}} of every run the output reports."""
    return {m.group(1): dict(kv.split("=", 1) for kv in m.group(2).split() if "=" in kv)
            for m in _LINE.finditer(text)}
