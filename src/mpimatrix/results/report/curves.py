"""Per benchmark: value vs message size, one line per build (every build of the session on
one plot: family by colour, fabric by dash, compiler by marker, styles.py), the min-max
band over the repetitions around the median, intranode beside internode, references drawn
where they exist; unsized values (Barrier, atomics) as bars."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..measurements import Case
from .figures import (
    LEGEND_ROW,
    Colours,
    Plot,
    grid,
    key_height,
    legend_below,
    legend_columns,
    log_y,
    size_axis,
    to_plot,
)
from .model import Line, placement_label, placement_order
from .render import Job
from .repetitions import RATE_COLUMNS, Columns, Curves, Point, higher_is_better, sized, unit_of

PAIR = ("intranode", "internode")
#: builds on a plot above which the plots share one legend, drawn once above them: a
#: legend of 40 builds under each of 80 plots took a third of their drawing time and
#: half of each figure
SHARED_LEGEND = 12
#: (benchmark, placement, line, higher is better) -> [(size, ref, low, high)]
RefPoints = dict[tuple[str, str, Line, bool], list[tuple[float, float, float, float]]]


def reference_points(cases: Sequence[Case]) -> RefPoints:
    """The references of the sized performance values, with their tolerance band."""
    out: RefPoints = defaultdict(list)
    seen = set()
    for c in cases:
        for pv in c.values:
            if not pv.ref or pv.size is None or pv.is_share:
                continue
            key = (c.benchmark, c.placement, c.line, pv.higher_is_better)
            if (key, pv.size) in seen:
                continue
            seen.add((key, pv.size))
            lo = pv.ref * (1 + pv.lower) if pv.lower is not None else pv.ref
            hi = pv.ref * (1 + pv.upper) if pv.upper is not None else pv.ref
            out[key].append((float(pv.size), pv.ref, lo, hi))
    return out


def shown_placements(placements: list[str]) -> list[str]:
    """Intranode beside internode; other layouts only when a benchmark has neither."""
    pair = [p for p in PAIR if p in placements]
    return pair or sorted(placements, key=placement_order)[:2]


def curve_jobs(cv: Curves, refs: RefPoints, colours: Colours) -> list[Job]:
    every = sorted({ln for cols in cv.values() for pls in cols.values() for per in pls.values()
                    for ln, pts in per.items() if sized(pts)})
    shared = len(every) > SHARED_LEGEND
    out = [Job(legend_plot, (every, bool(refs), colours))] if shared else []
    # point-to-point (a rate column) first, then collectives, each by name
    for (bench, table), cols in sorted(cv.items(), key=lambda kv: (
            not any(c in RATE_COLUMNS for c in kv[1]), kv[0])):
        if not any(sized(pts) for pls in cols.values() for ln in pls.values()
                   for pts in ln.values()):
            continue
        out.append(Job(benchmark_plot, (bench, table, cols, refs, colours, shared)))
    return out


def legend_plot(lines: list[Line], with_refs: bool, colours: Colours,
                pid: str = "curve-legend") -> Plot:
    """The legend the benchmark (or trend) plots share when they hold many builds."""
    handles = [Line2D([], [], marker=colours.marker(ln), markersize=4, linewidth=1.4,
                      **colours.of(ln)) for ln in lines]
    labels = [colours.label(ln) for ln in lines]
    if with_refs:
        handles.append(Line2D([], [], marker="D", markersize=5, mfc="none",
                              linestyle="none", color="#444444"))
        labels.append("reference ± tolerance")
    key = colours.key(ln.build for ln in lines)
    keyed = [label for _, label in key]
    width = 8.6
    rows = math.ceil(len(labels) / legend_columns(width, labels))
    fig = Figure(figsize=(width, 0.45 + LEGEND_ROW * rows + key_height(width, keyed)))
    fig.suptitle(f"The {len(lines)} builds of the plots below", fontweight="bold")
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 1 - 0.4 /
               fig.get_figheight()), ncol=legend_columns(width, labels), frameon=False)
    if key:
        fig.legend([h for h, _ in key], keyed, loc="lower center",
                   ncol=min(legend_columns(width, keyed, 6), len(key)), frameon=False,
                   handlelength=2.6, labelcolor="#444444")
    return to_plot(fig, pid, "legend", f"the {len(lines)} builds: "
                   + ", ".join(labels))


def benchmark_plot(bench: str, table: str, cols: Columns, refs: RefPoints,
                   colours: Colours, shared_legend: bool = False) -> Plot:
    fig, title, alt = benchmark_figure(bench, table, cols, refs, colours, shared_legend)
    return to_plot(fig, f"curve-{title}", title, alt)


def benchmark_figure(bench: str, table: str, cols: Columns, refs: RefPoints,
                     colours: Colours, shared_legend: bool = False
                     ) -> tuple[Figure, str, str]:
    """The figure of one benchmark: a row per column (time, rate), a panel per placement,
    a line per build (its gid "build:<name>"), its legend under it unless the plots
    share one; its title and alt text."""
    columns = list(cols)
    placements = shown_placements(sorted({p for c in cols.values() for p in c}))
    every = {ln for c in cols.values() for pl in placements for ln in c.get(pl, {})}
    labels = [colours.label(ln) for ln in sorted(every)]
    if any(refs.get((bench, pl, ln, higher_is_better(col)))
           for col in columns for pl in placements for ln in every):
        labels.append("reference ± tolerance")
    key = [] if shared_legend else colours.key(ln.build for ln in every)
    fig, axes = grid(len(columns), len(placements), 3.6, 2.2, top=0.75,
                     legend=None if shared_legend else labels, key=[label for _, label in key])
    title = f"{bench}{'' if table == 'default' else ' ' + table}"
    for i, col in enumerate(columns):
        for j, pl in enumerate(placements):
            ax = axes[i][j]
            lines = cols[col].get(pl, {})
            draw_lines(ax, lines, colours)
            draw_refs(ax, [(ln, refs.get((bench, pl, ln, higher_is_better(col)), []))
                           for ln in lines], colours)
            size_axis(ax, [p.size for pts in lines.values() for p in pts if p.size])
            log_y(ax, [v for pts in lines.values() for p in pts for v in p.values])
            ax.set_ylabel(f"{col} ({unit_of(col)})")
            if i == 0:
                ax.set_title(placement_label(pl))
            if not lines:
                ax.text(0.5, 0.5, "not run", transform=ax.transAxes, ha="center",
                        color="#888888")
    fig.suptitle(title, fontweight="bold")
    if not shared_legend:
        legend_below(fig, axes.flat, key)
    alt = (f"{title}: {', '.join(columns)} vs message size, {' and '.join(placements)}, "
           f"{len({ln.build for ln in every})} builds")
    return fig, title, alt


def draw_lines(ax, lines: dict[Line, list[Point]], colours: Colours) -> None:
    """A line per build and, where it ran more than once, its min-max band: artists made
    directly and the bands in one collection (ax.plot and fill_between per build took
    half of a 40-build plot's time)."""
    alpha = 0.18 if len(lines) <= 4 else 0.1  # many bands over each other: lighter
    bands, band_colours = [], []
    for line, pts in sorted(lines.items()):
        pts = [p for p in pts if p.size]
        if not pts:
            continue
        style = colours.of(line)
        x = [float(p.size or 0) for p in pts]
        ax.add_line(Line2D(x, [p.mid for p in pts], marker=colours.marker(line),
                           markersize=4, linewidth=1.4, label=colours.label(line),
                           gid=f"build:{line.build}", **style))
        if any(p.n > 1 for p in pts):
            bands.append([*zip(x, (p.hi for p in pts), strict=True),
                          *reversed(list(zip(x, (p.lo for p in pts), strict=True)))])
            band_colours.append(style["color"])
    if bands:
        ax.add_collection(PolyCollection(bands, facecolors=band_colours, alpha=alpha,
                                         linewidths=0), autolim=True)
    ax.autoscale_view()


def draw_refs(ax, per_line, colours: Colours) -> None:
    for line, points in per_line:
        for size, ref, lo, hi in points:
            ax.errorbar([size], [ref], yerr=[[ref - lo], [hi - ref]], fmt="D",
                        markersize=5, mfc="none", capsize=4, elinewidth=1,
                        color=colours.of(line)["color"], label="reference ± tolerance")


def unsized_plot(cv: Curves, colours: Colours) -> Plot | None:
    """Single-value benchmarks as bars (median) with min-max whiskers, per placement."""
    rows: dict[str, dict[str, dict[Line, Point]]] = defaultdict(dict)
    for (bench, table), cols in sorted(cv.items()):
        col = next(iter(cols))
        for pl, per_line in cols[col].items():
            for line, pts in per_line.items():
                if pts and not sized(pts):
                    name = f"{bench}{'' if table == 'default' else ' ' + table}"
                    rows[pl].setdefault(name, {})[line] = pts[0]
    if not rows:
        return None
    placements = shown_placements(list(rows))
    names = sorted({n for pl in placements for n in rows[pl]})
    lines = sorted({ln for pl in placements for v in rows[pl].values() for ln in v})
    fig, axes = grid(1, len(placements), 3.4, max(1.5, 0.16 * len(names) * len(lines)),
                     left=0.35 + 0.075 * max(len(n) for n in names), top=0.75, bottom=0.55,
                     legend=[colours.label(ln) for ln in lines], gap_w=0.3, sharey=True)
    axes = axes[0]
    h = 0.8 / max(1, len(lines))
    for ax, pl in zip(axes, placements, strict=False):
        for k, line in enumerate(lines):
            ys: list[float] = []
            mids: list[float] = []
            errs: list[list[float]] = [[], []]
            for i, n in enumerate(names):
                p = rows[pl].get(n, {}).get(line)
                if p is not None:
                    ys.append(i + k * h - 0.4 + h / 2)
                    mids.append(p.mid)
                    errs[0].append(p.mid - p.lo)
                    errs[1].append(p.hi - p.mid)
            ax.barh(ys, mids, height=h * 0.9, xerr=errs, capsize=2, alpha=0.85,
                    label=colours.label(line), **colours.bar(line))
        ax.set_yticks(range(len(names)), names)
        ax.invert_yaxis()
        log_y(ax, [p.hi for n in names for p in rows[pl].get(n, {}).values()], axis="x")
        ax.set_xlabel("time (µs)")
        ax.set_title(placement_label(pl))
    fig.suptitle("Single-value benchmarks", fontweight="bold")
    legend_below(fig, axes)
    return to_plot(fig, "unsized", "Single-value benchmarks",
                   "bars of the single-value benchmarks per build")
