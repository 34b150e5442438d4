"""Parse Intel MPI Benchmarks output (IMB-MPI1, -P2P, -NBC, -RMA, -EXT, -IO).

A run prints one table per benchmark, process count and (RMA, EXT, IO) mode:

    # Benchmarking PingPong
    # #processes = 2
    #    MODE: NON-AGGREGATE          (RMA, EXT and IO only)
           #bytes #repetitions      t[usec]   Mbytes/sec
                0         1000         0.21         0.00

IMB-IO's single-process benchmarks (S_Write_Indv ...) say "#processes = 1" and
"( 1 additional process waiting in MPI_Barrier)" whatever the rank count; its
parallel ones have t_min/t_max/t_avg and Mbytes/sec. IMB-EXT rounds sizes up to
4 B (1 and 2 B print as 4 B rows, as reductions do): the first row of a size is the
one read. IMB-IO's Read benchmarks print an AGGREGATE table only.

Tables without a size column (Barrier, Ibarrier) have one row. A run that
dies mid-table leaves the table short: `missing_sizes` tells which sizes never
came, which is how a crash at some message size is reported.

Tables come from the program's stdout only; runtime error messages from stdout
and stderr. A row whose size is not a whole number of bytes (nan, inf, 1e400)
is not a row: it is kept in `bad_rows` for the sanity check to report.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..common import runtime_errors

_BENCH = re.compile(r"^#\s*Benchmarking\s+(\S+)")
_NPROCS = re.compile(r"^#\s*#processes\s*=\s*(\d+)")
_MODE = re.compile(r"^#\s*MODE:\s*(\S+)")
_TIME_OUT = re.compile(r"^\s*(\d+)\s+time-out\b")
_INVALID = re.compile(r"^#\s*!!\s*Benchmark\s+(\S+)\s+is invalid for (\d+) processes")

FINALIZE_MARK = "# All processes entering MPI_Finalize"


@dataclass
class ImbTable:
    benchmark: str
    nprocs: int
    mode: str = ""  # RMA, EXT, IO: AGGREGATE / NON-AGGREGATE
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, float]] = field(default_factory=list)
    #: the size at which IMB stopped the table because its time budget (-time) ran out
    timed_out_at: int | None = None

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
        """The rows with canonical column names (size, t_avg, bandwidth, ...)."""
        return [{canonical_column(k): v for k, v in r.items()} for r in self.rows]


def canonical_column(header: str) -> str:
    """'#bytes' -> 'size', 't_avg[usec]' -> 't_avg', 'Mbytes/sec' -> 'bandwidth'."""
    return {"#bytes": "size", "#repetitions": "repetitions", "Mbytes/sec": "bandwidth",
            "Msg/sec": "message_rate"}.get(header, re.sub(r"\[.*\]$", "", header))


@dataclass
class ImbRun:
    tables: list[ImbTable]
    invalid: dict[str, int]  # benchmark -> process count IMB refused
    finalized: bool
    errors: list[str]
    bad_rows: list[str] = field(default_factory=list)  # "benchmark: row text"

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


def parse(stdout: str, stderr: str = "") -> ImbRun:
    tables: list[ImbTable] = []
    bad_rows: list[str] = []
    invalid: dict[str, int] = {}
    current: ImbTable | None = None
    pending_bench: str | None = None
    pending_np = 0
    pending_mode = ""
    for raw in stdout.splitlines():
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
            m = _TIME_OUT.match(line)
            if m:
                current.timed_out_at = int(m.group(1))
                current = None
                continue
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
            row = dict(zip(current.columns, values, strict=True))
            size = row.get("#bytes", 0.0)
            if not (math.isfinite(size) and size >= 0 and size == int(size)):
                bad_rows.append(f"{current.benchmark}: {line.strip()}")
                continue
            current.rows.append(row)
    errors = runtime_errors(stdout + "\n" + stderr)
    return ImbRun(tables, invalid, FINALIZE_MARK in stdout, errors, bad_rows)


def missing_sizes(table: ImbTable, expected: list[int]) -> list[int]:
    have = set(table.sizes())
    return [s for s in expected if s not in have]
