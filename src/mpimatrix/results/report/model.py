"""The sessions of a report (measurements.py's records), as the pages need them.

A report covers the sessions of one system. The newest session is the *current* one:
the curves, layouts, build-vs-build view, failures and cost per build describe it (its
runs are the repetitions: `--mode compare|acceptance` run 3 interleaved passes). All
sessions make the trends and the cost per session.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields

from ...placement import placement_named
from ..measurements import Line, Session, as_session
from ..session_summary import SessionSummary, summarise
from ..sessions import SessionError


def from_mapping(cls, item):
    """A dataclass instance from itself, or from a dict holding its field names (other
    keys ignored): what the seams accept."""
    if isinstance(item, cls):
        return item
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in dict(item).items() if k in names})


@dataclass
class ReportData:
    sessions: list[Session]  # oldest first: the sessions given whole
    system: str
    #: the gate's confirmation sessions (extras confirms=<uuid>): samples, not sessions
    confirmations: list[Session] = field(default_factory=list)
    #: every session of the report, oldest first: those given whole and the older ones
    #: given as their summaries (the sessions table, the cost, what changed between them)
    summaries: list[SessionSummary] = field(default_factory=list)

    def confirming(self, s: Session) -> list[Session]:
        return [c for c in self.confirmations if c.confirms == s.uuid]

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


def load(sessions: list, older: Iterable[SessionSummary] = ()) -> ReportData:
    """The report's sessions, oldest first, and the summaries of `older` ones (before the
    newest session; their values come in as the history's series); refuses what would
    make a misleading report."""
    if not sessions:
        raise SessionError("no session to report on: run `mpimatrix run` first, or name "
                           "sessions with --session UUID|PERIOD or --report FILE")
    views = sorted((as_session(s) for s in sessions), key=lambda s: s.start)
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
    older = [o for o in older if o.uuid not in seen and o.cases and not o.confirms]
    every: list[Session | SessionSummary] = [*views, *older]
    systems = sorted(set().union(*(set(v.systems) for v in every)))
    if len(systems) > 1:
        per = "; ".join(f"{s}: {', '.join(v.uuid[:8] for v in every if s in v.systems)}"
                        for s in systems)
        raise SessionError(f"the sessions come from {len(systems)} systems ({per}); a report "
                           "covers one system: name the sessions of one of them")
    summaries = sorted([*older, *(summarise(v) for v in views)], key=lambda o: o.start)
    return ReportData(views, systems[0], confirmations, summaries)


#: Typography of the page and the plots (escaped: the source stays ASCII).
TIMES, DASH = "\u00d7", "\u2013"


def placement_order(name: str) -> tuple[int, int, str]:
    """Placements by ranks, then nodes: intranode (1x2) before internode (2x1)."""
    p = placement_named(name)
    return (p.ranks, p.nodes, name) if p else (0, 0, name)


def placement_label(name: str) -> str:
    p = placement_named(name)
    if p is None:
        return name
    shape = f"{p.nodes}{TIMES}{p.ppn}"
    return f"{name} ({shape})" if name in ("intranode", "internode") else shape
