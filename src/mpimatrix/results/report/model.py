"""The sessions of a report, in the shape the pages need.

A report covers the sessions of one system. The newest session is the *current* one:
the curves, layouts, build-vs-build view, failures and cost per build describe it (its
runs are the repetitions: `--mode compare|acceptance` run 3 interleaved passes). All
sessions make the trends and the cost per session.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from dataclasses import dataclass, field, fields

from ..sessions import (
    SessionError,
    build_label,
    check_label,
    defined,
    session_info,
    session_mode,
)


def from_mapping(cls, item):
    """A dataclass instance from itself, or from a dict holding its field names (other
    keys ignored): what the seams accept."""
    if isinstance(item, cls):
        return item
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in dict(item).items() if k in names})


@dataclass(frozen=True, order=True)
class Line:
    """One line of a plot: a build on a partition."""

    build: str
    partition: str  # system:partition

    def label(self, many_partitions: bool) -> str:
        return f"{self.build} ({self.partition.split(':', 1)[-1]})" if many_partitions \
            else self.build


@dataclass
class Case:
    """One attempt of one test case: a test case record of one run of a session."""

    tc: dict
    session: str
    run: int  # index of the run in the session: the repetition

    @property
    def line(self) -> Line:
        return Line(build_label(self.tc), f"{self.tc['system']}:{self.tc['partition']}")

    @property
    def check(self) -> str:
        return check_label(self.tc)

    @property
    def benchmark(self) -> str:
        """What the test case measures, without the check's suite: 'MPI1:PingPong'."""
        b = self.tc.get("benchmark")
        return b if defined(b) else self.check

    @property
    def placement(self) -> str:
        p = self.tc.get("placement")
        return str(p) if defined(p) else ""

    @property
    def passed(self) -> bool:
        return self.tc.get("result") == "pass"

    @property
    def key(self) -> tuple:
        """The same test case in every run and session."""
        return (self.tc["name"], self.tc["system"], self.tc["partition"], self.tc["environ"])

    @property
    def nodes(self) -> int:
        return placement_nodes(self.tc)


def placement_nodes(tc: dict) -> int:
    tasks, ppn = tc.get("num_tasks") or 0, tc.get("num_tasks_per_node") or 0
    if tasks and ppn:
        return max(1, -(-int(tasks) // int(ppn)))
    nodes = tc.get("job_nodelist")
    return len(nodes) if isinstance(nodes, list) and nodes else 1


@dataclass
class Session:
    info: dict
    cases: list[Case]
    runs: int
    raw: dict = field(default_factory=dict, repr=False)  # the session as stored

    @property
    def uuid(self) -> str:
        return self.info.get("uuid", "?")

    @property
    def start(self) -> float:
        return float(self.info.get("time_start_unix") or 0)

    @property
    def date(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M", time.gmtime(self.start))

    @property
    def confirms(self) -> str:
        """The session this one re-measured (a gate confirmation session), if any."""
        return str(self.info.get("confirms") or "")

    @property
    def mode(self) -> str:
        return session_mode(self.info) or "?"

    @property
    def lock(self) -> str:
        lock = self.info.get("spack_lock") or ""
        if not lock:
            locks = {c.tc.get("lock_sha256") for c in self.cases}
            locks = {x for x in locks if defined(x)}
            lock = locks.pop() if len(locks) == 1 else ""
        return lock

    @property
    def systems(self) -> set[str]:
        return {c.tc["system"] for c in self.cases if c.tc.get("system")}

    @property
    def listed_builds(self) -> list[str]:
        """The environments `mpimatrix run` said it would run (session extras)."""
        return [b for b in (self.info.get("builds") or "").split("+") if b]

    @property
    def skipped_builds(self) -> list[tuple[str, str]]:
        """(build, reason) of the builds `mpimatrix run` skipped (session extras)."""
        out = []
        for item in (self.info.get("skipped_builds") or "").split(" | "):
            if item.strip():
                name, _, reason = item.partition(": ")
                out.append((name.strip(), reason.strip()))
        return out

    def counts(self) -> dict[str, int]:
        c: dict[str, int] = defaultdict(int)
        for case in self.cases:
            c[case.tc.get("result", "?")] += 1
        return dict(c)


def session_view(data: dict) -> Session:
    cases = []
    for i, run in enumerate(data.get("runs") or []):
        for tc in run.get("testcases") or []:
            if tc.get("fixture") and tc.get("result") == "pass":
                continue  # a probe build that worked says nothing about performance
            cases.append(Case(tc, data.get("session_info", {}).get("uuid", "?"),
                              int(tc.get("run_index", i) or i)))
    return Session(session_info(data), cases, len(data.get("runs") or []), data)


@dataclass
class ReportData:
    sessions: list[Session]  # oldest first
    system: str
    references: dict = field(default_factory=dict)  # the system's reference file, if any
    #: the gate's confirmation sessions (extras confirms=<uuid>): samples, not sessions
    confirmations: list[Session] = field(default_factory=list)

    def confirming(self, s: Session) -> list[dict]:
        return [c.raw for c in self.confirmations if c.confirms == s.uuid]

    @property
    def current(self) -> Session:
        return self.sessions[-1]

    @property
    def partitions(self) -> list[str]:
        return sorted({c.line.partition for c in self.current.cases})

    @property
    def many_partitions(self) -> bool:
        return len(self.partitions) > 1

    def lines(self) -> list[Line]:
        return sorted({c.line for c in self.current.cases})

    def builds(self) -> list[str]:
        return sorted({c.line.build for c in self.current.cases})


def load(sessions: list[dict], references: dict | None = None) -> ReportData:
    """The report's sessions, oldest first; refuses what would make a misleading report."""
    if not sessions:
        raise SessionError("no session to report on: run `mpimatrix run` first, or name "
                           "sessions with --session UUID|PERIOD or --report FILE")
    views = sorted((session_view(s) for s in sessions), key=lambda s: s.start)
    seen: dict[str, Session] = {}
    for v in views:
        seen.setdefault(v.uuid, v)  # the same session named twice counts once
    views = list(seen.values())
    empty = [v.uuid for v in views if not v.cases]
    if len(empty) == len(views):
        raise SessionError(f"session(s) {', '.join(empty)} hold no test case: nothing to "
                           "report (did ReFrame find no check for this system?)")
    views = [v for v in views if v.cases]
    confirmations = [v for v in views if v.confirms]
    views = [v for v in views if not v.confirms] or views  # only confirmations: show them
    systems = sorted(set().union(*(v.systems for v in views)))
    if len(systems) > 1:
        per = "; ".join(f"{s}: {', '.join(v.uuid[:8] for v in views if s in v.systems)}"
                        for s in systems)
        raise SessionError(f"the sessions come from {len(systems)} systems ({per}); a report "
                           "covers one system: name the sessions of one of them")
    return ReportData(views, systems[0], references or {}, confirmations)


def by_line(cases: list[Case]) -> dict[Line, list[Case]]:
    out: dict[Line, list[Case]] = defaultdict(list)
    for c in cases:
        out[c.line].append(c)
    return out


#: Typography of the page and the plots (escaped: the source stays ASCII).
TIMES, DASH = "\u00d7", "\u2013"


def placement_shape(name: str) -> tuple[int, int]:
    """(nodes, ranks per node) of a placement name: intranode, internode, 4x2."""
    fixed = {"intranode": (1, 2), "internode": (2, 1)}
    if name in fixed:
        return fixed[name]
    m = re.fullmatch(r"(\d+)x(\d+)", name)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def placement_order(name: str) -> tuple[int, int, str]:
    """Placements by ranks, then nodes: intranode (1x2) before internode (2x1)."""
    nodes, ppn = placement_shape(name)
    return (nodes * ppn, nodes, name)


def placement_label(name: str) -> str:
    nodes, ppn = placement_shape(name)
    if not nodes:
        return name
    shape = f"{nodes}{TIMES}{ppn}"
    return f"{name} ({shape})" if name in ("intranode", "internode") else shape
