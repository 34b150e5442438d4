"""One night, many values: a value alone outside its tolerance turns the night red only
when it was outside in the previous session that measured it too.

A nightly gates 50-80 values. At the per-value false-alarm rate this machine's noise
allows (about 1 %), many unchanged nights would hold one value outside its tolerance,
although each value meets its goal; most such values are back inside the next night. So
a value alone (the only value of its build outside, the build not regressed as a whole)
is on WATCH: printed, exit code 0; outside again in the next session that measures it
(judged with that session's confirmation, against today's references) it is a
REGRESSION. A whole build, the values named with it, and two or more values of one
build outside together still turn the night red at once. What this costs: a regression
of one value alone is reported a night later.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace

from .gate import REGRESSION, WATCH, Judgement, judge
from .measurements import Session, ValueKey
from .reference_set import ReferenceSet

#: Earlier sessions looked at for one that measured a value outside its tolerance.
LOOK_BACK = 5

#: A stored session and its confirmation sessions.
EarlierNight = tuple[Session, list[Session]]


def apply(session: Session, judged: Judgement, earlier: Iterable[EarlierNight],
          references: ReferenceSet) -> Judgement:
    """The judgement with each value alone (the only one of its build outside) that was
    not outside its tolerance in the previous night measuring it on WATCH. `earlier`:
    the nights that count (night.earlier_nights), newest first, read only as far as
    needed."""
    regressed = {(b.partition, b.build) for b in judged.builds if b.status == REGRESSION}
    outside = [v for v in judged.verdicts if v.status == REGRESSION and not v.with_build
               and (v.partition, v.build) not in regressed]
    # two or more values of one build outside together are no chance of one value (a build
    # with too few gated values for a verdict of its own shows its slowdown this way)
    per_build = Counter((v.partition, v.build) for v in outside)
    alone = {v.key for v in outside if per_build[v.partition, v.build] == 1}
    if not alone:
        return judged
    before = outside_before(alone, earlier, references)
    verdicts = [v if v.key not in alone else
                replace(v, outside_before=before[v.key]) if before.get(v.key) else
                replace(v, status=WATCH) for v in judged.verdicts]
    return Judgement(verdicts, judged.hosts, judged.builds)


def outside_before(keys: set[ValueKey | None], earlier: Iterable[EarlierNight],
                   references: ReferenceSet) -> dict[ValueKey | None, str]:
    """For each value: the UUID (8 characters) of the newest earlier night that measured
    it, when the value was outside its tolerance there; "" when it was not. `earlier`:
    the nights that count (night.earlier_nights), newest first. A night the machine ran
    slow on every build at once (a HOST line) is passed over: its verdict was "run
    again", so a value outside on it says nothing of the build, and a night run again
    after it is judged as if it had not been."""
    pending, out, looked = set(keys), {}, 0
    for prev, confirmations in earlier:
        if not pending or looked >= LOOK_BACK:
            break
        judged = judge(prev, confirmations, references)
        if any(h.slow for h in judged.hosts):
            continue
        looked += 1
        for v in judged.verdicts:
            if v.key in pending and v.status.gated:
                pending.discard(v.key)
                out[v.key] = prev.uuid[:8] if v.status == REGRESSION else ""
    return out
