"""Decide whether an IMB run produced a complete result, and say why not."""

from __future__ import annotations

from .imb_catalogue import ImbBenchmark
from .imb_output import ImbRun, human_size, missing_sizes


def expected_tables(bench: ImbBenchmark) -> tuple[str, ...]:
    return bench.modes or ("",)


def problems(run: ImbRun, bench: ImbBenchmark, nprocs: int, sizes: list[int]) -> list[str]:
    name = f"IMB-{bench.suite} {bench.name}"
    if bench.name in run.invalid:
        return [f"{name}: IMB says the benchmark is invalid for {run.invalid[bench.name]} "
                "processes"]
    died = f" ({'; '.join(run.errors)})" if run.errors else ""
    errs = []
    for mode in expected_tables(bench):
        label = f"{name}{' ' + mode if mode else ''}"
        table = run.find(bench.name, nprocs, mode or None)
        if table is None or not table.rows:
            errs.append(f"{label}: no result table for {nprocs} processes{died}")
            continue
        if not bench.sized or bench.kind == "atomic":
            continue
        want = bench.table_sizes(sizes)
        missing = missing_sizes(table, want)
        if not missing:
            continue
        have = table.sizes()
        if max(have, default=-1) < missing[0]:
            after = f"after {human_size(have[-1])}" if have else "before the first size"
            errs.append(f"{label} died at {human_size(missing[0])} ({missing[0]} B): table "
                        f"stopped {after}, {len(missing)} of {len(want)} sizes missing"
                        f"{died}")
        else:
            errs.append(f"{label}: sizes {', '.join(map(human_size, missing))} missing "
                        f"from the table{died}")
    if not errs and not run.finalized:
        errs.append(f"{name}: the run ended before MPI_Finalize{died}")
    return errs


def curve(run: ImbRun, bench: ImbBenchmark, nprocs: int) -> dict[str, list[dict]]:
    out = {}
    for mode in expected_tables(bench):
        table = run.find(bench.name, nprocs, mode or None)
        if table is not None:
            out[mode or "default"] = table.curve()
    return out
