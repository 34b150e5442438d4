"""One night judged, in one place: the gate on a session with its confirmation pooled in,
the whole builds and the host, the watch rule against the nights before it, and what
changed since a regressed build last passed. `mpimatrix run`, the report and the
validation (`mpimatrix validate`) all call `judge_night`; nothing else composes the gate."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from . import gate, watch
from .changed_since import ChangedSince, changed_since
from .measurements import Case, Session
from .reference_set import ReferenceSet


@dataclass(frozen=True)
class Night:
    session: Session
    confirmations: list[Session]
    #: with the watch rule (what the night's exit code and lines come from)
    judgement: gate.Judgement
    #: the same without the watch rule: every value alone outside is a REGRESSION
    alone: gate.Judgement
    #: per regressed build, its last good session and what changed since
    changed: list[ChangedSince] = field(default_factory=list)


def to_confirm(session: Session, references: ReferenceSet) -> list[Case]:
    """The test cases the gate measures again: those with a value whose best sample,
    against the host, is outside its tolerance, and every test case of a build outside
    its blessed build tolerance."""
    return gate.failed_first(session, references)


def judge_night(session: Session, confirmations: list[Session], references: ReferenceSet,
                earlier: Iterable[watch.Night] = (),
                earlier_sessions: Iterable[Session] | None = None) -> Night:
    """The night's judgement. `earlier`: the stored nights before it with their
    confirmations, newest first, for the watch rule (each judged against `references`);
    `earlier_sessions`: stored sessions, newest first, where a regressed build's last
    good session is looked for (None: not looked for)."""
    alone = gate.judge(session, confirmations, references)
    judged = watch.apply(session, alone, earlier, references)
    changed = []
    if judged.regressions and earlier_sessions is not None:
        changed = changed_since(session, judged, earlier_sessions, references)
    return Night(session, list(confirmations), judged, alone, changed)
