"""The noise of a performance value over repeated sessions, and what it allows:
a tolerance derived from the spread, or a reason not to gate the value at all.

Robust statistics throughout (median, and the MAD scaled to a normal standard
deviation): one disturbed session among five must not widen a reference. The
samples are one per session, the best of its passes (best()), when the value was
measured in enough sessions; a single multi-pass session (site acceptance) gives
its passes as the samples. The thresholds are the GatePolicy's (policy.py).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from .policy import DEFAULT_POLICY, GatePolicy
from .values import Kind

#: MAD x 1.4826 estimates the standard deviation of normally distributed samples.
MAD_TO_SIGMA = 1.4826
TIME, RATE, SHARE = Kind.TIME, Kind.RATE, Kind.SHARE


def best(samples: Sequence[float], higher_is_better: bool) -> float:
    """The best sample: the largest rate, the smallest time. Interference on a node
    only slows a run down, so the best of a session's passes is its least disturbed."""
    return max(samples) if higher_is_better else min(samples)


@dataclass(frozen=True)
class Spread:
    n: int
    median: float
    sigma: float  # robust standard deviation (MAD x 1.4826)
    low: float
    high: float

    @property
    def cv(self) -> float:
        """Robust coefficient of variation, sigma / median."""
        return self.sigma / abs(self.median) if self.median else float("inf")


def spread(samples: list[float]) -> Spread:
    med = statistics.median(samples)
    mad = statistics.median(abs(x - med) for x in samples)
    return Spread(len(samples), med, MAD_TO_SIGMA * mad, min(samples), max(samples))


def modes(samples: list[float], gap_share: float = DEFAULT_POLICY.mode_gap
          ) -> tuple[list[float], list[float]] | None:
    """The two groups of a bimodal set of samples (each ≥ 2 samples) further apart than
    gap_share (relative to the lower group) and more than twice as far apart as either
    group is wide, or None."""
    s = sorted(samples)
    best = None
    for i in range(2, len(s) - 1):
        lo, hi = s[:i], s[i:]
        gap = hi[0] - lo[-1]
        if lo[-1] <= 0 or gap / lo[-1] < gap_share:
            continue
        if gap > 2 * max(lo[-1] - lo[0], hi[-1] - hi[0]) and (best is None or gap > best[0]):
            best = (gap, lo, hi)
    return (best[1], best[2]) if best else None


@dataclass
class ValueStats:
    """What `bless` knows about one performance value, written beside its reference."""

    median: float
    spread: float  # robust CV (sigma / median)
    n: int
    tolerance: float
    gated: bool
    reason: str = ""  # why not gated
    samples: list[float] = field(default_factory=list)
    basis: str = ""  # what one sample is: the best of a session's passes, or one pass
    kind: Kind = TIME
    points: float | None = None  # a share's tolerance in percentage points

    def to_dict(self) -> dict:
        d = asdict(self)
        d["kind"] = self.kind.value  # a plain string in the statistics file
        d["median"] = round_sig(self.median)
        d["spread"] = round(self.spread, 4)
        d["tolerance"] = round(self.tolerance, 4) if math.isfinite(self.tolerance) else None
        d["samples"] = [round_sig(x) for x in self.samples]
        if self.points is None:
            del d["points"]
        else:
            d["points"] = round(self.points, 2)
        for key in ("reason", "basis"):
            if not d[key]:
                del d[key]
        return d


def round_sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def value_stats(samples: list[float], policy: GatePolicy = DEFAULT_POLICY,
                kind: Kind = TIME) -> ValueStats:
    """Median, spread, tolerance (policy.k_sigma robust spreads, at least the floor) and
    whether the value can be gated; a share's tolerance in points (share_stats)."""
    if kind == SHARE:
        return share_stats(samples, policy)
    sp = spread(samples)
    floor = policy.value_floor
    tol = max(floor, policy.k_sigma * sp.cv)
    stats = ValueStats(sp.median, sp.cv, sp.n, tol, True, samples=list(samples), kind=kind)
    split = modes(samples, policy.mode_gap) if sp.n >= 4 else None
    if sp.n < policy.min_samples:
        stats.gated, stats.reason = False, (f"{sp.n} sample(s): bless from at least "
                                            f"{policy.min_samples} sessions (5 recommended)")
    elif sp.median <= 0:
        stats.gated, stats.reason = False, f"median {sp.median} is no time or rate"
    elif split:
        lo, hi = split
        stats.gated, stats.reason = False, (
            f"bimodal: {len(lo)} samples near {round_sig(statistics.median(lo), 3)}, "
            f"{len(hi)} near {round_sig(statistics.median(hi), 3)}")
    elif tol > max(policy.max_tolerance, floor):  # a floor set above the maximum raises it
        stats.gated, stats.reason = False, (
            f"spread {sp.cv:.0%} (robust CV) needs a tolerance of {tol:.0%}, "
            f"over {max(policy.max_tolerance, floor):.0%}")
    elif len(beyond := _beyond(samples, sp.median, tol, kind)) > policy.max_blessed_outside:
        worst, signed = beyond[0] / sp.median - 1, -tol if kind == RATE else tol
        stats.gated, stats.reason = False, (
            f"{len(beyond)} blessed sample(s) already beyond the tolerance "
            f"({round_sig(beyond[0], 3):g}, {worst:+.0%} against {signed:+.0%}): "
            "states of its own; bless again from more or quieter sessions")
    return stats


def _beyond(samples: list[float], median: float, tol: float, kind: str) -> list[float]:
    """The samples outside the tolerance on the bad side, the worst first."""
    if kind == RATE:
        return sorted(x for x in samples if x < median * (1 - tol))
    return sorted((x for x in samples if x > median * (1 + tol)), reverse=True)


def share_stats(samples: list[float], policy: GatePolicy = DEFAULT_POLICY) -> ValueStats:
    """A share (0-100 %) judged in percentage points: its tolerance is policy.k_sigma
    robust standard deviations in points, at least share_floor_points; written as the
    relative threshold ReFrame takes (points / median). Not gated where the level is
    within its tolerance of 0 % (nothing to lose: an overlap of 1.5 % read as 0 % is
    noise, not a regression), where a blessed sample of the unchanged system was
    already below the tolerance (overlaps on a shared node drop to 0 % and back), or
    where the tolerance exceeds max_share_points or policy.max_tolerance of the level
    (so, at the defaults, a share is gated only at 33 % or more)."""
    sp = spread(samples)
    points = max(policy.share_floor_points, policy.k_sigma * sp.sigma)
    tol = points / sp.median if sp.median > 0 else math.inf
    stats = ValueStats(sp.median, sp.cv, sp.n, tol, True, samples=list(samples), kind=SHARE,
                       points=points)
    if sp.n < policy.min_samples:
        stats.gated, stats.reason = False, (f"{sp.n} sample(s): bless from at least "
                                            f"{policy.min_samples} sessions (5 recommended)")
    elif sp.median - points <= 0:
        stats.gated, stats.reason = False, (
            f"a share of {round_sig(sp.median, 3):g} % is within its tolerance "
            f"({points:.0f} points) of 0 %: nothing to lose")
    elif min(samples) < sp.median - points:
        stats.gated, stats.reason = False, (
            f"a blessed sample ({round_sig(min(samples), 3):g} %) is already below "
            f"{round_sig(sp.median - points, 3):g} % (the level less {points:.0f} points): "
            "states of its own")
    elif points > policy.max_share_points:
        stats.gated, stats.reason = False, (
            f"spread {sp.sigma:.1f} points (robust) needs a tolerance of {points:.0f} "
            f"points, over {policy.max_share_points:.0f}")
    elif tol > policy.max_tolerance:
        stats.gated, stats.reason = False, (
            f"a tolerance of {points:.0f} points is {tol:.0%} of its level "
            f"{round_sig(sp.median, 3):g} %, over {policy.max_tolerance:.0%}")
    return stats
