"""Parse the output of an NPB 3.x MPI benchmark (bt.S.x, is.A.x, ...).

A run prints a header (`NAS Parallel Benchmarks 3.4 -- CG Benchmark`, the size and
class, the process count), its progress, then a summary block:

     CG Benchmark Completed.
     Class           =                        S
     Size            =                     1400
     Iterations      =                       15
     Time in seconds =                     0.38
     Total processes =                        2
     Active procs    =                        2
     Mop/s total     =                   177.65
     Mop/s/process   =                    88.82
     Operation type  =           floating point
     Verification    =               SUCCESSFUL

A run that died prints no summary (or part of one); NPB's own errors ("ERROR: Number
of processes (3) is not a power of two") and the MPI runtime's are collected.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..common import runtime_errors

HEADER = re.compile(r"NAS Parallel Benchmarks\s+(\S+)\s+--\s+(\w+)\s+Benchmark")
HEADER_CLASS = re.compile(r"\(class\s+(\w)\)")
COMPLETED = re.compile(r"^\s*(\w+) Benchmark Completed", re.M)
FIELD = re.compile(r"^\s*([A-Za-z][A-Za-z/ ]*?)\s*=\s*(.*?)\s*$")
#: NPB's own complaints (a process count the kernel cannot use, a missing input).
NPB_ERRORS = re.compile(r"^\s*(ERROR:.*?|.*\bnot a power of two.*?|.*\bmust be a square.*?)\s*$",
                        re.M)

#: Summary fields: NPB's label -> (attribute, type).
FIELDS = {
    "Class": ("klass", str),
    "Size": ("size", str),
    "Iterations": ("iterations", int),
    "Time in seconds": ("time", float),
    "Total processes": ("total_processes", int),
    "Active procs": ("active_processes", int),
    "Mop/s total": ("mops_total", float),
    "Mop/s/process": ("mops_per_process", float),
    "Operation type": ("operation", str),
    "Verification": ("verification", str),
    "Version": ("version", str),
}


def _number(kind, text: str):
    try:
        return kind(text) if kind is int else float(text.replace("D", "E"))
    except ValueError:
        return None


@dataclass
class NpbRun:
    benchmark: str = ""  # "CG": the summary's, else the header's
    version: str = ""
    header_class: str = ""  # "(class S)" of the header: printed before the work
    klass: str = ""
    size: str = ""  # "1400", "12x12x12"
    iterations: int | None = None
    time: float | None = None  # seconds (NPB prints 2 decimals: IS class S reads 0.00)
    total_processes: int | None = None
    active_processes: int | None = None
    mops_total: float | None = None
    mops_per_process: float | None = None
    operation: str = ""
    verification: str = ""  # SUCCESSFUL, UNSUCCESSFUL, "" (not printed)
    completed: bool = False  # "<X> Benchmark Completed" was printed
    errors: list[str] = field(default_factory=list)
    last_line: str = ""  # the last line of output (where a run that died stopped)

    @property
    def verified(self) -> bool:
        return self.verification == "SUCCESSFUL"

    @property
    def finished(self) -> bool:
        """The summary is there up to its verdict: everything NPB had to print."""
        return self.completed and bool(self.verification)

    def row(self, size: int | None = None) -> dict[str, float] | None:
        """The values as one table row (suites.common.metric_value reads it)."""
        values = {"time": self.time, "mops_total": self.mops_total,
                  "mops_per_process": self.mops_per_process}
        out = {k: v for k, v in values.items() if v is not None and not math.isnan(v)}
        return out or None

    def values(self) -> dict[str, float | int | str | None]:
        """Everything the summary said, for the run record."""
        return {a: getattr(self, a) for a, _ in FIELDS.values()}


def parse(stdout: str, stderr: str = "") -> NpbRun:
    run = NpbRun()
    m = HEADER.search(stdout)
    if m:
        run.version, run.benchmark = m.group(1), m.group(2).upper()
    m = HEADER_CLASS.search(stdout)
    if m:
        run.header_class = m.group(1)
    done = COMPLETED.search(stdout)
    if done:
        run.completed = True
        run.benchmark = done.group(1).upper()
        for line in stdout[done.end():].splitlines():
            f = FIELD.match(line)
            if not f or f.group(1) not in FIELDS:
                continue
            attr, kind = FIELDS[f.group(1)]
            value = f.group(2)
            if kind is str:
                setattr(run, attr, re.sub(r"\s+", "", value) if attr == "size" else value)
            else:
                setattr(run, attr, _number(kind, value))
    text = f"{stdout}\n{stderr}"
    run.errors = sorted({*runtime_errors(text), *(e.strip() for e in NPB_ERRORS.findall(text))})
    lines = [ln.strip() for ln in stdout.strip().splitlines() if ln.strip()]
    run.last_line = lines[-1] if lines else ""
    return run
