"""What the benchmark suites share: performance metrics, result tables, the
messages of a run that went wrong, and how an incomplete run is described."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from ..units import human_size, is_share

#: Reductions work on 4-byte elements (MPI_FLOAT): sizes round up to whole floats.
REDUCTIONS = frozenset({
    "allreduce", "reduce", "reduce_local", "reduce_scatter", "reduce_scatter_block",
    "iallreduce", "ireduce", "ireduce_scatter", "accumulate", "get_accumulate"})


def is_reduction(benchmark: str) -> bool:
    return benchmark.lower() in REDUCTIONS


@dataclass(frozen=True)
class Metric:
    """One performance variable read from a result table."""

    name: str  # variable name, e.g. latency_8B
    quantity: str  # what it is, a canonical column name: latency, bandwidth, t_avg ...
    columns: tuple[str, ...]  # table columns holding it; the first one present is used
    size: int | None  # message size in bytes; None: the table's first (only) row
    unit: str
    higher_is_better: bool = False

    @property
    def column(self) -> str:
        return self.columns[0]

    def info(self) -> dict[str, str]:
        """The metric as data for the run record (sizes and units travel with the value)."""
        out = {"quantity": self.quantity, "unit": self.unit,
               "better": "higher" if self.higher_is_better else "lower"}
        if self.size is not None:
            out["size"] = str(self.size)
        return out


class Table(Protocol):
    def row(self, size: int | None) -> dict[str, float] | None: ...


def metric_value(table: Table | None, metric: Metric) -> float | None:
    """The metric's value in a parsed table, or None if the table lacks it."""
    row = table.row(metric.size) if table is not None else None
    if row is None:
        return None
    for col in metric.columns:
        if col in row:
            return row[col]
    return None


# -- what a run that went wrong prints ----------------------------------------------------
#: Messages MPI runtimes and launchers print when a run goes wrong.
MPI_ERROR_PATTERNS = (
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
    r"execvp error on file \S+",
    r"\[proxy:\S+\] HYDU_create_process \(\S+\): execvp error",
)


def runtime_errors(text: str, patterns: tuple[str, ...] = MPI_ERROR_PATTERNS) -> list[str]:
    """The distinct error messages of `patterns` found in a run's output."""
    return sorted({m.group(0) for pat in patterns for m in re.finditer(pat, text)})


def measured_columns(metrics: tuple[Metric, ...]) -> list[str]:
    """The columns of times and rates (percentages may be anything from 0 up)."""
    return sorted({c for m in metrics if not is_share(m.unit) for c in m.columns})


def impossible_values(label: str, table: Table, rows: list[dict[str, float]],
                      metrics: tuple[Metric, ...], size_key: str = "size") -> list[str]:
    """Values no benchmark can measure: a NaN, infinite or negative time or rate
    anywhere in the table, or a metric's own value of zero (a bandwidth of 0.00 at
    8 B is IMB's rounding; at 4 MiB it is a broken timer)."""
    bad = []
    for r in rows:
        for c in measured_columns(metrics):
            v = r.get(c)
            if v is not None and not (0 <= v < float("inf")):
                size = f" at {human_size(int(r[size_key]))}" if size_key in r else ""
                bad.append(f"{c}={v}{size}")
    for m in metrics:
        v = metric_value(table, m)
        if not is_share(m.unit) and v == 0:
            bad.append(f"{m.name}=0")
    if not bad:
        return []
    more = f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""
    return [f"{label}: impossible values {', '.join(bad[:3])}{more}: the benchmark's timer "
            "or output is broken"]


def missing_sizes_problem(label: str, have: list[int], missing: list[int], expected: int,
                          detail: str = "") -> str:
    """'X died at 2KiB (2048 B): table stopped after 1KiB, ...', or the sizes missing
    from the middle of a table."""
    if max(have, default=-1) < missing[0]:
        after = f"after {human_size(have[-1])}" if have else "before the first size"
        return (f"{label} died at {human_size(missing[0])} ({missing[0]} B): table stopped "
                f"{after}, {len(missing)} of {expected} sizes missing{detail}")
    return (f"{label}: sizes {', '.join(map(human_size, missing))} missing from the "
            f"table{detail}")


def error_detail(errors: list[str]) -> str:
    """' (msg; msg)' to append to a problem, or ''."""
    return f" ({'; '.join(errors)})" if errors else ""


def stderr_tail(stderr: str, lines: int = 3) -> str:
    """The last lines of a job's stderr, for a failure message ('' when empty)."""
    tail = [ln.strip() for ln in stderr.strip().splitlines()[-lines:] if ln.strip()]
    return "stderr: " + " / ".join(tail) if tail else ""
