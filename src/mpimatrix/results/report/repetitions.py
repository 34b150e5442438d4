"""Curves over the repetitions: min/median/max per message size, build-vs-build ratios
that count only where they exceed the measured spread, and intranode/internode crossovers.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ..measurements import Case, Line

#: Time-like columns, the first a curve has is plotted (IMB t_avg/t/t_pure, OSU latency).
TIME_COLUMNS = ("t_avg", "t", "latency", "t_pure", "pure_comm")
#: Rate columns (higher is better), plotted beside the time for point-to-point tables.
RATE_COLUMNS = ("bandwidth", "message_rate")
UNITS = {"bandwidth": "MB/s", "message_rate": "msg/s"}


def unit_of(column: str) -> str:
    return UNITS.get(column, "µs")


def higher_is_better(column: str) -> bool:
    return column in RATE_COLUMNS


@dataclass(frozen=True)
class Point:
    """One message size (or None: an unsized value) over the repetitions."""

    size: float | None
    values: tuple[float, ...]

    @property
    def lo(self) -> float:
        return min(self.values)

    @property
    def mid(self) -> float:
        return statistics.median(self.values)

    @property
    def hi(self) -> float:
        return max(self.values)

    @property
    def n(self) -> int:
        return len(self.values)


#: A column's curves of one benchmark: placement -> line -> points by size
Placements = dict[str, dict[Line, list[Point]]]
#: A benchmark's curves: column -> placement -> line -> points by size
Columns = dict[str, Placements]
#: (benchmark, table) -> column -> placement -> line -> points by size
Curves = dict[tuple[str, str], Columns]


def table_columns(rows: list[dict]) -> list[str]:
    """The columns a curve is plotted in: one time column, and a rate if there is one."""
    keys = set().union(*(r.keys() for r in rows)) if rows else set()
    out = [next((c for c in TIME_COLUMNS if c in keys), None),
           next((c for c in RATE_COLUMNS if c in keys), None)]
    return [c for c in out if c]


def curves(cases: Sequence[Case]) -> Curves:
    """The size curves of the passing test cases, pooled over the repetitions."""
    acc: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))))
    for c in cases:
        curve = c.curve
        if not c.passed or curve is None:
            continue
        for table, rows in curve.items():
            if not isinstance(rows, list):
                continue
            for col in table_columns(rows):
                slot = acc[(c.benchmark, table)][col][c.placement][c.line]
                for r in rows:
                    v = r.get(col)
                    if isinstance(v, (int, float)) and math.isfinite(v):
                        slot[r.get("size")].append(float(v))
    out: Curves = {}
    for key, cols in acc.items():
        out[key] = {col: {pl: {line: sorted_points(sizes) for line, sizes in lines.items()}
                          for pl, lines in pls.items()} for col, pls in cols.items()}
    return out


def sorted_points(by_size: dict) -> list[Point]:
    return [Point(s, tuple(v)) for s, v in sorted(by_size.items(),
                                                  key=lambda kv: (kv[0] is not None, kv[0] or 0))]


def sized(points: list[Point]) -> bool:
    """A curve: two message sizes or more (an atomic's one 4-byte row is a single value)."""
    return len({p.size for p in points if p.size is not None}) > 1


# -- build vs build -------------------------------------------------------------------------
@dataclass(frozen=True)
class Ratio:
    benchmark: str
    table: str
    placement: str
    size: float | None
    column: str
    base: Point
    other: Point

    @property
    def ratio(self) -> float:
        return self.other.mid / self.base.mid if self.base.mid else math.nan

    @property
    def significant(self) -> bool:
        """Larger than the measured spread: both measured at least twice, and the
        min-max ranges over the repetitions do not overlap."""
        if self.base.n < 2 or self.other.n < 2:
            return False
        return self.other.lo > self.base.hi or self.other.hi < self.base.lo

    @property
    def better(self) -> bool:
        return (self.ratio > 1) == higher_is_better(self.column)


def ratios(cv: Curves, base: Line, other: Line) -> list[Ratio]:
    """Every size both lines measured, in the time column of each table."""
    out = []
    for (bench, table), cols in sorted(cv.items()):
        col = next((c for c in TIME_COLUMNS if c in cols), None)
        if col is None:
            continue
        for pl, lines in sorted(cols[col].items()):
            if base not in lines or other not in lines:
                continue
            mine = {p.size: p for p in lines[other]}
            for p in lines[base]:
                if p.size in mine and p.mid > 0:
                    out.append(Ratio(bench, table, pl, p.size, col, p, mine[p.size]))
    return out


# -- intranode vs internode ----------------------------------------------------------------
@dataclass(frozen=True)
class Crossover:
    benchmark: str
    table: str
    line: Line
    column: str
    size: float | None  # interpolated message size where the two curves cross, if any
    faster_small: str  # the placement faster at the smallest common size
    ratio_small: float  # internode / intranode time at the smallest common size
    ratio_large: float  # ... at the largest
    sizes: tuple[float, float]  # the common size range
    ratio_curve: tuple[tuple[float, float], ...]  # (size, internode/intranode)


def crossovers(cv: Curves, intra: str = "intranode", inter: str = "internode"
               ) -> list[Crossover]:
    out = []
    for (bench, table), cols in sorted(cv.items()):
        col = next((c for c in TIME_COLUMNS if c in cols), None)
        if col is None or intra not in cols[col] or inter not in cols[col]:
            continue
        for line, points in sorted(cols[col][intra].items()):
            other = {p.size: p.mid for p in cols[col][inter].get(line, [])}
            pairs = [(p.size, other[p.size] / p.mid) for p in points
                     if p.size and p.size in other and p.mid > 0 and other[p.size] > 0]
            if len(pairs) < 2:
                continue
            out.append(Crossover(bench, table, line, col, cross_size(pairs),
                                 inter if pairs[0][1] < 1 else intra, pairs[0][1],
                                 pairs[-1][1], (pairs[0][0], pairs[-1][0]), tuple(pairs)))
    return out


def cross_size(pairs: list[tuple[float, float]]) -> float | None:
    """The first size where the ratio crosses 1, interpolated in log-log space."""
    for (s0, r0), (s1, r1) in itertools.pairwise(pairs):
        if (r0 - 1) * (r1 - 1) < 0:
            l0, l1 = math.log(r0), math.log(r1)
            f = -l0 / (l1 - l0)
            return math.exp(math.log(s0) + f * (math.log(s1) - math.log(s0)))
    return None
