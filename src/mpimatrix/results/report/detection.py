"""What the gate can see: the detection floor of every gated value and whole build
(results/floors.py), as a table per build, a table per value and a plot."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

from .. import floors
from ..reference_set import ReferenceSet
from ..values import Kind
from .figures import Plot, grid, legend_below, to_plot
from .model import DASH
from .render import Context, Job

#: Floors drawn at most this far (a wider one is drawn at the edge, its text says more).
PLOT_LIMIT = 1.0


def floor_section(refset: ReferenceSet) -> Context:
    """The section's context: per build (partition, environment) the gated values, their
    median and worst floor and the whole build's floor; every value's floor; the plot."""
    values = floors.value_floors(refset)
    whole = {(f.partition, f.environ): f for f in floors.build_floors(refset)}
    by_build: dict[tuple[str, str], list[floors.Floor]] = defaultdict(list)
    for f in values:
        by_build[f.partition, f.environ].append(f)
    builds = []
    for key in sorted(set(by_build) | set(whole)):
        mine = by_build.get(key, [])
        rel = [f.step for f in mine if f.kind != Kind.SHARE]
        builds.append({"partition": key[0], "environ": key[1], "gated": len(mine),
                       "median": _pct(statistics.median(rel)) if rel else DASH,
                       "worst": _pct(max(rel)) if rel else DASH,
                       "whole": whole[key].text() if key in whole else DASH})
    rows = [{"partition": f.partition, "environ": f.environ, "ref_key": f.ref_key,
             "var": f.var, "spread": _spread(f), "tolerance": _tolerance(f),
             "floor": f.text()} for f in values]
    return {"floor_builds": builds, "floor_values": rows,
            "floor_summary": floors.summary(values, whole.values()),
            "floor_plot": Job(floor_plot, (values, list(whole.values()))) if values else None}


def _pct(x: float) -> str:
    return f"{x:.0%}" if math.isfinite(x) else "none seen"


def _spread(f: floors.Floor) -> str:
    return f"{f.spread:.1f} points" if f.kind == Kind.SHARE else f"{f.spread:.1%}"


def _tolerance(f: floors.Floor) -> str:
    return f"{f.tolerance:.0f} points" if f.kind == Kind.SHARE else f"{f.tolerance:.0%}"


def floor_plot(values: list[floors.Floor], builds: list[floors.Floor]) -> Plot | None:
    """One row per build: a dot per gated time or rate at its floor, a bar at the whole
    build's floor (shares, judged in points, are in the table only)."""
    rel = [f for f in values if f.kind != Kind.SHARE]
    if not rel:
        return None
    names = sorted({(f.partition, f.environ) for f in rel} | {(b.partition, b.environ)
                                                               for b in builds})
    multi = len({p for p, _ in names}) > 1
    label = {k: f"{k[1]} ({k[0]})" if multi else k[1] for k in names}
    longest = max(len(s) for s in label.values())
    labels = ["a value's floor", "the whole build's floor"]
    fig, axes = grid(1, 1, 5.6, 0.32 * len(names) + 0.3, left=0.3 + 0.065 * longest,
                     top=0.45, bottom=0.5, legend=labels)
    ax = axes[0][0]
    row = {k: i for i, k in enumerate(names)}
    drawn = [min(f.step, PLOT_LIMIT) for f in rel]
    ax.scatter([100 * x for x in drawn], [row[f.partition, f.environ] for f in rel], s=18,
               color="#0072B2", alpha=0.6, label=labels[0], zorder=3)
    if builds:
        ax.scatter([100 * min(b.step, PLOT_LIMIT) for b in builds],
                   [row[b.partition, b.environ] for b in builds], marker="|", s=260,
                   linewidths=2.5, color="#D55E00", label=labels[1], zorder=4)
    ax.set_yticks(range(len(names)), [label[k] for k in names])
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlim(0, 100 * max(max(drawn), *(min(b.step, PLOT_LIMIT) for b in builds), 0.1)
                * 1.08)
    ax.set_xlabel("smallest step caught the night it happens, 95 % of the time (%)")
    ax.set_title("Detection floor per build")
    legend_below(fig, [ax])
    return to_plot(fig, "detection-floor", "Detection floor per build",
                   "the detection floor of each gated value and whole build, per build")
