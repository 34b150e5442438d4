"""The effects of one axis between two builds (effects.py computes them), and their
tables as the page shows them: a cell per effect, a row per benchmark and placement, a
table per pair of builds."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .repetitions import higher_is_better


@dataclass(frozen=True)
class Effect:
    """One axis' effect on one benchmark, placement and size: the two builds' samples and
    the interval of their medians' ratio."""

    benchmark: str
    table: str
    placement: str
    column: str
    size: float
    a: tuple[float, ...]  # A's samples: one per pass
    b: tuple[float, ...]
    low: float | None  # the interval of median(A) / median(B) - 1; None: one pass
    high: float | None

    @property
    def estimate(self) -> float:
        return statistics.median(self.a) / statistics.median(self.b) - 1

    @property
    def status(self) -> str:
        """resolved, spans0 or one-pass."""
        if self.low is None or self.high is None:
            return "one-pass"
        return "spans0" if self.low <= 0 <= self.high else "resolved"

    @property
    def a_better(self) -> bool:
        return (self.estimate > 0) == higher_is_better(self.column)


@dataclass(frozen=True)
class EffectCell:
    """One effect as the page shows it: the estimate and its interval (signed text), the
    medians, a note (who is faster, or why not resolved), the size and its class."""
    estimate: float
    low: float | None
    high: float | None
    status: str  # resolved, spans0, one-pass
    text: str
    interval: str  # "" for one pass
    medians: str
    note: str
    size: str
    size_class: str  # SIZE_CLASSES' name


@dataclass(frozen=True)
class EffectRow:
    """A benchmark (and table) and placement of a pair: a cell per representative size
    (None where the size was not measured)."""
    benchmark: str  # with its table, unless the default
    bench: str
    placement: str
    column: str
    cells: list[EffectCell | None]


@dataclass(frozen=True)
class HeadlineRow:
    """A row of the pair's headline benchmark, its cells by size class."""
    benchmark: str
    placement: str
    by_class: list[EffectCell | None]


@dataclass(frozen=True)
class EffectTable:
    """A pair of builds that differ in one axis: its title, what it holds equal, its two
    builds (labels), a row per benchmark and placement, and how many effects resolved."""
    id: str
    axis: str
    title: str
    context: str
    also: str
    partition: str
    a: str
    b: str
    sizes: list[str]
    rows: list[EffectRow]
    effects: list[Effect]
    headline: list[HeadlineRow]
    resolved: int
    unresolved: int
    single: int


@dataclass(frozen=True)
class TopEffect:
    """A resolved effect among the largest: its cell, its row and its pair's table."""
    table: EffectTable
    row: EffectRow
    cell: EffectCell
