"""A per-build hang budget: what one build's hangs may cost a session.

An MPI that hangs (Debian's MPICH 4.0.2 in MPI_Finalize, docs/cluster.md) holds
its job until the time limit. Without a bound, a build that hangs in many test
cases costs the session one time limit each. So every build has a budget per
session (BuildCheck's `hang_budget`, e.g. `-S hang_budget=3m`, 0 for none; the
quick modes set 3 min, otherwise 20 min):

- a test case's time limit is cut to what is left of its build's budget (in
  whole minutes under Slurm, which counts time limits in minutes; in seconds on
  a partition without a scheduler);
- a job that ends TIMEOUT spends its time limit from the budget (noticed when
  the build's next test case starts: a timed-out case fails in ReFrame's run
  phase on some schedulers, where no later hook of its own runs);
- once less than that unit is left, the build's remaining test cases fail at
  once (`HangBudgetSpent`), naming the hangs that spent it.

So a build that hangs costs at most its budget (plus Slurm's time-limit
granularity, under a minute per hang). The state lives in this module, i.e. in
the ReFrame process: one session (re-runs and retries included), nothing on
disk, nothing shared between sessions.
"""

from __future__ import annotations

import math
import re

from reframe.core.exceptions import ReframeError

#: The budget when the session sets none (seconds).
DEFAULT = 20 * 60

#: build name -> [(test case, seconds its hang cost)]
_HANGS: dict[str, list[tuple[str, float]]] = {}
#: Jobs of test cases that started and may still time out: (build, test case, job).
_WATCHED: list[tuple[str, str, object]] = []
#: Job states of a job that has not ended yet ("" = not submitted or not polled yet).
_NOT_ENDED = {"", "None", "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED",
              "RESIZING", "SUSPENDED"}


class HangBudgetSpent(ReframeError):
    """A build's earlier hangs in this session spent its hang budget."""


def record_hang(build: str, case: str, seconds: float) -> None:
    _HANGS.setdefault(build, []).append((case, seconds))


def watch(build: str, case: str, job) -> None:
    """Count the job's time limit against the build when it ends TIMEOUT."""
    _WATCHED.append((build, case, job))


def settle() -> None:
    """Record the watched jobs that ended TIMEOUT; forget those that ended otherwise."""
    for item in list(_WATCHED):
        build, case, job = item
        state = str(getattr(job, "state", "") or "")
        if "TIMEOUT" in state:
            record_hang(build, case, getattr(job, "time_limit", 0) or 0)
        elif state in _NOT_ENDED:
            continue
        _WATCHED.remove(item)


def spent(build: str) -> float:
    return sum(s for _, s in _HANGS.get(build, []))


def hangs(build: str) -> list[tuple[str, float]]:
    return list(_HANGS.get(build, []))


def reset() -> None:
    _HANGS.clear()
    _WATCHED.clear()


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def seconds(text: str) -> float:
    """'3m', '1h30m', '90s', '90' -> seconds; '' -> DEFAULT."""
    text = text.strip()
    if not text:
        return DEFAULT
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms]?)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"hang_budget {text!r}: give a duration such as 3m, 1h30m, 90s, 0")
    return sum(float(n) * {"h": 3600, "m": 60}.get(u, 1) for n, u in parts)


def time_limit(build: str, budget_text: str, limit: float | None,
               unit: float = 60) -> float | None:
    """The time limit a test case of `build` gets: its own, cut to the whole `unit`s
    (seconds) left of the budget ('' = DEFAULT, '0' = none). Raises HangBudgetSpent
    when less than one unit is left."""
    budget = seconds(budget_text)
    if not budget:
        return limit
    settle()
    left = budget - spent(build)
    if left < unit:
        done = "; ".join(f"{case} ({minutes(s)})" for case, s in hangs(build))
        raise HangBudgetSpent(
            f"not run: {build} already hung {len(hangs(build))} time(s) in this session, "
            f"spending its hang budget of {minutes(budget)} (-S hang_budget=...): {done}")
    cut = math.floor(left / unit) * unit
    return cut if limit is None else min(limit, cut)
