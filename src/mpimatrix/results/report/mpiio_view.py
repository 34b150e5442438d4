"""The MPI-IO bandwidth section: write bandwidth per build, mode (shared file, file per
process, gather to a writer), layout (contiguous, strided), cache or sync and size per
rank, with the spread over the trials.

A test case's run (reframe_checks/mpiio.py) keeps the trials' min, median and max
bandwidth (`mpiio_summary`: bw_MBps_min/median/max, trials); the gated value is the
median. Over the runs of the sessions the report is given whole (the night's passes
and the earlier sessions'): the value shown is the median of the runs' medians, its
95 % interval the percentile bootstrap of that median (medians.estimate: the runs'
min-max with two or three runs, none with one), and the trials' range is the lowest
min and the highest max over every trial of those runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ...suites.mpiio.output import LAYOUTS, MODES, SYNCS
from ...units import human_size
from ..measurements import Case
from .effects import seed_of
from .figures import Colours, Plot, grid, legend_below, log_y, to_plot
from .medians import Estimate, estimate
from .model import Line, ReportData, placement_label, placement_order
from .render import Job

CHECK = "MpiioCheck"
#: Bar colours per layout and cache/sync (Okabe-Ito), the same in every figure.
VARIANT_COLOURS = {("contiguous", "cache"): "#0072B2", ("contiguous", "sync"): "#56B4E9",
                   ("strided", "cache"): "#D55E00", ("strided", "sync"): "#E69F00"}


@dataclass(frozen=True)
class MpiioKey:
    build: str
    partition: str
    placement: str
    where: str
    mode: str
    layout: str
    sync: str
    size: int


@dataclass(frozen=True)
class MpiioCell:
    """One variant over the runs: the median of the runs' medians with its interval,
    the trials' range, runs and trials."""
    key: MpiioKey
    bw: Estimate  # MB/s
    trial_min: float
    trial_max: float
    trials: int


@dataclass(frozen=True)
class MpiioTable:
    """A build on a placement and where it wrote: rows mode x layout, columns sync x
    size."""
    title: str
    line: Line
    placement: str
    where: str
    sizes: list[int]
    columns: list[tuple[str, int]]  # (sync, size)
    rows: list[tuple[str, str, list[MpiioCell | None]]]  # mode, layout, cells

    @property
    def size_labels(self) -> list[str]:
        return [size_text(s) for s in self.sizes]


def _float(d: dict, k: str) -> float | None:
    try:
        return float(d[k])
    except (KeyError, TypeError, ValueError):
        return None


def key_of(c: Case) -> MpiioKey | None:
    vals = [c.recorded(k) for k in ("mode", "layout", "sync", "size")]
    if any(v in (None, "") for v in vals):
        return None
    where = c.recorded("where") or "stage"
    return MpiioKey(c.line.build, c.line.partition, c.placement, str(where),
                    str(vals[0]), str(vals[1]), str(vals[2]), int(vals[3]))


def cells(data: ReportData) -> list[MpiioCell]:
    medians: dict[MpiioKey, list[float]] = defaultdict(list)
    lows: dict[MpiioKey, list[float]] = defaultdict(list)
    highs: dict[MpiioKey, list[float]] = defaultdict(list)
    trials: dict[MpiioKey, int] = defaultdict(int)
    for s in data.sessions:
        for c in s.cases:
            if c.test_class != CHECK or not c.measured:
                continue
            key, summary = key_of(c), c.recorded("mpiio_summary")
            if key is None or not isinstance(summary, dict):
                continue
            med = _float(summary, "bw_MBps_median")
            if med is None:
                continue
            medians[key].append(med)
            lows[key].append(_float(summary, "bw_MBps_min") or med)
            highs[key].append(_float(summary, "bw_MBps_max") or med)
            trials[key] += int(_float(summary, "trials") or 1)
    return [MpiioCell(k, estimate(v, seed_of("mpiio", *vars(k).values())), min(lows[k]),
                      max(highs[k]), trials[k]) for k, v in medians.items()]


def _rank(value: str, order: Sequence[str]) -> int:
    return order.index(value) if value in order else len(order)


def tables(found: list[MpiioCell], colours: Colours) -> list[MpiioTable]:
    groups: dict[tuple, dict[tuple, MpiioCell]] = defaultdict(dict)
    for cell in found:
        k = cell.key
        groups[(k.build, k.partition, k.placement, k.where)][
            (k.mode, k.layout, k.sync, k.size)] = cell
    out = []
    for (build, part, pl, where), by in sorted(
            groups.items(), key=lambda g: (g[0][0], g[0][1], placement_order(g[0][2]),
                                           g[0][3])):
        sizes = sorted({v[3] for v in by})
        syncs = sorted({v[2] for v in by}, key=lambda s: _rank(s, SYNCS))
        modes = sorted({v[0] for v in by}, key=lambda m: _rank(m, MODES))
        layouts = sorted({v[1] for v in by}, key=lambda m: _rank(m, LAYOUTS))
        columns = [(sy, sz) for sz in sizes for sy in syncs]
        rows = [(m, lay, [by.get((m, lay, sy, sz)) for sy, sz in columns])
                for m in modes for lay in layouts
                if any((m, lay, sy, sz) in by for sy, sz in columns)]
        line = Line(build, part)
        title = f"{colours.label(line)} · {placement_label(pl)} · {where}"
        out.append(MpiioTable(title, line, pl, where, sizes, columns, rows))
    return out


def size_text(size: int) -> str:
    return f"{human_size(size, ' ')}/rank"


def mpiio_plot(table: MpiioTable, span: dict[int, tuple[float, float]] | None = None
               ) -> Plot | None:
    """Bandwidth per mode (x), a bar per layout and cache/sync, a panel per size; bar:
    the median over the runs, whiskers: the trials' min-max. `span`: the y range per
    size, the same for every build's figure (section())."""
    if not table.rows:
        return None
    modes = list(dict.fromkeys(m for m, _, _ in table.rows))
    variants = [v for v in VARIANT_COLOURS
                if any(lay == v[0] for _, lay, _ in table.rows)
                and any(sy == v[1] for sy, _ in table.columns)]
    fig, axes = grid(1, len(table.sizes), 3.0, 2.3, top=0.6, bottom=0.5,
                     legend=[f"{lay} · {sy}" for lay, sy in variants])
    flat = list(axes[0])
    by = {(m, lay, sy, sz): cell for m, lay, cs in table.rows
          for (sy, sz), cell in zip(table.columns, cs, strict=True) if cell}
    step = 0.8 / len(variants)
    for ax, size in zip(flat, table.sizes, strict=True):
        values = []
        for j, (lay, sy) in enumerate(variants):
            xs, ys, lo, hi = [], [], [], []
            for i, m in enumerate(modes):
                cell = by.get((m, lay, sy, size))
                if cell is None:
                    continue
                xs.append(i - 0.4 + step * (j + 0.5))
                ys.append(cell.bw.median)
                lo.append(cell.bw.median - cell.trial_min)
                hi.append(cell.trial_max - cell.bw.median)
                values += [cell.trial_min, cell.trial_max]
            if xs:
                ax.bar(xs, ys, width=step * 0.9, color=VARIANT_COLOURS[(lay, sy)],
                       label=f"{lay} · {sy}")
                ax.errorbar(xs, ys, yerr=[lo, hi], fmt="none", ecolor="#222222",
                            capsize=2, linewidth=0.8)
        ax.set_xticks(range(len(modes)), modes)
        ax.set_xlim(-0.6, len(modes) - 0.4)
        lo_hi = (span or {}).get(size)
        log_y(ax, list(lo_hi) if lo_hi else values)
        if lo_hi and ax.get_yscale() == "log":
            ax.set_ylim(lo_hi[0] / 1.3, lo_hi[1] * 1.3)
        elif lo_hi:
            ax.set_ylim(0, lo_hi[1] * 1.05)
        ax.set_ylabel("write bandwidth (MB/s)")
        ax.set_title(size_text(size))
    legend_below(fig, flat)
    fig.suptitle(table.title, fontsize=10)
    return to_plot(fig, f"mpiio-{table.line.build}-{table.line.partition}-{table.placement}"
                   f"-{table.where}", f"MPI-IO: {table.title}",
                   f"MPI-IO write bandwidth per mode, layout and sync, {table.title}")


def section(data: ReportData, colours: Colours) -> dict:
    """The template context of the MPI-IO section (empty lists: no MPI-IO case)."""
    every = cells(data)
    found = tables(every, colours)
    span = {size: (min(c.trial_min for c in of), max(c.trial_max for c in of))
            for size in {c.key.size for c in every}
            for of in [[c for c in every if c.key.size == size and c.trial_min > 0]] if of}
    return {"mpiio_tables": found,
            "mpiio_plots": [Job(mpiio_plot, (t, span)) for t in found]}
