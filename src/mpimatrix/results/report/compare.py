"""Build vs build: every other build's time over the baseline's, per benchmark, layout and
message size, coloured only where the difference is larger than the measured spread."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from matplotlib.colors import ListedColormap, TwoSlopeNorm

from ...units import human_size
from .figures import Colours, Plot, grid, to_plot
from .model import DASH, Line, placement_order
from .render import Job
from .repetitions import Curves, Ratio, ratios, unit_of

#: Colour scale limit: ratios beyond 4x (or 1/4) get the full colour.
CLIP = 2.0  # log2
#: Cells measured by both builds whose difference is within the spread.
WITHIN_SPREAD = ListedColormap(["#ececec"])


@dataclass(frozen=True)
class Difference:
    """A difference beyond the spread: a build's median over the baseline's, at a size."""
    build: str
    benchmark: str
    size: str
    base: float
    other: float
    unit: str
    ratio: float
    verdict: str  # faster, slower
    n: str  # passes of the baseline/the other build


@dataclass
class CompareCounts:
    """Ratios against the baseline, those beyond the spread, those measured once (no
    spread), and the builds compared."""
    ratios: int = 0
    significant: int = 0
    single: int = 0
    builds: int = 0


def choose_baseline(lines: list[Line], wanted: str | None) -> Line | None:
    """The line of the build named (or its environment name), else the first build."""
    if not lines:
        return None
    if wanted:
        for ln in lines:
            if wanted in (ln.build, ln.build.replace(".", "_"), str(ln)):
                return ln
        return None
    return lines[0]


def row_label(r: Ratio) -> str:
    table = "" if r.table == "default" else f" {r.table}"
    return f"{r.benchmark}{table} · {r.placement}"


def heatmap(base: Line, other: Line, rs: list[Ratio], colours: Colours) -> Plot | None:
    if not rs:
        return None
    rows = sorted({row_label(r): (placement_order(r.placement), r.benchmark, r.table)
                   for r in rs}.items(), key=lambda kv: (kv[1][0], kv[1][1], kv[1][2]))
    row_names = [k for k, _ in rows]
    sizes = sorted({r.size for r in rs}, key=lambda s: (s is not None, s or 0))
    cells = np.full((len(row_names), len(sizes)), np.nan)
    sig = np.zeros_like(cells, dtype=bool)
    text = {}
    for r in rs:
        i, j = row_names.index(row_label(r)), sizes.index(r.size)
        if r.ratio > 0 and math.isfinite(r.ratio):
            cells[i, j] = math.log2(r.ratio)
            sig[i, j] = r.significant
            text[i, j] = f"{r.ratio:.2g}"
    fig, axes = grid(1, 1, max(3.4, 0.5 * len(sizes) + 0.3), max(0.5, 0.22 * len(row_names)),
                     left=0.3 + 0.062 * max(len(n) for n in row_names), right=0.3, top=0.6,
                     bottom=0.85)
    ax = axes[0][0]
    shown = np.where(sig, np.clip(cells, -CLIP, CLIP), np.nan)
    norm = TwoSlopeNorm(vcenter=0, vmin=-CLIP, vmax=CLIP)
    ax.imshow(np.where(np.isnan(cells), np.nan, 0), cmap=WITHIN_SPREAD, aspect="auto",
              interpolation="nearest")
    ax.imshow(shown, cmap="RdYlGn_r", norm=norm, aspect="auto", interpolation="nearest")
    for (i, j), t in text.items():
        if sig[i, j]:  # only the differences beyond the spread are marked
            ax.text(j, i, t, ha="center", va="center", fontsize=7)
    ax.set_xticks(range(len(sizes)), [human_size(int(s), " ") if s else DASH for s in sizes],
                  rotation=45, ha="right")
    ax.set_yticks(range(len(row_names)), row_names)
    ax.grid(False)
    ax.set_xlabel("message size")
    title = f"{colours.label(other)} / {colours.label(base)}"
    ax.set_title(f"{colours.label(other)}\nover {colours.label(base)} (baseline)")
    return to_plot(fig, f"versus-{other.build}-{other.partition}", title,
                   f"heat map of the time ratio of {title} per benchmark and size")


def top_differences(base: Line, other: Line, rs: list[Ratio], colours: Colours,
                    limit: int = 12) -> list[Difference]:
    sig = sorted((r for r in rs if r.significant), key=lambda r: -abs(math.log(r.ratio)))
    return [Difference(build=colours.label(other), benchmark=row_label(r),
                       size=human_size(int(r.size), " ") if r.size else DASH,
                       base=r.base.mid, other=r.other.mid, unit=unit_of(r.column),
                       ratio=r.ratio, verdict="faster" if r.ratio < 1 else "slower",
                       n=f"{r.base.n}/{r.other.n}") for r in sig[:limit]]


def comparisons(cv: Curves, lines: list[Line], base: Line, colours: Colours,
                limit: int = 12
                ) -> tuple[list[Job], list[Difference], CompareCounts]:
    """Heat maps (of the `limit` builds with the most differences beyond the spread, in
    the order of the lines; 0: every build) and the largest significant differences of
    every line against the base; counts of ratios, significant ones, those measured once
    (no spread), and the builds compared."""
    rows: list[Difference] = []
    counts = CompareCounts()
    drawn: list[tuple[Line, list[Ratio]]] = []
    for other in lines:
        if other == base:
            continue
        rs = ratios(cv, base, other)
        counts.ratios += len(rs)
        counts.significant += sum(r.significant for r in rs)
        counts.single += sum(min(r.base.n, r.other.n) < 2 for r in rs)
        if rs:
            drawn.append((other, rs))
        rows += top_differences(base, other, rs, colours)
    counts.builds = len(drawn)
    if 0 < limit < len(drawn):
        most = sorted(range(len(drawn)), key=lambda k: -sum(r.significant
                                                             for r in drawn[k][1]))[:limit]
        drawn = [drawn[k] for k in sorted(most)]
    plots = [Job(heatmap, (base, other, rs, colours)) for other, rs in drawn]
    return plots, rows, counts
