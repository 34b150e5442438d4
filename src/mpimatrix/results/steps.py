"""Steps in a series of numbers: Apache Otava's E-Divisive means with a Student
t-test on each candidate (the method of MongoDB's Hunter, "Using Change Point
Detection to Hunt for Performance Regressions", ICPE 2023), with Otava's merge
step redone here (_merge says why); and a test of whether a series moved at a step
already found elsewhere (moved_at)."""

from __future__ import annotations

import statistics

#: Sessions considered around a candidate step (Otava's sliding window).
WINDOW = 30
#: Sessions on either side of a step (a step is found on its third session).
MIN_SEGMENT = 3


def significant_steps(values: list[float], max_pvalue: float,
                      min_magnitude: float = 0.0) -> list:
    """Otava change points (index: the first point after the step; stats: the means
    and p-value of the segments on either side) that are significant, at least
    min_magnitude (relative change of the mean) and held for MIN_SEGMENT points on
    either side."""
    from otava.analysis import split  # imports numpy and scipy

    # Otava's own first-pass threshold: ten times the final one
    weak = split(values, WINDOW, min(10 * max_pvalue, 0.5), new_points=None, old_cp=None)
    return _merge(list(weak), values, max_pvalue, min_magnitude)


def _merge(cps: list, values: list[float], max_pvalue: float, min_magnitude: float) -> list:
    """Otava's merge step, with every change point's statistics recomputed from the
    segments to its neighbours at each round (Otava 0.8.0 recomputes only the points
    after a removed one, so the point before keeps the statistics of a segment that is
    gone: a +20 % step at session 6 of 12 came out as a 2 % change and was dropped), and
    each point moved to the split of its two segments with the smallest p-value
    (E-Divisive put that step at session 5). While a point has fewer than MIN_SEGMENT
    points on a side, or is not significant or big enough, the weakest such one goes."""
    from otava.analysis import TTestSignificanceTester

    tester = TTestSignificanceTester(max_pvalue)
    cps = sorted(cps, key=lambda cp: cp.index)
    for _ in range(4 * len(values)):  # each round removes or moves a point
        intervals = tester.get_intervals(cps)
        cps = [tester.change_point(cp.to_candidate(), values, intervals) for cp in cps]
        bounds = [0, *(cp.index for cp in cps), len(values)]
        bad = [k for k, cp in enumerate(cps)
               if min(bounds[k + 1] - bounds[k], bounds[k + 2] - bounds[k + 1]) < MIN_SEGMENT
               or cp.stats.pvalue >= max_pvalue or cp.stats.change_magnitude() < min_magnitude]
        if bad:
            del cps[max(bad, key=lambda k: cps[k].stats.pvalue)]
            continue
        moved = _located(tester, cps, values, bounds)
        if [cp.index for cp in moved] == [cp.index for cp in cps]:
            return cps
        cps = moved
    return cps


def _located(tester, cps: list, values: list[float], bounds: list[int]) -> list:
    """Each change point at the split between its neighbours with the smallest p-value
    (the larger change on a tie), MIN_SEGMENT points on either side."""
    from otava.change_point_divisive.base import CandidateChangePoint

    out = list(cps)
    for k in range(len(out)):
        others = out[:k] + out[k + 1:]
        intervals = tester.get_intervals(others)
        tried = [tester.change_point(CandidateChangePoint(i, 0.0), values, intervals)
                 for i in range(bounds[k] + MIN_SEGMENT, bounds[k + 2] - MIN_SEGMENT + 1)]
        if tried:
            out[k] = min(tried, key=lambda cp: (cp.stats.pvalue, -cp.stats.change_magnitude()))
    return out


def moved_at(values: list[float], index: int, upward: bool) -> tuple[float, float, float]:
    """(p-value, median before, median after) of a step at a known index: a one-sided
    Mann-Whitney rank test that the points from index on are higher (upward) or lower
    than the points before it. Ranks, not means: one odd session of a single value
    (2-4x on a shared node) must not hide a step the others show."""
    from scipy.stats import mannwhitneyu  # Otava's own dependency

    before, after = values[:index], values[index:]
    test = mannwhitneyu(before, after, alternative="less" if upward else "greater")
    return float(test.pvalue), statistics.median(before), statistics.median(after)
