"""The median of a few samples and its interval, for the report's tables (npb_view,
mpiio_view, and effects.interval's ratio of two medians): a 95 % percentile bootstrap of
the median (the samples resampled with replacement, RESAMPLES times, numpy's generator
seeded by the caller: the same samples give the same interval). With two or three
samples the interval is their min-max (the resampled median is the smallest or the
largest sample more often than 2.5 % of the time); one sample has none."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95
RESAMPLES = 4000


@dataclass(frozen=True)
class Estimate:
    """The median of the samples and its interval (None, None with one sample)."""
    median: float
    lo: float | None
    hi: float | None
    n: int


def resampled_medians(xs: Sequence[float], rng: np.random.Generator,
                      resamples: int = RESAMPLES) -> np.ndarray:
    """The medians of `resamples` resamples of xs with replacement."""
    x = np.asarray(xs, dtype=float)
    return np.median(x[rng.integers(0, len(x), (resamples, len(x)))], axis=1)


def percentile_interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The central `level` interval of the bootstrap's values."""
    lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def estimate(xs: Sequence[float], seed: int) -> Estimate:
    """The median of xs and the bootstrap interval of the median."""
    med = statistics.median(xs)
    if len(xs) < 2:
        return Estimate(med, None, None, len(xs))
    lo, hi = percentile_interval(resampled_medians(xs, np.random.default_rng(seed)))
    return Estimate(med, lo, hi, len(xs))


def cost_difference(a: Sequence[float], b: Sequence[float], k1: float, k2: float,
                    seed: int) -> tuple[float, float | None, float | None]:
    """k2 x median(b) - k1 x median(a), and its bootstrap interval."""
    diff = k2 * statistics.median(b) - k1 * statistics.median(a)
    if min(len(a), len(b)) < 2:
        return diff, None, None
    rng = np.random.default_rng(seed)
    ma, mb = resampled_medians(a, rng), resampled_medians(b, rng)
    lo, hi = percentile_interval(k2 * mb - k1 * ma)
    return diff, lo, hi
