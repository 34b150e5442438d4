"""The detection floor: the smallest step of a gated value, or of a whole build, that the
gate catches the night it happens with 95 % probability, from the statistics bless wrote.

A night's value is the best of its passes, against the host factor; bless measured how
that statistic spreads from session to session (its robust CV c, one sample per session)
and set the tolerance t from it. A step d moves the value's median m to m(1 + d) (a time;
m(1 - d) for a rate). The gate calls it outside when the session's best and the
confirmation's best are both beyond the tolerance: two independent draws, so each must
be beyond with probability sqrt(0.95), which holds when the stepped median lies z = 1.955
spreads past the threshold (normal noise):

    time:  m(1 + d)(1 - z c) = m(1 + t)   ->  d = (1 + t) / (1 - z c) - 1
    rate:  m(1 - d)(1 + z c) = m(1 - t)   ->  d = 1 - (1 - t) / (1 + z c)
    share: d = t + z c, in percentage points

The same is taken for a whole build: its factor's spread over the blessed sessions and its
build tolerance (`$builds`). The gate names a build when its session and the geometric
mean of its session and confirmation are beyond (caught_pooled), which both draws beyond
implies: a build's floor here is an upper bound. A value outside alone is on WATCH that
night and a REGRESSION the next (watch.py): its floor is the step seen the first night,
named the second; a build's, or two values' of one build, turn the night red at once. At
the tolerance t the same model gives each value's false-alarm rate on an unchanged night.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from .reference_set import BlessedValue, ReferenceSet
from .values import Kind

#: How surely a step at the floor is caught the night it happens.
CATCH = 0.95
#: Spreads between a stepped median and the threshold for each of the two draws (the
#: session and its confirmation) to be beyond it with probability sqrt(CATCH).
Z = statistics.NormalDist().inv_cdf(math.sqrt(CATCH))


@dataclass(frozen=True)
class Floor:
    """The detection floor of one gated value or build."""

    partition: str
    environ: str
    ref_key: str  # "" for a whole build
    var: str  # "factor" for a whole build
    kind: Kind
    spread: float  # robust CV of the blessed samples (points, for a share)
    tolerance: float  # relative (points, for a share)
    step: float  # the floor: relative (points, for a share); inf where none is seen

    def text(self) -> str:
        if not math.isfinite(self.step):
            return "none seen"
        return (f"{self.step:.0f} points" if self.kind == Kind.SHARE
                else f"{self.step:.0%}")


def step(spread: float, tolerance: float, kind: Kind) -> float:
    """The smallest step caught the first night with probability CATCH (module doc)."""
    if kind == Kind.SHARE:
        return tolerance + Z * spread
    if kind == Kind.RATE:
        return 1 - (1 - tolerance) / (1 + Z * spread)
    return (1 + tolerance) / (1 - Z * spread) - 1 if Z * spread < 1 else math.inf


def caught(spread: float, tolerance: float, kind: Kind, stepped: float) -> float:
    """The probability that a step of `stepped` is caught the night it happens: the
    session's and the confirmation's draw both beyond the tolerance (module doc)."""
    norm = statistics.NormalDist()
    if kind == Kind.SHARE:
        room = tolerance - stepped  # points left to the threshold
    elif kind == Kind.RATE:
        room = -((1 - tolerance) / (1 - stepped) - 1)
    else:
        room = (1 + tolerance) / (1 + stepped) - 1
    if spread <= 0:
        q = 1.0 if room < 0 else 0.5 if room == 0 else 0.0
    else:
        q = 1 - norm.cdf(room / spread)
    return q * q


def caught_pooled(spread: float, tolerance: float, stepped: float, rounds: int = 1,
                  close: float = 1.0, trials: int = 20000, seed: int = 1
                  ) -> tuple[float, float]:
    """A whole build as the gate judges it, its session and confirmation pooled, with up to
    `rounds` rounds of measuring again (confirm_rounds, close_spreads `close`): the
    probability that a step of `stepped` is named the night it happens, and the mean
    number of rounds measured when the session was outside. Normal noise of `spread` on
    the log of each draw, the draws independent (the session and each round); the
    session must be beyond the tolerance, then the mean of every draw so far; a round is
    added while that mean lies within `close` spreads over the square root of the draws
    of the threshold. Drawn `trials` times with a fixed seed: the same figures each
    call."""
    rng = random.Random(seed)
    threshold, mu = math.log1p(tolerance), math.log1p(stepped)
    named = outside = measured = 0
    for _ in range(trials):
        first = rng.gauss(mu, spread)
        if first <= threshold:
            continue
        outside += 1
        draws = [first, rng.gauss(mu, spread)]
        while (len(draws) - 1 < rounds and abs(statistics.fmean(draws) - threshold)
               < close * spread / math.sqrt(len(draws))):
            draws.append(rng.gauss(mu, spread))
        measured += len(draws) - 1
        named += statistics.fmean(draws) > threshold
    return named / trials, measured / outside if outside else 0.0


def value_floors(references: ReferenceSet) -> list[Floor]:
    """The floor of every value bless gated (hand-set thresholds have none: bless's
    spread does not explain them)."""
    out = [floor for b in references.blessed.values()
           if b.gated and not b.hand_set and (floor := _value_floor(b)) is not None]
    return sorted(out, key=lambda f: (f.partition, f.environ, f.ref_key, f.var))


def _value_floor(b: BlessedValue) -> Floor | None:
    spread, tol = b.spread, b.tolerance
    if spread is None or tol is None:
        return None
    if b.kind == Kind.SHARE:  # judged in points: the spread as a CV of the level, in points
        if b.median is None or b.points is None:
            return None
        spread, tol = spread * b.median, b.points
    k = b.key
    return Floor(k.partition, k.environ, k.ref_key, k.var, b.kind, spread, tol,
                 step(spread, tol, b.kind))


def build_floors(references: ReferenceSet) -> list[Floor]:
    """The floor of each whole build bless gave a tolerance (`$builds`); a build's
    factor is a slowdown, judged as a time."""
    out = [Floor(b.partition, b.environ, "", "factor", Kind.TIME, b.spread, b.tolerance,
                 step(b.spread, b.tolerance, Kind.TIME))
           for b in references.builds.values()
           if b.spread is not None and b.tolerance is not None]
    return sorted(out, key=lambda f: (f.partition, f.environ))


def percentile(xs: list[float], q: float) -> float:
    """The q-th quantile (0-1) of xs, by the nearest rank."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def summary(values: Iterable[Floor], builds: Iterable[Floor]) -> str:
    """One line: the relative floors of the gated values (median, 90th percentile) and
    the range of the whole builds' floors (shares, in points, are left out)."""
    rel = [f.step for f in values if f.kind != Kind.SHARE]
    whole = [f.step for f in builds]
    parts = []
    if rel:
        parts.append(f"values median {percentile(rel, 0.5):.0%}, 90th percentile "
                     f"{percentile(rel, 0.9):.0%}")
    if whole:
        lo, hi = f"{min(whole):.0%}", f"{max(whole):.0%}"
        parts.append(f"whole builds {lo}" if lo == hi else f"whole builds {lo[:-1]}-{hi}")
    if not parts:
        return ""
    return (f"detection floor (the step caught the night it happens {CATCH:.0%} of the time): "
            + "; ".join(parts))
