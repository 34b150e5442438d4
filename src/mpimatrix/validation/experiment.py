"""One experiment on stored nights, in one place: references blessed from the first
sessions (results.blessing.bless, as `mpimatrix bless` writes them, written nowhere),
then each later night judged as `mpimatrix run` judges it (results.night.judge_night),
the nights judged before it being its earlier nights (the watch rule). `mpimatrix validate
gate`, `validate replay`, `validate unchanged` and the experiments of measure/ all run
this loop; what they vary is a parameter of it: what is judged of a stored night (its
first passes, a step laid on it), its confirmation (the stored one, or the later passes
of the test cases the gate measures again), and what later nights look back at."""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from ruamel.yaml.comments import CommentedMap

from ..results import gate
from ..results.blessing import Blessed, bless
from ..results.measurements import Session, load
from ..results.night import Night, judge_night, to_confirm
from ..results.policy import DEFAULT_POLICY, GatePolicy, variation
from ..results.reference_set import ReferenceSet
from .store import StoredNight

#: A night's confirmation sessions: (the stored night, its session as judged, the
#: references) -> the sessions it is judged with.
Confirm = Callable[[StoredNight, Session, ReferenceSet], list[Session]]


@dataclass(frozen=True)
class Judged:
    """A night judged (results.night.Night) and the stored night it was made of."""

    night: Night
    stored: StoredNight

    @property
    def tag(self):
        return self.stored.tag


def split(nights: Sequence[StoredNight], k: int, *, spread: bool = False
          ) -> tuple[list[StoredNight], list[StoredNight]]:
    """(the nights to bless from: the first k nothing was injected into, or with `spread`
    every other one of those, the second, the fourth...; the others, to judge), each in
    the order given."""
    unchanged = [i for i, n in enumerate(nights) if not n.injected]
    chosen = set((unchanged[1::2] if spread else unchanged)[:k])
    return ([n for i, n in enumerate(nights) if i in chosen],
            [n for i, n in enumerate(nights) if i not in chosen])


@dataclass(frozen=True)
class Experiment:
    """The references an experiment judges its nights against."""

    references: ReferenceSet
    #: the sessions blessed from, as blessed: the earlier nights of the first night judged
    blessed_from: tuple[dict, ...] = ()
    #: what bless made of them (None: references written before, e.g. in the store)
    blessed: Blessed | None = None

    @classmethod
    def bless(cls, reports: Sequence[dict], policy: GatePolicy = DEFAULT_POLICY,
              floor: float | None = None) -> Experiment:
        """References blessed from `reports` as `mpimatrix bless --tolerance FLOOR` writes
        them (default: the policy's value_floor), judged with `policy`."""
        blessed = bless(list(reports), policy.value_floor if floor is None else floor, None,
                        CommentedMap(), {}, policy)
        return cls(ReferenceSet.of(blessed.refs, blessed.stats, policy), tuple(reports), blessed)

    def judge(self, nights: Iterable[StoredNight], *,
              before: Iterable[StoredNight] | None = None,
              change: Callable[[dict], dict] | None = None,
              confirm: Confirm | None = None, keep_stored: bool = False,
              disturbed: Collection[str] | Callable[[], Collection[str]] = frozenset()
              ) -> Iterator[Judged]:
        """Each night judged in turn, read from `nights` only when its turn comes (a live
        experiment runs it then), with the nights judged before it, newest first, as its
        earlier nights.

        before: the nights before the first (default: the sessions blessed from, with no
          confirmation);
        change: what is judged of a stored report (its first passes, a step laid on it),
          and of its stored confirmations unless `confirm` is given;
        confirm: the night's confirmation (default: its stored confirmations, changed);
        keep_stored: later nights look back at each night as stored, not as changed (a
          step laid on that one night only);
        disturbed: the UUIDs of the sessions other programs disturbed (no earlier night),
          or a function that reads them before each night (a store a live run writes)."""
        refset = self.references
        earlier: list[tuple[Session, list[Session]]] = (
            [(load(r), []) for r in self.blessed_from] if before is None else
            [(load(n.report), [load(c) for c in n.confirmations]) for n in before])
        for stored in nights:
            session = load(change(stored.report) if change else stored.report)
            confs = (confirm(stored, session, refset) if confirm else
                     [load(change(c) if change else c) for c in stored.confirmations])
            night = judge_night(session, confs, refset, reversed(earlier),
                                disturbed=disturbed() if callable(disturbed) else disturbed)
            earlier.append((load(stored.report),
                            [load(c) for c in stored.confirmations])
                           if keep_stored and change else (session, confs))
            yield Judged(night, stored)


def measured_again(stored: StoredNight, session: Session,
                   references: ReferenceSet) -> list[Session]:
    """A Confirm: of the night's first stored confirmation (e.g. the next session, when
    each session of a series stands for the confirmation of the one before), the test
    cases the gate would measure again; none when it would measure none."""
    conf = cut_to_confirm(stored.confirmations[0] if stored.confirmations else None,
                          session, references)
    return [load(conf)] if conf else []


def cut_to_confirm(candidate: dict | None, session: Session,
                   references: ReferenceSet) -> dict | None:
    """A copy of `candidate` (a later session, or later passes of this one) with only the
    test cases the gate measures again after `session` (results.night.to_confirm); None
    when it measures none."""
    again = {c.hashcode for c in to_confirm(session, references)}
    if not again or candidate is None:
        return None
    out = copy.deepcopy(candidate)
    for run in out["runs"]:
        run["testcases"] = [tc for tc in run["testcases"] if tc.get("hashcode") in again]
    return out


def varied_policy(text: str) -> GatePolicy:
    """The default gate with the GatePolicy fields of `--vary FIELD=VALUE[,...]` changed
    (ValueError naming a bad one)."""
    return replace(DEFAULT_POLICY, **variation(text))


def gated_values(report: dict, references: ReferenceSet) -> list[gate.ValueVerdict]:
    """The verdicts of a session's gated values, the session judged alone (no
    confirmation, no earlier night)."""
    return [v for v in gate.judge(load(report), [], references).verdicts if v.status.gated]
