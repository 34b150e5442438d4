"""One night judged, in one place: the gate on a session with its confirmation pooled in,
the whole builds and the host, the watch rule against the nights before it, and what
changed since a regressed build last passed. `mpimatrix run`, the report and the
validation (`mpimatrix validate`) all call `judge_night`; nothing else composes the gate."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field

from . import gate, watch
from .changed_since import ChangedSince, changed_since
from .measurements import Case, Session
from .night_verdict import NightVerdict, night_verdict
from .reference_set import ReferenceSet


@dataclass(frozen=True)
class Night:
    session: Session
    confirmations: list[Session]
    #: with the watch rule (what the night's exit code and lines come from)
    judgement: gate.Judgement
    #: the same without the watch rule: every value alone outside is a REGRESSION
    alone: gate.Judgement
    #: the night's one verdict (exit code, headlines, text table)
    verdict: NightVerdict
    #: per regressed build, its last good session and what changed since
    changed: list[ChangedSince] = field(default_factory=list)


def to_confirm(session: Session, references: ReferenceSet) -> list[Case]:
    """The test cases the gate measures again: those with a value whose best sample,
    against the host, is outside its tolerance, and every test case of a build outside
    its blessed build tolerance."""
    return gate.failed_first(session, references)


def to_confirm_again(session: Session, confirmations: list[Session],
                     references: ReferenceSet) -> list[Case]:
    """After a round of confirmation: the test cases to measure again (close_calls), none
    once policy.confirm_rounds rounds were measured."""
    if len(confirmations) >= references.policy.confirm_rounds:
        return []
    return close_calls(session, gate.judge(session, confirmations, references), references)


def close_calls(session: Session, judgement: gate.Judgement, references: ReferenceSet
                ) -> list[Case]:
    """The test cases to measure again after a round of confirmation, where a verdict
    is still close to its threshold (policy.close_spreads; among the cases the first
    round measured, as to_confirm chose them, never more):

    - every test case of a build whose pooled factor (session and rounds) lies within
      close_spreads spreads of its threshold, on either side: the blessed spread of its
      factor over the square root of the draws pooled (the session and each round);
    - the test cases of a value alone named a regression whose confirmation best lies
      within close_spreads of its blessed spreads beyond its threshold. Its verdict takes
      the best of every pass measured again, which more passes can only bring nearer to
      the reference: a value within its tolerance stays within, so it is not measured."""
    policy = references.policy
    builds = {(b.partition, b.build) for b in judgement.builds
              if b.first_failed and b.pooled is not None and _close(
                  b.pooled, 1 + b.tolerance,
                  references.build_spread(b.partition, b.environ)
                  / math.sqrt(1 + len(b.confirm_rounds)), policy.close_spreads)}
    values = {v.key for v in judgement.verdicts
              if v.status == gate.REGRESSION and not v.with_build and v.confirmation
              and v.reference and v.tolerance is not None and _close(
                  v.judged[-1], v.reference * (1 + v.tolerance), v.spread,
                  policy.close_spreads)}
    return [c for c in session.cases
            if (c.partition, c.build) in builds
            or any(c.value_key(pv.var) in values for pv in c.values)]


def _close(x: float, threshold: float, spread: float, spreads: float) -> bool:
    """Within `spreads` relative spreads of the threshold (never, with no spread)."""
    return spread > 0 and x > 0 and abs(math.log(x / threshold)) < spreads * spread


def judge_night(session: Session, confirmations: list[Session], references: ReferenceSet,
                earlier: Iterable[watch.EarlierNight] = (), *,
                disturbed: Collection[str] = frozenset(),
                what_changed: bool = False) -> Night:
    """The night's judgement and its one verdict. `earlier`: stored nights (a session
    and its confirmations), newest first, read only as far as needed; the nights that
    count are chosen here, the same for every caller (earlier_nights). `disturbed`: the
    UUIDs of sessions other programs disturbed (the machine-load record): such a night
    is no earlier night, and this one, if it or a confirmation is among them, is judged
    DISTURBED where it regressed. `what_changed`: look for what changed since a
    regressed build last passed (its software), among the same earlier nights."""
    counted = _Counted(earlier_nights(session, earlier, disturbed))
    alone = gate.judge(session, confirmations, references)
    judged = watch.apply(session, alone, counted, references)
    changed = []
    if judged.regressions and what_changed:
        changed = changed_since(session, judged, (s for s, _ in counted), references)
    spoiled = any(s.uuid in disturbed for s in (session, *confirmations))
    return Night(session, list(confirmations), judged, alone,
                 night_verdict(session, judged, spoiled), changed)


def earlier_nights(session: Session, candidates: Iterable[watch.EarlierNight],
                   disturbed: Collection[str] = frozenset()) -> Iterator[watch.EarlierNight]:
    """The nights before `session` that count, newest first: sessions (not
    confirmations) started before it, each once, none other programs disturbed. (The
    watch rule also passes over nights the machine ran slow: watch.outside_before.)"""
    seen = {session.uuid}
    for prev, confs in candidates:
        if (prev.uuid in seen or prev.confirms or prev.start >= session.start
                or prev.uuid in disturbed):
            continue
        seen.add(prev.uuid)
        yield prev, list(confs)


class _Counted:
    """An iterator of earlier nights read once and replayed to each reader (the watch
    rule, then what changed), so a store is read only as far as the furthest reader."""

    def __init__(self, source: Iterator[watch.EarlierNight]):
        self._source = source
        self._read: list[watch.EarlierNight] = []

    def __iter__(self) -> Iterator[watch.EarlierNight]:
        yield from self._read
        for night in self._source:
            self._read.append(night)
            yield night
