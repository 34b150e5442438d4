"""Decide whether an NPB run is a result, and say why not. NPB verifies its own answer
against the class's reference values: a run that says anything but `Verification =
SUCCESSFUL` computed a wrong answer, which is a failure, never a value."""

from __future__ import annotations

import math

from ..common import error_detail
from .catalogue import NpbBenchmark
from .output import NpbRun


def npb_result_problems(run: NpbRun, bench: NpbBenchmark, ranks: int) -> list[str]:
    """Everything wrong with this run; empty when it is a good result."""
    name = f"NPB {bench.name}"
    died = error_detail(run.errors)
    if not run.completed:
        where = f" (last line: {run.last_line!r})" if run.last_line else " (no output)"
        return [f"{name}: the run ended before NPB's results{where}{died}"]
    errs = []
    if run.benchmark and run.benchmark != bench.kernel.name:
        errs.append(f"{name}: the program ran {run.benchmark}, not {bench.kernel.name}")
    if run.klass != bench.klass:
        errs.append(f"{name}: the program ran class {run.klass or '?'}, not {bench.klass} "
                    f"(a binary of another class?)")
    if not run.verification:
        errs.append(f"{name}: NPB printed no verification{died}")
    elif not run.verified:
        errs.append(f"{name}: Verification = {run.verification}: NPB's answer differs from "
                    f"the class {run.klass} reference (a wrong result){died}")
    if run.total_processes != ranks:
        errs.append(f"{name}: {run.total_processes} processes ran, the placement has {ranks}")
    elif run.active_processes is not None and run.active_processes != run.total_processes:
        errs.append(f"{name}: only {run.active_processes} of {run.total_processes} processes "
                    f"worked ({bench.kernel.name} needs {bench.kernel.rule})")
    mops, time = run.mops_total, run.time
    if mops is None or time is None:
        errs.append(f"{name}: no {'Mop/s total' if mops is None else 'time'} in the summary")
    elif not (0 < mops < math.inf) or not (0 <= time < math.inf):
        errs.append(f"{name}: impossible values Mop/s total={mops}, time={time} s: the "
                    "benchmark's timer or output is broken")
    return errs

