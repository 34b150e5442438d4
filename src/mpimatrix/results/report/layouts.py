"""Collectives across layouts (time vs nodes x ranks per node, the scaling views of the
IMB studies) and where intranode and internode curves cross (seed 003's SHM vs network
threshold)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...units import human_size
from .figures import Colours, Plot, grid, legend_below, plain_log, size_axis, to_plot
from .model import DASH, TIMES, placement_label, placement_order
from .repetitions import TIME_COLUMNS, Crossover, Curves, Placements, unit_of


def layout_benchmarks(cv: Curves) -> list[tuple[str, str, str]]:
    """(benchmark, table, time column) measured on at least two layouts of more than
    two ranks, or on intranode, internode and one more."""
    out = []
    for (bench, table), cols in sorted(cv.items()):
        col = next((c for c in TIME_COLUMNS if c in cols), None)
        if col and len(cols[col]) >= 3:
            out.append((bench, table, col))
    return out


def chosen_sizes(cols_pl: Placements) -> list[float | None]:
    """The sizes the layout views show: the smallest (>= 8 B) and 1 MiB (else the
    largest), or None for an unsized benchmark."""
    sizes = sorted({p.size for lines in cols_pl.values() for pts in lines.values()
                    for p in pts if p.size})
    if not sizes:
        return [None]
    small = next((s for s in sizes if s >= 8), sizes[0])
    large = (1 << 20) if (1 << 20) in sizes else sizes[-1]
    return [small] if large == small else [small, large]


def layout_plot(bench: str, table: str, col: str, cv: Curves, colours: Colours) -> Plot:
    by_pl = cv[(bench, table)][col]
    placements = sorted(by_pl, key=placement_order)
    sizes = chosen_sizes(by_pl)
    lines = sorted({ln for pl in by_pl.values() for ln in pl})
    fig, axes = grid(1, len(sizes), 3.4, 2.2, top=0.75, bottom=0.85,
                     legend=[colours.label(ln) for ln in lines])
    axes = axes[0]
    for ax, size in zip(axes, sizes, strict=False):
        for line in lines:
            xs, mids, lo, hi = [], [], [], []
            for i, pl in enumerate(placements):
                p = next((p for p in by_pl[pl].get(line, []) if p.size == size), None)
                if p is not None:
                    xs.append(i)
                    mids.append(p.mid)
                    lo.append(p.mid - p.lo)
                    hi.append(p.hi - p.mid)
            if xs:
                ax.errorbar(xs, mids, yerr=[lo, hi], marker="o", markersize=4, capsize=3,
                            linewidth=1.3, label=colours.label(line), **colours.of(line))
        ax.set_xticks(range(len(placements)),
                      [placement_label(p).replace(" (", "\n(") for p in placements])
        ax.set_xlabel(f"nodes {TIMES} ranks per node")
        ax.set_yscale("log")
        plain_log(ax.yaxis)
        ax.set_ylabel(f"{col} ({unit_of(col)})")
        ax.set_title(human_size(int(size), " ") if size else "unsized")
    title = f"{bench}{'' if table == 'default' else ' ' + table}"
    fig.suptitle(title, fontweight="bold")
    legend_below(fig, axes)
    return to_plot(fig, f"layout-{bench}-{table}", title,
                   f"{title}: time per layout and build")


def crossover_plot(items: list[Crossover], colours: Colours) -> Plot | None:
    """Small multiples: internode / intranode time per size, per build; 1 = equal."""
    if not items:
        return None
    groups: dict[tuple[str, str], list[Crossover]] = {}
    for x in items:
        groups.setdefault((x.benchmark, x.table), []).append(x)
    ncol = min(3, len(groups))
    nrow = math.ceil(len(groups) / ncol)
    lines = {x.line for x in items}
    fig, axes = grid(nrow, ncol, 2.9, 1.9, top=0.75,
                     legend=[colours.label(ln) for ln in lines])
    for ax in axes.flat[len(groups):]:
        ax.set_visible(False)
    for ax, ((bench, table), xs) in zip(axes.flat, sorted(groups.items()), strict=False):
        for x in xs:
            sizes = [s for s, _ in x.ratio_curve]
            ax.plot(sizes, [r for _, r in x.ratio_curve], marker="o", markersize=3,
                    label=colours.label(x.line), **colours.of(x.line))
            if x.size:
                ax.axvline(x.size, color=colours.of(x.line)["color"], linestyle=":",
                           linewidth=1)
        ax.axhline(1, color="#444444", linewidth=0.8)
        size_axis(ax, [s for x in xs for s, _ in x.ratio_curve])
        ax.set_yscale("log")
        plain_log(ax.yaxis)
        ax.set_ylabel("internode / intranode")
        ax.set_title(f"{bench}{'' if table == 'default' else ' ' + table}")
    fig.suptitle("Internode over intranode time (above 1: intranode faster; dotted: "
                 "crossover)", fontweight="bold")
    legend_below(fig, axes.flat)
    return to_plot(fig, "crossover", "Intranode vs internode",
                   "ratio of internode to intranode time per message size and build")


def approx_size(n: float) -> str:
    """An interpolated size, rounded as people say it: ~100 KiB, ~3.5 MiB, ~900 B."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"~{rounded(n / scale)} {unit}"
    return f"~{rounded(n)} B"


def rounded(x: float) -> str:
    return f"{round(x)}" if x >= 10 else f"{x:.2g}"


@dataclass(frozen=True)
class CrossoverRow:
    """A benchmark: where its intranode and internode curves cross, a cell per build."""
    benchmark: str
    cells: list[str]


def crossover_table(items: list[Crossover], colours: Colours
                    ) -> tuple[list[str], list[CrossoverRow]]:
    """Benchmarks by builds: where the intranode and internode curves cross."""
    lines = sorted({x.line for x in items})
    rows: dict[str, CrossoverRow] = {}
    for x in items:
        name = x.benchmark + ("" if x.table == "default" else f" {x.table}")
        row = rows.setdefault(name, CrossoverRow(name, [""] * len(lines)))
        other = "internode" if x.faster_small == "intranode" else "intranode"
        lo, hi = (human_size(int(s), " ") for s in x.sizes)
        row.cells[lines.index(x.line)] = (
            f"{approx_size(x.size)}: {other} faster above" if x.size
            else f"none in {lo}{DASH}{hi}: {x.faster_small} faster")
    return [colours.label(ln) for ln in lines], [rows[k] for k in sorted(rows)]
