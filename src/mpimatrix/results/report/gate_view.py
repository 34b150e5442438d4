"""What changed for a regressed build (the night's), and the history's steps
(results.history) in the shape the report's trend seam takes: trend.ChangePoint."""

from __future__ import annotations

from dataclasses import dataclass

from .. import history
from ..night import Night
from .trend import ChangePoint


@dataclass(frozen=True)
class WhatChanged:
    """A regressed build: the heading (its last earlier session that passed) and the
    changes of its software since, one line each."""
    build: str
    heading: str
    changes: list[str]


def what_changed(night: Night) -> list[WhatChanged]:
    """Per regressed build: the last earlier session where it passed and what changed in
    its software since (results.changed_since); [] without a regression."""
    return [WhatChanged(c.build, c.heading(), [x.text for x in c.changes or ()])
            for c in night.changed]


def history_change_points(series: list[history.Series]) -> list[ChangePoint]:
    """Steps in each value's history (the sessions' series, as history.series_of gives
    them) against the host, in each whole build's and in the host's (results.history, at
    least the policy's min_points sessions), with the lock or build hash that changed at
    the step."""
    out = []
    for c in history.steps_in(series).changes:
        part, env, _case, var = c.series.key
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
        out.append(ChangePoint(part, env, c.series.ref_key, var, after.session,
                               c.before, c.after, "; ".join(causes)))
    return out
