"""A per-build hang budget: what one build's hangs may cost a session.

An MPI that hangs (Debian's MPICH 4.0.2 in MPI_Finalize, docs/cluster.md) holds
its job until the time limit. Without a bound, a build that hangs in many test
cases costs the session one time limit each. So every build has a budget per
session (BuildCheck's `hang_budget`, e.g. `-S hang_budget=3m`, 0 for none; the
quick modes set 3 min, otherwise 20 min):

- a test case's time limit is cut to what is left of its build's budget (in
  whole minutes: Slurm counts time limits in minutes);
- a job that ends TIMEOUT spends its time limit from the budget;
- once less than a minute is left, the build's remaining test cases fail at
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

#: Below this many seconds left, a build's test cases are not run any more.
MIN_LEFT = 60

#: build name -> [(test case, seconds its hang cost)]
_HANGS: dict[str, list[tuple[str, float]]] = {}


class HangBudgetSpent(ReframeError):
    """A build's earlier hangs in this session spent its hang budget."""


def record_hang(build: str, case: str, seconds: float) -> None:
    _HANGS.setdefault(build, []).append((case, seconds))


def spent(build: str) -> float:
    return sum(s for _, s in _HANGS.get(build, []))


def hangs(build: str) -> list[tuple[str, float]]:
    return list(_HANGS.get(build, []))


def reset() -> None:
    _HANGS.clear()


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


def time_limit(build: str, budget_text: str, limit: float | None) -> float | None:
    """The time limit a test case of `build` gets: its own, cut to the whole minutes
    left of the budget ('' = DEFAULT, '0' = none). Raises HangBudgetSpent when under
    MIN_LEFT is left."""
    budget = seconds(budget_text)
    if not budget:
        return limit
    left = budget - spent(build)
    if left < MIN_LEFT:
        done = "; ".join(f"{case} ({minutes(s)})" for case, s in hangs(build))
        raise HangBudgetSpent(
            f"not run: {build} already hung {len(hangs(build))} time(s) in this session, "
            f"spending its hang budget of {minutes(budget)} (-S hang_budget=...): {done}")
    cut = math.floor(left / 60) * 60
    return cut if limit is None else min(limit, cut)
