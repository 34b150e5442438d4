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
from typing import Any

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


#: The template context: what the page's templates (page.py) read, by name; each section
#: of assemble.py gives its part. Plot jobs (Job, lists of them) in it are drawn by Drawer
#: and replaced by their plots.
Context = dict[str, Any]


def workers() -> int:
    env = os.environ.get("MPIMATRIX_REPORT_JOBS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(4, os.cpu_count() or 1))


def _jobs_in(ctx: Context, keys) -> list[tuple[str, list[Job], bool]]:
    slots = []
    for key in keys:
        value = ctx[key]
        if isinstance(value, Job):
            slots.append((key, [value], False))
        elif isinstance(value, list) and value and all(isinstance(v, Job) for v in value):
            slots.append((key, value, True))
    return slots


class Drawer:
    """Draws the context's figures in worker processes a batch at a time, as soon as a
    section has made them, while the caller goes on with the next sections (the
    current session's figures need nothing of the history); `finish` draws what is left
    and puts every plot in its place. The first batch reaches the forked workers by
    inheritance, later ones pickled."""

    def __init__(self) -> None:
        self._batches: list = []  # (slots, pending result or None, jobs)
        self._pool: Any = None  # multiprocessing.pool.Pool
        self._sent: set[str] = set()

    def start(self, ctx: Context) -> None:
        """Begin drawing the context's Jobs not begun yet."""
        slots = _jobs_in(ctx, [k for k in ctx if k not in self._sent])
        self._sent.update(ctx)
        jobs = [job for _, js, _ in slots for job in js]
        if not jobs:
            return
        pending = None
        if workers() > 1 and "fork" in multiprocessing.get_all_start_methods():
            if self._pool is None:
                _PENDING[:] = jobs
                self._pool = multiprocessing.get_context("fork").Pool(workers())
                pending = self._pool.map_async(_draw, range(len(jobs)), chunksize=1)
            else:
                pending = self._pool.map_async(_call, jobs, chunksize=1)
        self._batches.append((slots, pending, jobs))

    def finish(self, ctx: Context) -> list[Plot]:
        """Every plot drawn and in its place; the plots in the order of the context."""
        try:
            self.start(ctx)
            for slots, pending, jobs in self._batches:
                drawn = iter(pending.get() if pending is not None else [j() for j in jobs])
                for key, js, many in slots:
                    plots = [p for p in (next(drawn) for _ in js) if p is not None]
                    ctx[key] = plots if many else (plots[0] if plots else None)
        except BaseException:
            self.stop()
            raise
        self.stop()
        drawn_keys = {key for slots, _, _ in self._batches for key, _, _ in slots}
        every: list[Plot] = []
        for key in ctx:
            if key in drawn_keys:
                value = ctx[key]
                every += value if isinstance(value, list) else [value] if value else []
        return every


    def stop(self) -> None:
        """Stop the workers (a report that failed leaves none behind)."""
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None
        _PENDING.clear()


def _call(job: Job) -> Plot | None:
    return job()


def resolve(ctx: Context) -> list[Plot]:
    """Draw every Job in the context's values (a Job or a list of them), in place; the
    plots, in the order of the context."""
    return Drawer().finish(ctx)
