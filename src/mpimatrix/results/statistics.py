"""The noise of a performance value over repeated sessions, and what it allows:
a tolerance derived from the spread, or a reason not to gate the value at all.

Robust statistics throughout (median, and the MAD scaled to a normal standard
deviation): one disturbed session among five must not widen a reference. The
samples are one per session, the best of its passes (best()), when the value was
measured in enough sessions; a single multi-pass session (site acceptance) gives
its passes as the samples.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

#: MAD x 1.4826 estimates the standard deviation of normally distributed samples.
MAD_TO_SIGMA = 1.4826
#: The tolerance is this many robust standard deviations (relative to the median),
#: at least the floor: a best beyond it starts a confirmation, and a value is a
#: regression only when the confirmation agrees. With the 30 % floor and maximum
#: (bless.DEFAULT_FLOOR) it decides which values are gated: robust CV up to 7.5 %.
K_SIGMA = 4.0
#: Fewer samples than this cannot tell noise from a value: reported, not gated.
MIN_SAMPLES = 3
#: A value whose tolerance would exceed this cannot detect a real regression.
MAX_TOLERANCE = 0.3
#: Two groups of samples further apart than this (relative to the lower one) and
#: more than twice as far apart as either group is wide: a bimodal value.
MODE_GAP = 0.3


def best(samples: list[float], higher_is_better: bool) -> float:
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


def modes(samples: list[float]) -> tuple[list[float], list[float]] | None:
    """The two groups of a bimodal set of samples (each ≥ 2 samples), or None."""
    s = sorted(samples)
    best = None
    for i in range(2, len(s) - 1):
        lo, hi = s[:i], s[i:]
        gap = hi[0] - lo[-1]
        if lo[-1] <= 0 or gap / lo[-1] < MODE_GAP:
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

    def to_dict(self) -> dict:
        d = asdict(self)
        d["median"] = round_sig(self.median)
        d["spread"] = round(self.spread, 4)
        d["tolerance"] = round(self.tolerance, 4)
        d["samples"] = [round_sig(x) for x in self.samples]
        for key in ("reason", "basis"):
            if not d[key]:
                del d[key]
        return d


def round_sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def value_stats(samples: list[float], floor: float, k_sigma: float = K_SIGMA,
                max_tolerance: float = MAX_TOLERANCE) -> ValueStats:
    """Median, spread, tolerance and whether the value can be gated."""
    sp = spread(samples)
    tol = max(floor, k_sigma * sp.cv)
    stats = ValueStats(sp.median, sp.cv, sp.n, tol, True, samples=list(samples))
    split = modes(samples) if sp.n >= 4 else None
    if sp.n < MIN_SAMPLES:
        stats.gated, stats.reason = False, (f"{sp.n} sample(s): bless from at least "
                                            f"{MIN_SAMPLES} sessions (5 recommended)")
    elif sp.median <= 0:
        stats.gated, stats.reason = False, f"median {sp.median} is no time or rate"
    elif split:
        lo, hi = split
        stats.gated, stats.reason = False, (
            f"bimodal: {len(lo)} samples near {round_sig(statistics.median(lo), 3)}, "
            f"{len(hi)} near {round_sig(statistics.median(hi), 3)}")
    elif tol > max(max_tolerance, floor):  # a floor set above the maximum raises it
        stats.gated, stats.reason = False, (
            f"spread {sp.cv:.0%} (robust CV) needs a tolerance of {tol:.0%}, "
            f"over {max(max_tolerance, floor):.0%}")
    return stats
