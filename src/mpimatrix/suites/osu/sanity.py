"""Decide whether an OSU run produced a complete, valid result, and say why not."""

from __future__ import annotations

import re

from ...units import human_size, version_tuple
from ..common import error_detail, impossible_values, missing_sizes_problem
from .catalogue import OsuBenchmark
from .output import OsuRun, missing_sizes


def osu_result_problems(run: OsuRun, bench: OsuBenchmark, ranks: int, expected: list[int],
                        validate: bool = False, exitcode: int | None = 0,
                        tolerate: tuple[str, ...] = (), osu_version: str = "") -> list[str]:
    """Everything wrong with this run; empty when it is a good result.

    expected: the sizes a complete table has; validate: -c was given;
    tolerate: regexes of runtime messages a known issue explains;
    osu_version: the version the install claims (checked against the title).
    """
    name = bench.binary
    errors = [e for e in run.errors if not any(re.search(t, e) for t in tolerate)]
    died = error_detail(errors)
    errs: list[str] = []
    if bench.kind == "hello":
        if run.hello_nprocs is None:
            errs.append(f"{name}: no 'This is a test with N processes' line{died}")
        elif run.hello_nprocs != ranks:
            errs.append(f"{name}: MPI_COMM_WORLD has {run.hello_nprocs} processes, "
                        f"expected {ranks}")
    elif bench.kind == "init":
        if run.init is None:
            errs.append(f"{name}: no 'nprocs: N, min: .. ms, max: .. ms, avg: .. ms' line{died}")
        elif int(run.init["nprocs"]) != ranks:
            errs.append(f"{name}: {int(run.init['nprocs'])} processes initialised, "
                        f"expected {ranks}")
        else:
            errs += impossible_values(name, None, [run.init], bench.metrics)
    else:
        table = run.table
        if table is None or not table.rows:
            what = "no result table" if table is None else "a header but no rows"
            errs.append(f"{name}: {what}{died}")
        else:
            errs += _table_problems(table, bench, expected, validate, died, name)
            errs += impossible_values(name, table, table.rows, bench.metrics)
    errs += [f"{name}: a row with an impossible size: {r}" for r in run.bad_rows[:3]]
    if errs:
        return errs
    if osu_version and run.version and \
            version_tuple(run.version)[:2] != version_tuple(osu_version)[:2]:
        errs.append(f"{name} says OSU v{run.version}, the install record says {osu_version}: "
                    "wrong binary picked up (PATH order?)")
    if errors:
        errs.append(f"{name}: complete output, but the run reported: {'; '.join(errors)}")
    elif exitcode not in (0, None) and not tolerate:
        errs.append(f"{name}: complete output, but the job exited with code {exitcode}")
    return errs


def _table_problems(table, bench: OsuBenchmark, expected: list[int], validate: bool,
                    died: str, name: str) -> list[str]:
    errs = []
    failed = table.failed_sizes() if validate else []
    missing = missing_sizes(table, expected) if bench.sized and expected else []
    if failed:
        sizes = ", ".join(human_size(s) for s in failed[:6]) + (" ..." if len(failed) > 6 else "")
        stop = (f"; OSU stopped there, {len(missing)} of {len(expected)} sizes not run"
                if missing else "")
        errs.append(f"{name}: data validation failed at {len(failed)} size(s): {sizes}{stop}")
    elif missing:
        cut = f"; last row cut short: {table.partial!r}" if table.partial else ""
        have = [s for s in table.sizes() if s < missing[0]]
        errs.append(missing_sizes_problem(name, have, missing, len(expected), cut + died))
    if validate and not failed and not table.validated:
        errs.append(f"{name}: validation asked for (-c) but the output has no "
                    "Pass/Fail column")
    return errs


def complete(run: OsuRun, bench: OsuBenchmark, expected: list[int]) -> bool:
    """The result is all there (a run may still hang after it): the init or hello
    line, or the table with every expected size."""
    if bench.kind == "init":
        return run.init is not None
    if bench.kind == "hello":
        return run.hello_nprocs is not None
    table = run.table
    if table is None or not table.rows:
        return False
    return not (bench.sized and expected and missing_sizes(table, expected))


def osu_curve(run: OsuRun) -> dict[str, list[dict[str, float]]]:
    """{"default": rows} like the IMB curves: canonical columns, the size under "size"."""
    if run.init is not None:
        return {"default": [dict(run.init)]}
    table = run.table
    return {"default": table.curve()} if table is not None else {}
