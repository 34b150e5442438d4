"""For `mpimatrix changes` (cron): which steps earlier runs already reported (the state
kept beside the results, so that a step is NEW once), and what changed in a step's
build's software (the steps themselves: history.steps_of)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..atomic import atomic_write
from . import history
from .changed_since import no_comparison, session_changes
from .measurements import Session
from .software_diff import changes_for
from .software_store import Store


@dataclass(frozen=True)
class Reported:
    """The steps earlier runs printed (a JSON list of their idents at `path`)."""

    path: Path

    def idents(self) -> set[str]:
        try:
            return set(json.loads(self.path.read_text()))
        except (OSError, ValueError):
            return set()

    def new(self, changes: list[history.Change]) -> list[history.Change]:
        seen = self.idents()
        return [c for c in changes if c.ident not in seen]

    def remember(self, changes: list[history.Change]) -> None:
        idents = self.idents() | {c.ident for c in changes}
        atomic_write(self.path, json.dumps(sorted(idents), indent=1) + "\n")


def step_software(c: history.Change, sessions: Mapping[str, Session],
                  store: Store | None = None) -> list[str]:
    """What changed in the build's software between the sessions before and after a
    step (for the host's steps: the machine's and every build's)."""
    before = sessions.get(c.series.points[c.index - 1].session)
    after = sessions.get(c.point.session)
    if before is None or after is None:
        return []
    store = store or Store()
    every = session_changes(before, after, store=store)
    at = f"session {before.uuid[:8]} -> {after.uuid[:8]}"
    if every is None:
        return [f"      software {at}: unknown ({no_comparison(before, after, store)})"]
    mine = every if c.series.build == history.HOST else changes_for(every, c.series.build)
    if not mine:
        return [f"      software {at}: no recorded software change"]
    return [f"      software {at}: changed"] + [f"        {x.line()}" for x in mine]
