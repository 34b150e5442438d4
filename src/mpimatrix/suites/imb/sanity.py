"""Decide whether an IMB run produced a complete result, and say why not."""

from __future__ import annotations

from ...units import human_size
from ..common import error_detail, impossible_values, missing_sizes_problem
from .catalogue import ImbBenchmark
from .output import ImbRun, missing_sizes


def expected_tables(bench: ImbBenchmark) -> tuple[str, ...]:
    return bench.modes or ("",)


def imb_result_problems(run: ImbRun, bench: ImbBenchmark, nprocs: int,
                        sizes: list[int]) -> list[str]:
    """Everything wrong with this run of one benchmark on `nprocs` ranks; empty when it
    is a good result."""
    name = f"IMB-{bench.suite} {bench.name}"
    nprocs = bench.table_procs(nprocs)
    if bench.name in run.invalid:
        return [f"{name}: IMB says the benchmark is invalid for {run.invalid[bench.name]} "
                "processes"]
    died = error_detail(run.errors)
    unfinished = "" if run.finalized else "; the run ended before MPI_Finalize"
    errs = []
    for mode in expected_tables(bench):
        label = f"{name}{' ' + mode if mode else ''}"
        table = run.find(bench.name, nprocs, mode or None)
        if table is None or not table.rows:
            errs.append(f"{label}: no result table for {nprocs} processes{unfinished}{died}")
            continue
        errs += impossible_values(label, table, table.rows, bench.metrics, "#bytes")
        if not bench.sized or bench.kind == "atomic":
            continue
        want = bench.table_sizes(sizes)
        missing = missing_sizes(table, want)
        if table.timed_out_at is not None:
            errs.append(f"{label}: IMB's own time budget (-time, seconds per size x sizes) ran "
                        f"out at {human_size(table.timed_out_at)}: the run was too slow here "
                        f"(a loaded or oversubscribed node?); {len(missing)} of {len(want)} "
                        "sizes missing")
        elif missing:
            errs.append(missing_sizes_problem(label, table.sizes(), missing, len(want), died))
    errs += [f"{name}: a row with an impossible size: {r}" for r in run.bad_rows[:3]]
    if not errs and not run.finalized:
        errs.append(f"{name}: the run ended before MPI_Finalize{died}")
    return errs


def imb_curve(run: ImbRun, bench: ImbBenchmark, nprocs: int) -> dict[str, list[dict]]:
    out = {}
    nprocs = bench.table_procs(nprocs)
    for mode in expected_tables(bench):
        table = run.find(bench.name, nprocs, mode or None)
        if table is not None:
            out[mode or "default"] = table.curve()
    return out
