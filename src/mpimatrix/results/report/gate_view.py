"""The regression gate (results.gate) and the history (results.history) in the shapes
the report's seams take: front.Verdict and trend.ChangePoint."""

from __future__ import annotations

from .. import gate, history
from ..measurements import Session
from ..night import Night
from .front import Verdict
from .trend import ChangePoint

#: The gate's statuses the report lists (pass and no reference are not), spelled as the
#: gate spells them.
LISTED = (gate.REGRESSION, gate.WATCH, gate.NOISE, gate.NOT_GATED)
REGRESSION, WATCH, NOISE, NOT_GATED = gate.REGRESSION, gate.WATCH, gate.NOISE, gate.NOT_GATED


def gate_verdicts(current: Session, judged: gate.Judgement) -> list[Verdict]:
    """The gate's verdicts on the current session in the report's shape."""
    ref_keys = {(c.environ, c.check, c.placement): c.ref_key for c in current.cases}
    out = [Verdict(b.partition, b.environ, "the whole build@all placements", "factor",
                   b.status, b.factor, 1.0, "x", b.reason(), b.build)
           for b in judged.builds if b.status in (gate.REGRESSION, gate.NOISE)]
    for v in judged.verdicts:
        status = v.status
        if status not in LISTED:
            continue
        if status == gate.NOT_GATED:
            reason = v.reason or "the reference has no tolerance"
        else:
            samples = ", ".join(f"{x:.3g}" for x in v.all_samples)
            against = f" {v.judged_against} {v.host:.2f})" if v.host else ""
            where = "within" if status == gate.NOISE else "outside"
            reason = (f"{v.basis} [{samples}]{against} {where} the tolerance "
                      f"{v.tolerance_label}")
            if status == gate.WATCH:
                reason += "; not outside in the session before: a regression if outside again"
            elif v.outside_before:
                reason += f"; outside in session {v.outside_before} too"
        out.append(Verdict(v.partition, v.environ,
                           ref_keys.get((v.environ, v.check, v.placement), ""), v.var, status,
                           v.value, v.reference, v.unit, reason, v.build))
    return out


def what_changed(night: Night) -> list[dict]:
    """Per regressed build: the last earlier session where it passed and what changed in
    its software since (results.changed_since); [] without a regression."""
    return [{"build": c.build, "heading": c.heading(),
             "changes": [x.text for x in c.changes or ()]} for c in night.changed]


def history_change_points(sessions: list[Session]) -> list[ChangePoint]:
    """Steps in each value's history against the host, in each whole build's and in the
    host's (results.history, at least the policy's min_points sessions), with the lock
    or build hash that changed at the step."""
    ref_keys = {(c.environ, c.name): c.ref_key for s in sessions for c in s.cases}
    out = []
    for c in history.all_changes(sessions):
        part, env, name, var = c.series.key
        before, after = c.series.points[c.index - 1], c.point
        causes = []
        if before.lock_sha256 != after.lock_sha256:
            causes.append(f"lock {before.lock_sha256[:8] or 'none'} → "
                          f"{after.lock_sha256[:8] or 'none'}")
        if before.build_hash != after.build_hash:
            causes.append(f"{env} {before.build_hash[:8] or 'none'} → "
                          f"{after.build_hash[:8] or 'none'}")
        if c.series.build == history.HOST:  # every build at once, listed as the host
            var = "every build, times slower than usual"
        elif c.series.whole_build:
            var = "the whole build against the host, times slower than usual"
        out.append(ChangePoint(part, env, ref_keys.get((env, name), ""), var, after.session,
                               c.before, c.after, "; ".join(causes)))
    return out
