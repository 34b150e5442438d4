"""Figures are drawn last and side by side: the sections put `Job`s where their plots
go, `resolve` draws them all in worker processes (matplotlib spends its time drawing
text in one thread; the machine has cores) and puts the plots in their place.

MPIMATRIX_REPORT_JOBS=N sets the number of processes (default: the cores, at most 4;
1 draws in this process).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from dataclasses import dataclass

from .figures import Plot


@dataclass
class Job:
    """A figure to draw: fn(*args) -> Plot | None."""

    fn: Callable
    args: tuple

    def __call__(self) -> Plot | None:
        return self.fn(*self.args)


#: The jobs of the resolve() under way: forked workers inherit them, nothing is pickled
#: on the way in.
_PENDING: list[Job] = []


def _draw(i: int) -> Plot | None:
    return _PENDING[i]()


def workers() -> int:
    env = os.environ.get("MPIMATRIX_REPORT_JOBS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(4, os.cpu_count() or 1))


def draw(jobs: list[Job]) -> list[Plot | None]:
    n = min(workers(), len(jobs))
    if n <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [job() for job in jobs]
    _PENDING[:] = jobs
    try:
        with multiprocessing.get_context("fork").Pool(n) as pool:
            return pool.map(_draw, range(len(jobs)), chunksize=1)
    finally:
        _PENDING.clear()


def resolve(ctx: dict) -> list[Plot]:
    """Draw every Job in the context's values (a Job or a list of them), in place; the
    plots, in the order of the context."""
    slots = []
    for key, value in ctx.items():
        if isinstance(value, Job):
            slots.append((key, [value], False))
        elif isinstance(value, list) and value and all(isinstance(v, Job) for v in value):
            slots.append((key, value, True))
    drawn = iter(draw([job for _, jobs, _ in slots for job in jobs]))
    every = []
    for key, jobs, many in slots:
        plots = [p for p in (next(drawn) for _ in jobs) if p is not None]
        ctx[key] = plots if many else (plots[0] if plots else None)
        every += plots
    return every
