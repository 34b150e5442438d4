"""The families side by side: each axis' effect, measured between two builds that differ in
that axis alone.

Two builds on one partition differ in exactly one axis (axes.py) when they share all but
one of family, version, fabric class and compiler: the fabric (ucx vs ofi, same family,
version and compiler), the compiler, the version, or the family (Open MPI vs MPICH: the
version differs too, the fabric class and the compiler do not); builds equal in all four
differ in where they came from (a Debian package vs a Spack external of it). An axis
nothing recorded ("?") counts as the same in both builds, and says so; so does a pair
whose builds also came from different places (a Debian package and a PyPI wheel).

Per pair, benchmark and placement, at a small, a medium and a large message size the
session measured: the relative difference of the two medians over the passes,
median(A) / median(B) - 1, and its 95 % percentile bootstrap interval (each build's
passes resampled with replacement, 4000 times, the ratio of the two resampled medians;
numpy's default generator seeded with the CRC-32 of the row, so the same session gives the
same interval). With two or three passes the interval is the ratio of the extremes,
[min A / max B - 1, max A / min B - 1]: it excludes 0 only when the two builds' min-max
ranges do not overlap (the rule of the build-vs-build view). A difference whose interval
spans 0 is not resolved on this machine; a build measured in one pass has no interval.
"""

from __future__ import annotations

import math
import re
import statistics
import zlib
from dataclasses import dataclass

import numpy as np

from ...units import human_size
from .axes import Axes
from .effect_rows import Effect, EffectCell, EffectRow, EffectTable, HeadlineRow
from .medians import LEVEL, RESAMPLES, percentile_interval, resampled_medians
from .model import Line, placement_label, placement_order
from .repetitions import (
    RATE_COLUMNS,
    TIME_COLUMNS,
    Columns,
    Curves,
    sized,
    unit_of,
)

MIN_PASSES = 2
KIB, MIB = 1024, 1024 * 1024
#: Representative sizes: (name, lowest, highest, aim): the measured size nearest the aim
#: (log scale) within [lowest, highest]; the large one is the largest there.
SIZE_CLASSES = (("small", 1, 64, 8), ("medium", 16 * KIB, 256 * KIB, 64 * KIB),
                ("large", MIB, 4 * MIB, 4 * MIB))
#: The benchmark a pair's overview row shows, the first of these it has (point-to-point
#: latency; PingPong's bandwidth is its size over its time). OSU's are named without
#: `osu_` (the check's benchmark parameter).
HEADLINE = ("latency", "MPI1:PingPong", "P2P:PingPong", "bw", "MPI1:Sendrecv")
AXIS_ORDER = ("fabric", "compiler", "family", "version", "provenance")
#: What stays equal in a pair, per axis that differs.
HELD = {"fabric": ("family", "version", "compiler"), "compiler": ("family", "version", "fabric"),
        "version": ("family", "fabric", "compiler"), "family": ("fabric", "compiler"),
        "provenance": ("family", "version", "fabric", "compiler")}


def one_axis(x: Axes, y: Axes) -> str | None:
    """The one axis two builds differ in, None for none or several (or when the differing
    values are not known)."""
    diff = [k for k in ("family", "version", "fabric", "compiler")
            if getattr(x, k) != getattr(y, k)]
    if not diff:
        return "provenance" if x.provenance != y.provenance and x.provenance and \
            y.provenance else None
    axis = "family" if "family" in diff and set(diff) <= {"family", "version"} else \
        diff[0] if len(diff) == 1 else None
    if axis is None or not getattr(x, axis) or not getattr(y, axis):
        return None
    return axis


def version_key(v: str) -> tuple:
    return tuple(int(n) for n in re.findall(r"\d+", v))


@dataclass(frozen=True)
class Pair:
    axis: str
    a: Line
    b: Line
    ax_a: Axes
    ax_b: Axes

    @property
    def title(self) -> str:
        if self.axis == "family":
            return (f"{self.ax_a.family_name} {self.ax_a.version} vs "
                    f"{self.ax_b.family_name} {self.ax_b.version}")
        return f"{self.ax_a.shown(self.axis)} vs {self.ax_b.shown(self.axis)}"

    @property
    def context(self) -> str:
        """What the two builds share, '?' for an axis neither recorded."""
        held = HELD[self.axis]
        words: list[str] = []
        for k in held:
            v = self.ax_a.shown(k)
            if k == "version" and "family" in held:
                words[-1] = f"{words[-1]} {v}"
            else:
                words.append(v if v != "?" else f"{k} ?")
        return ", ".join(words)

    @property
    def also(self) -> str:
        """Where the two builds came from, when that differs too (a Debian package and a
        PyPI wheel: their configurations differ beyond the axis)."""
        pa, pb = self.ax_a.provenance, self.ax_b.provenance
        return f"A from {pa}, B from {pb}" if self.axis != "provenance" and pa and pb \
            and pa != pb else ""


def pairs(lines: list[Line], axes: dict[str, Axes]) -> list[Pair]:
    """Every two lines of one partition whose builds differ in exactly one axis; A is the
    newer version, else the first in alphabetical order of the differing value."""
    out = []
    for i, x in enumerate(lines):
        for y in lines[i + 1:]:
            if x.partition != y.partition or x.build not in axes or y.build not in axes:
                continue
            ax, ay = axes[x.build], axes[y.build]
            axis = one_axis(ax, ay)
            if axis is None:
                continue
            if axis == "version":
                swap = version_key(ax.version) < version_key(ay.version)
            else:
                swap = (ax.shown(axis), x.build) > (ay.shown(axis), y.build)
            out.append(Pair(axis, y, x, ay, ax) if swap else Pair(axis, x, y, ax, ay))
    return sorted(out, key=lambda p: (AXIS_ORDER.index(p.axis), p.title, p.a, p.b))


def seed_of(*key) -> int:
    return zlib.crc32("|".join(map(str, key)).encode())


def interval(a, b, seed: int, level: float = LEVEL, resamples: int = RESAMPLES
             ) -> tuple[float, float] | tuple[None, None]:
    """Percentile bootstrap interval of median(a) / median(b) - 1."""
    if min(len(a), len(b)) < MIN_PASSES:
        return None, None
    rng = np.random.default_rng(seed)
    ma, mb = resampled_medians(a, rng, resamples), resampled_medians(b, rng, resamples)
    return percentile_interval(ma / mb - 1, level)


def representative(sizes) -> list[float]:
    """The small, medium and large sizes among the measured ones (those there are)."""
    sizes = sorted({s for s in sizes if s and s > 0})
    out = []
    for _, lo, hi, aim in SIZE_CLASSES:
        inside = [s for s in sizes if lo <= s <= hi]
        if inside:
            out.append(min(inside, key=lambda s: (abs(math.log2(s / aim)), -s)))
    return out


def size_class(size: float) -> str:
    return next((name for name, lo, hi, _ in SIZE_CLASSES if lo <= size <= hi), "")


def primary_column(cols: Columns) -> str | None:
    """The time column a benchmark has, else its rate column (osu_bw)."""
    return next((c for c in (*TIME_COLUMNS, *RATE_COLUMNS) if c in cols), None)


def effects(cv: Curves, pair: Pair) -> list[Effect]:
    out = []
    for (bench, table), cols in sorted(cv.items(), key=lambda kv: (
            not any(c in RATE_COLUMNS for c in kv[1]), kv[0])):
        col = primary_column(cols)
        if col is None:
            continue
        for pl in sorted(cols[col], key=placement_order):
            lines = cols[col][pl]
            if pair.a not in lines or pair.b not in lines or not sized(lines[pair.a]):
                continue  # single-value benchmarks (atomics) are no curve
            mine = {p.size: p for p in lines[pair.b] if p.size}
            both = {p.size: (p, mine[p.size]) for p in lines[pair.a] if p.size in mine}
            for size in representative(both):
                pa, pb = both[size]
                if pa.mid <= 0 or pb.mid <= 0:
                    continue
                lo, hi = interval(pa.values, pb.values, seed_of(
                    pair.a, pair.b, bench, table, pl, col, size))
                out.append(Effect(bench, table, pl, col, size, pa.values, pb.values, lo, hi))
    return out


def signed(v: float) -> str:
    """+12 %, -3.4 % (a real minus sign)."""
    text = f"{v * 100:+.1f}" if abs(v) < 0.1 else f"{v * 100:+.0f}"
    return text.replace("-", "\u2212") + "\u202f%"


def cell(e: Effect, pair: Pair) -> EffectCell:
    medians = (f"median {statistics.median(e.a):.4g} vs {statistics.median(e.b):.4g} "
               f"{unit_of(e.column)} over {len(e.a)}/{len(e.b)} passes")
    interval = ""
    if e.status == "one-pass":
        note = "one pass: no interval"
    else:
        assert e.low is not None and e.high is not None  # not one-pass: an interval
        interval = f"[{signed(e.low)}, {signed(e.high)}]"
        if e.status == "spans0":
            note = "not resolved: interval spans 0"
        else:
            better = pair.ax_a if e.a_better else pair.ax_b
            note = f"{better.shown(pair.axis)} faster" if pair.axis != "family" \
                else f"{better.family_name} faster"
    return EffectCell(estimate=e.estimate, low=e.low, high=e.high, status=e.status,
                      text=signed(e.estimate), interval=interval, medians=medians,
                      note=note, size=human_size(int(e.size), " "),
                      size_class=size_class(e.size))


def effect_tables(cv: Curves, lines: list[Line], axes: dict[str, Axes], label
                  ) -> list[EffectTable]:
    """Per pair: its title, what it holds equal, its two builds (label(line)) and a row per
    benchmark and placement with a cell per representative size."""
    out: list[EffectTable] = []
    for pair in pairs(lines, axes):
        found = effects(cv, pair)
        if not found:
            continue
        sizes = sorted({e.size for e in found})
        rows: dict[tuple, EffectRow] = {}
        for e in found:
            key = (e.benchmark, e.table, e.placement)
            if key not in rows:
                name = e.benchmark + ("" if e.table == "default" else f" {e.table}")
                rows[key] = EffectRow(benchmark=name, bench=e.benchmark,
                                      placement=placement_label(e.placement),
                                      column=f"{e.column} ({unit_of(e.column)})",
                                      cells=[None] * len(sizes))
            rows[key].cells[sizes.index(e.size)] = cell(e, pair)
        out.append(EffectTable(
            id=f"effect-{len(out) + 1}", axis=pair.axis, title=pair.title,
            context=pair.context, also=pair.also,
            partition=pair.a.partition.split(":", 1)[-1],
            a=label(pair.a), b=label(pair.b),
            sizes=[human_size(int(s), " ") for s in sizes],
            rows=list(rows.values()), effects=found,
            headline=headline(list(rows.values())),
            resolved=sum(e.status == "resolved" for e in found),
            unresolved=sum(e.status == "spans0" for e in found),
            single=sum(e.status == "one-pass" for e in found)))
    return out


def headline(rows: list[EffectRow]) -> list[HeadlineRow]:
    """The rows of the pair's headline benchmark (every placement), cells by size class."""
    bench = next((b for b in HEADLINE if any(r.bench == b for r in rows)),
                 rows[0].bench if rows else None)
    out = []
    for r in rows:
        if r.bench == bench and r.benchmark == bench:  # its default table
            by_class = {c.size_class: c for c in r.cells if c}
            out.append(HeadlineRow(r.benchmark, r.placement,
                                   [by_class.get(name) for name, *_ in SIZE_CLASSES]))
    return out
