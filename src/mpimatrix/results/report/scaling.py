"""The section "Collectives against processes": the seeds' process-count study
(reframe_checks/collective_scaling.py, docs/scaling.md).

Per build, benchmark (allreduce, alltoall), seed size and placement (nodes x ranks per
node), the time per call (us): the median over every sample the report's sessions hold
of it (the night's passes, earlier sessions given whole, confirmations). Its spread: the
samples' min-max when there are two or more, else, for a single run, OSU's min-max of
the time over the ranks (-f: min_latency, max_latency of the run's curve).

Efficiency against processes per node, on the same nodes and size:

    E(N, p) = t(N x p0) / t(N x p)

p0 the fewest ranks per node measured on N nodes (1; 2 on one node, where one rank
makes no collective). E = 1: the call takes no longer with p ranks per node than with
p0; 0.5: twice as long. Its interval: the base's median over the spread of t(N x p).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass

from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from ...suites.osu.scaling import BENCHMARKS, SEED_SIZES
from ...units import human_size
from .figures import Colours, Plot, grid, legend_below, log_y, to_plot
from .model import TIMES, Line, ReportData
from .render import Job
from .styles import MARKERS

CHECK = "CollectiveScalingCheck"


@dataclass(frozen=True)
class Point:
    """The time of one call of a benchmark at a size on a placement, over its samples."""
    line: Line
    benchmark: str
    size: int
    nodes: int
    ppn: int
    time: float  # median, us
    lo: float
    hi: float
    n: int  # samples
    spread: str  # "samples", "ranks" (OSU's min-max over the ranks of one run) or ""
    #: more busy ranks than cores (the emulated cluster's nodes share the machine's): the
    #: time measures the OS scheduler as much as the MPI
    oversubscribed: bool = False

    @property
    def ranks(self) -> int:
        return self.nodes * self.ppn

    @property
    def placement(self) -> str:
        return f"{self.nodes}{TIMES}{self.ppn}"


@dataclass(frozen=True)
class Efficiency:
    """E(N, p) = t(N x p0) / t(N x p) of a point, with its interval."""
    point: Point
    base_ppn: int
    value: float
    lo: float
    hi: float


def _rank_spread(curve: dict | None, size: int) -> tuple[float, float] | None:
    for row in (curve or {}).get("default") or []:
        try:
            if int(row.get("size", -1)) == size:
                return float(row["min_latency"]), float(row["max_latency"])
        except (KeyError, TypeError, ValueError):
            return None
    return None


def points(data: ReportData) -> list[Point]:
    """Every (build, benchmark, size, placement) of the report's scaling cases."""
    samples: dict[tuple, list[float]] = defaultdict(list)
    ranks: dict[tuple, tuple[float, float] | None] = {}
    crowded: set[tuple] = set()
    for s in [*data.sessions, *data.confirmations]:
        for c in s.cases:
            if c.test_class != CHECK or not c.measured or c.shape is None:
                continue
            bench = str(c.recorded("benchmark") or "")
            if bench not in SEED_SIZES:
                continue
            for v in c.values:
                if v.value is None or v.size not in SEED_SIZES[bench]:
                    continue
                key = (c.line, bench, v.size, c.shape.nodes, c.shape.ppn)
                samples[key].append(float(v.value))
                ranks[key] = _rank_spread(c.curve, v.size)
                if c.oversubscribed:
                    crowded.add(key)
    out = []
    for key, vals in samples.items():
        med = statistics.median(vals)
        if len(vals) > 1:
            lo, hi, how = min(vals), max(vals), "samples"
        elif (spread := ranks.get(key)) is not None:
            lo, hi, how = min(spread[0], med), max(spread[1], med), "ranks"
        else:
            lo, hi, how = med, med, ""
        out.append(Point(*key, time=med, lo=lo, hi=hi, n=len(vals), spread=how,
                         oversubscribed=key in crowded))
    return sorted(out, key=lambda p: (p.benchmark, p.line, p.size, p.nodes, p.ppn))


def efficiencies(found: list[Point]) -> list[Efficiency]:
    """E(N, p) of every point against the fewest ranks per node on its nodes."""
    groups: dict[tuple, list[Point]] = defaultdict(list)
    for p in found:
        groups[(p.line, p.benchmark, p.size, p.nodes)].append(p)
    out = []
    for group in groups.values():
        base = min(group, key=lambda p: p.ppn)
        for p in sorted(group, key=lambda p: p.ppn):
            if p.time <= 0:
                continue
            out.append(Efficiency(p, base.ppn, base.time / p.time,
                                  base.time / p.hi if p.hi > 0 else math.nan,
                                  base.time / p.lo if p.lo > 0 else math.nan))
    return out


def _int_axis(ax, values: list[int], log: bool, label: str) -> None:
    ticks = sorted(set(values))
    if log:
        ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    if len(ticks) == 1:
        ax.set_xlim(ticks[0] / 1.5 if log else ticks[0] - 1, ticks[0] * 1.5 if log
                    else ticks[0] + 1)
    ax.set_xlabel(label)


#: The colour of the cross on an oversubscribed point.
CROWDED = "#444444"


def _cross(ax, xy: list[tuple[float, float]]) -> None:
    if xy:
        ax.plot([x for x, _ in xy], [y for _, y in xy], marker="x", markersize=7,
                linestyle="none", color=CROWDED, zorder=5)


def scaling_plot(benchmark: str, found: list[Point], effs: list[Efficiency],
                 colours: Colours) -> Plot | None:
    """Top row: time against total processes, a panel per seed size; bottom row:
    efficiency against processes per node. Colour (and dash): the build; marker: the
    node count."""
    pts = [p for p in found if p.benchmark == benchmark]
    if not pts:
        return None
    sizes = [s for s in SEED_SIZES[benchmark] if any(p.size == s for p in pts)]
    lines = sorted({p.line for p in pts})
    nodes = sorted({p.nodes for p in pts})
    marker = {n: MARKERS[i % len(MARKERS)] for i, n in enumerate(nodes)}
    key = [(Line2D([], [], color="#555555", marker=marker[n], linestyle="none"),
            f"{n} node{'s' if n > 1 else ''}") for n in nodes]
    if any(p.oversubscribed for p in pts):
        key.append((Line2D([], [], color=CROWDED, marker="x", linestyle="none"),
                    "oversubscribed"))
    key += colours.key({ln.build for ln in lines})
    fig, axes = grid(2, len(sizes), 2.9, 2.2, top=0.6, bottom=0.55, gap_h=0.75,
                     legend=[colours.label(ln) for ln in lines], key=[k for _, k in key])
    for col, size in enumerate(sizes):
        tax, eax = axes[0][col], axes[1][col]
        values: list[float] = []
        for ln in lines:
            style = colours.of(ln)
            for n in nodes:
                row = sorted((p for p in pts if p.line == ln and p.size == size
                              and p.nodes == n), key=lambda p: p.ranks)
                if not row:
                    continue
                tax.errorbar([p.ranks for p in row], [p.time for p in row],
                             yerr=[[p.time - p.lo for p in row], [p.hi - p.time for p in row]],
                             marker=marker[n], markersize=4, capsize=2, linewidth=1.2,
                             label=colours.label(ln), **style)
                values += [p.lo for p in row] + [p.hi for p in row]
                erow = sorted((e for e in effs if e.point in row), key=lambda e: e.point.ppn)
                eax.errorbar([e.point.ppn for e in erow], [e.value for e in erow],
                             yerr=[[max(0.0, e.value - e.lo) for e in erow],
                                   [max(0.0, e.hi - e.value) for e in erow]],
                             marker=marker[n], markersize=4, capsize=2, linewidth=1.2,
                             **style)
                _cross(tax, [(p.ranks, p.time) for p in row if p.oversubscribed])
                _cross(eax, [(e.point.ppn, e.value) for e in erow if e.point.oversubscribed])
        _int_axis(tax, [p.ranks for p in pts if p.size == size], True, "processes")
        log_y(tax, values)
        tax.set_ylabel("time per call (us)")
        tax.set_title(f"{benchmark} {human_size(size, ' ')}")
        _int_axis(eax, [p.ppn for p in pts if p.size == size], False, "processes per node")
        top = max([1.1, *(e.value for e in effs if e.point.benchmark == benchmark
                          and e.point.size == size)])
        eax.set_ylim(0, min(top * 1.15, 3.0))  # whiskers past it are cut
        eax.axhline(1.0, color="#999999", linewidth=0.8, zorder=0)
        eax.set_ylabel(f"efficiency t(N{TIMES}p0)/t(N{TIMES}p)")
    legend_below(fig, list(axes[0]), key)
    fig.suptitle(f"osu_{benchmark} against the process count", fontsize=10)
    return to_plot(fig, f"scaling-{benchmark}", f"{benchmark} against processes",
                   f"osu_{benchmark}: time per call against processes and efficiency "
                   "against processes per node, per build")


@dataclass(frozen=True)
class Row:
    """A table row: one build on one placement, its times (and efficiencies) per size."""
    build: str
    placement: str
    ranks: int
    cells: list[tuple[Point, Efficiency | None] | None]
    oversubscribed: bool = False


@dataclass(frozen=True)
class Table:
    benchmark: str
    sizes: list[str]
    rows: list[Row]


def tables(found: list[Point], effs: list[Efficiency], colours: Colours) -> list[Table]:
    eff = {e.point: e for e in effs}
    out = []
    for bench in BENCHMARKS:
        pts = [p for p in found if p.benchmark == bench]
        if not pts:
            continue
        sizes = [s for s in SEED_SIZES[bench] if any(p.size == s for p in pts)]
        by = {(p.line, p.nodes, p.ppn, p.size): p for p in pts}
        rows = []
        for ln, n, ppn in sorted({(p.line, p.nodes, p.ppn) for p in pts},
                                 key=lambda k: (k[0], k[1] * k[2], k[1])):
            cells: list[tuple[Point, Efficiency | None] | None] = []
            for s in sizes:
                p = by.get((ln, n, ppn, s))
                cells.append((p, eff.get(p)) if p else None)
            crowded = any(c[0].oversubscribed for c in cells if c)
            rows.append(Row(colours.label(ln), f"{n}{TIMES}{ppn}", n * ppn, cells, crowded))
        out.append(Table(bench, [human_size(s, " ") for s in sizes], rows))
    return out


def section(data: ReportData, colours: Colours) -> dict:
    """The template context of the section (empty lists: no scaling case)."""
    found = points(data)
    effs = efficiencies(found)
    shown = [b for b in BENCHMARKS if any(p.benchmark == b for p in found)]
    return {"scaling_tables": tables(found, effs, colours),
            "scaling_plots": [Job(scaling_plot, (b, found, effs, colours)) for b in shown]}
