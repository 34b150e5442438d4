"""The stored sessions of a trend report as it reads them: the newest whole (its curves,
failures and verdicts; with the confirmations among the selected that confirm it), the
older ones as their summaries, and the values' history of all of them from the session
index. A report over 14 nights of 40 builds then decodes one night, not fourteen."""

from __future__ import annotations

from dataclasses import dataclass

from ..results.history import Series
from ..results.session_summary import SessionSummary
from . import session_index


@dataclass
class ReportSessions:
    sessions: list[dict]  # the newest session and the selected ones confirming it
    older: list[SessionSummary]
    series: list[Series]


def report_sessions(uuids: list[str]) -> ReportSessions | None:
    """What a report of these stored sessions reads; None when they are all
    confirmations (the report then reads them whole)."""
    series, light = session_index.values(uuids)
    found = [light[u] for u in uuids if u in light]
    nights = sorted((s for s in found if not s.confirms), key=lambda s: s.start)
    if not nights:
        return None
    current = nights[-1].uuid
    whole = [current, *(s.uuid for s in found if s.confirms == current)]
    return ReportSessions(session_index.sessions(whole),
                          session_index.summaries([s.uuid for s in nights[:-1]]), series)
