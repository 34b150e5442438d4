"""A results store of the experiments (`mpimatrix validate gate --results`), each report
file read once: its sessions oldest first, each with its confirmations (`*-confirm.json`,
by the UUID they confirm), and the sessions other programs disturbed. A live experiment
reads on with `update()` after each run: only the files written since are read."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..paths import reports_dir
from ..results.measurements import load
from ..results.reference_set import ReferenceSet
from ..results.sessions import SessionError, load_report, session_info
from ..run import machine
from ..run.selectors import select


@dataclass(frozen=True)
class StoredNight:
    """A stored session (a ReFrame report) and its confirmations, oldest round first;
    `tag`: what the experiment knows of it (its place, the step laid on it), handed back
    with its judgement."""

    report: dict
    confirmations: Sequence[dict] = ()
    tag: Any = field(default=None, compare=False)

    @property
    def uuid(self) -> str:
        return self.report["session_info"]["uuid"]

    @cached_property
    def injected(self) -> tuple[str, float] | None:
        """(build, level) the regression injector slowed in the session, None if nothing."""
        return injected_of(self.report)


def injected_of(report: dict) -> tuple[str, float] | None:
    """(build, level) the regression injector slowed in a session (the first injected
    test case's; level 0.0 when its spec names none), None if nothing."""
    for case in load(report).cases:
        if case.injected:
            m = re.search(r"clock=([\d.]+)", case.injected)
            return case.build, float(m.group(1)) if m else 0.0
    return None


def builds_of(report: dict) -> list[str]:
    """The builds with performance values (the others have nothing to slow down)."""
    return sorted({tc["build_name"] for r in report["runs"] for tc in r["testcases"]
                   if tc.get("build_name") not in (None, "<undefined>") and tc.get("perfvalues")})


class Store:
    """The report files of a results store, each read once (a store holds hundreds of
    confirmations)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._sessions: dict[str, dict] = {}  # file name: report
        self._confirms: dict[str, dict] = {}
        self.update()

    @property
    def is_store(self) -> bool:
        return (self.path / "reports").is_dir()

    def update(self) -> None:
        """Reads the report files written since the last read."""
        folder = self.path / "reports"
        for f in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            if f.name.startswith("latest") or f.name in self._sessions or f.name in self._confirms:
                continue
            into = self._confirms if f.name.endswith("-confirm.json") else self._sessions
            into[f.name] = load_report(f)

    def session_in(self, path: Path) -> dict:
        """The session of a report file of the store, read on (or read, outside it)."""
        self.update()
        return self._sessions.get(Path(path).name) or load_report(Path(path))

    @property
    def sessions(self) -> list[dict]:
        """The sessions (not their confirmations), oldest first: by their start, then by
        file name (which begins with the time)."""
        return [r for _, r in sorted(self._sessions.items(), key=lambda item: (
            item[1]["session_info"].get("time_start_unix") or 0, item[0]))]

    @property
    def confirmed(self) -> dict[str, list[dict]]:
        """Every confirmation by the UUID of the session it confirms ("" for none), in the
        order of their file names: the first round first."""
        out: dict[str, list[dict]] = {}
        for _, conf in sorted(self._confirms.items()):
            out.setdefault(session_info(conf).get("confirms") or "", []).append(conf)
        return out

    def confirmations(self, uuid: str) -> list[dict]:
        """The confirmations of one session, the first round first."""
        return self.confirmed.get(uuid, [])

    def nights(self, rounds: int | None = None) -> list[StoredNight]:
        """Each session, oldest first, with its confirmations (the first `rounds` of them,
        e.g. 1: as the gate's first choice of what to measure again took them; None:
        every round); tagged with its place in the store, 1 the oldest."""
        confirmed = self.confirmed
        return [StoredNight(r, confirmed.get(r["session_info"]["uuid"], [])[:rounds], i)
                for i, r in enumerate(self.sessions, 1)]

    def disturbed(self) -> set[str]:
        """The sessions other programs disturbed (`mpimatrix run` records them, and the
        live gate's watch rule skips them), read again at each call."""
        return machine.disturbed_uuids(self.path / "db" / "machine-load.json")

    def references(self) -> ReferenceSet:
        """The references `mpimatrix bless` wrote in the store."""
        return ReferenceSet.of_store(self.path)


def sessions_given(reports: Sequence[str], selectors: Sequence[str]) -> list[dict]:
    """The sessions of report files and of stored sessions' selectors (a UUID, its first
    characters, `latest`, a period: run/selectors.py); with neither, the latest run's
    report (SessionError when there is none)."""
    if not reports and not selectors:
        latest = reports_dir() / "latest.json"
        if not latest.exists():
            raise SessionError("give --session UUID or --report FILE (no "
                               f"{latest} yet: run `mpimatrix run` first)")
        return [load_report(latest)]
    stored = select(list(selectors)) if selectors else []  # every selector checked first
    return [*(load_report(Path(p)) for p in reports), *stored]
