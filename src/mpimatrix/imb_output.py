"""Parse Intel MPI Benchmarks output (IMB-MPI1, -P2P, -NBC, -RMA).

A run prints one table per benchmark, process count and (RMA) mode:

    # Benchmarking PingPong
    # #processes = 2
    #    MODE: NON-AGGREGATE          (RMA only)
           #bytes #repetitions      t[usec]   Mbytes/sec
                0         1000         0.21         0.00

Tables without a size column (Barrier, Ibarrier) have one row. A run that
dies mid-table leaves the table short: `missing_sizes` tells which sizes never
came, which is how a crash at some message size is reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_BENCH = re.compile(r"^#\s*Benchmarking\s+(\S+)")
_NPROCS = re.compile(r"^#\s*#processes\s*=\s*(\d+)")
_MODE = re.compile(r"^#\s*MODE:\s*(\S+)")
_INVALID = re.compile(r"^#\s*!!\s*Benchmark\s+(\S+)\s+is invalid for (\d+) processes")

# Messages MPI runtimes and IMB print when a run goes wrong.
ERROR_PATTERNS = (
    r"Fatal error",
    r"BAD TERMINATION",
    r"exited on signal",
    r"Segmentation fault",
    r"MPI_ABORT was invoked",
    r"Abort\(\d+\)",
    r"ORTE has lost communication",
    r"PRTE has lost communication",
    r"srun: error:",
    r"killed by signal",
    r"KILLED BY SIGNAL",
    r"Primary job\s+terminated normally, but \d+ process returned",
)
FINALIZE_MARK = "# All processes entering MPI_Finalize"


@dataclass
class ImbTable:
    benchmark: str
    nprocs: int
    mode: str = ""  # RMA: AGGREGATE / NON-AGGREGATE
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, float]] = field(default_factory=list)

    @property
    def sized(self) -> bool:
        return "#bytes" in self.columns

    def sizes(self) -> list[int]:
        return [int(r["#bytes"]) for r in self.rows] if self.sized else []

    def row(self, size: int | None) -> dict[str, float] | None:
        if not self.sized or size is None:
            return self.rows[0] if self.rows else None
        for r in self.rows:
            if int(r["#bytes"]) == size:
                return r
        return None

    def curve(self) -> list[dict[str, float]]:
        return [dict(r) for r in self.rows]


@dataclass
class ImbRun:
    tables: list[ImbTable]
    invalid: dict[str, int]  # benchmark -> process count IMB refused
    finalized: bool
    errors: list[str]

    def find(self, benchmark: str, nprocs: int | None = None,
             mode: str | None = None) -> ImbTable | None:
        for t in self.tables:
            if t.benchmark != benchmark:
                continue
            if nprocs is not None and t.nprocs != nprocs:
                continue
            if mode is not None and t.mode and t.mode != mode:
                continue
            return t
        return None


def parse(text: str) -> ImbRun:
    tables: list[ImbTable] = []
    invalid: dict[str, int] = {}
    current: ImbTable | None = None
    pending_bench: str | None = None
    pending_np = 0
    pending_mode = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        m = _BENCH.match(line)
        if m:
            pending_bench, pending_np, pending_mode, current = m.group(1), 0, "", None
            continue
        m = _INVALID.match(line)
        if m:
            invalid[m.group(1)] = int(m.group(2))
            continue
        if pending_bench is not None and current is None:
            m = _NPROCS.match(line)
            if m:
                pending_np = int(m.group(1))
                continue
            m = _MODE.match(line)
            if m:
                pending_mode = m.group(1)
                continue
            stripped = line.strip()
            if stripped.startswith("#bytes") or stripped.startswith("#repetitions"):
                current = ImbTable(pending_bench, pending_np, pending_mode, stripped.split())
                tables.append(current)
            continue
        if current is not None:
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                current = None  # a blank or comment line ends the table
                continue
            try:
                values = [float(f) for f in fields]
            except ValueError:
                # A runtime message in the middle of a table: the table ends here.
                current = None
                continue
            if len(values) != len(current.columns):
                current = None
                continue
            current.rows.append(dict(zip(current.columns, values, strict=False)))
    errors = sorted({m.group(0) for pat in ERROR_PATTERNS
                     for m in re.finditer(pat, text)})
    return ImbRun(tables, invalid, FINALIZE_MARK in text, errors)


def missing_sizes(table: ImbTable, expected: list[int]) -> list[int]:
    have = set(table.sizes())
    return [s for s in expected if s not in have]


def human_size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"
