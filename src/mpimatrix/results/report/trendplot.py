"""Figures of the nightly trends and of the cost."""

from __future__ import annotations

import datetime as dt

from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

from .cost import CostRow
from .figures import Colours, Plot, grid, legend_below, log_y, to_plot
from .model import Line
from .trend import Trend


def when(start: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(start, dt.timezone.utc)


def trend_plot(group: tuple[str, str, str], members: list[Trend], colours: Colours,
               changes: dict[str, list[tuple[float, str]]], starts: dict[str, float],
               shared_legend: bool = False) -> Plot:
    """One value (check, placement, variable) over the sessions, a line per build, its
    reference band, the change points (red) and the lock or build changes (dotted). With
    a shared legend (many builds: curves.legend_plot above the trends) the plot's own
    legend says only what the bands and red lines are."""
    check, placement, var = group
    labels = [] if shared_legend else [colours.label(Line(s.series.build, s.partition))
                                       for s in members]
    labels += ["reference ± tolerance", "change point"]
    fig, axes = grid(1, 1, 6.4, 2.3, left=0.9, top=0.45, bottom=0.45,
                     legend=labels)
    ax = axes[0][0]
    xs_all = [when(p.time) for s in members for p in s.points]
    for s in sorted(members, key=lambda s: (s.series.build, s.partition)):
        line = Line(s.series.build, s.partition)
        style = colours.of(line)
        x = [when(p.time) for p in s.points]
        low, median, high = zip(*(p.spread for p in s.points), strict=True)
        ax.plot(x, median, marker="o", markersize=3.5, linewidth=1.3,
                label="_nolegend_" if shared_legend else colours.label(line), **style)
        if low != high:
            ax.fill_between(x, low, high, color=style["color"], alpha=0.15, linewidth=0)
        if s.ref and xs_all:
            lo, hi = s.band()
            span = [min(xs_all), max(xs_all)]
            ax.plot(span, [s.ref[0]] * 2, color=style["color"], linewidth=0.8,
                    linestyle=(0, (4, 3)), alpha=0.8)
            ax.fill_between(span, [lo if lo is not None else s.ref[0]] * 2,
                            [hi if hi is not None else s.ref[0]] * 2, color=style["color"],
                            alpha=0.07, linewidth=0, label="reference ± tolerance")
        for cp in s.change_points:
            if cp.session not in starts:
                continue
            xv = when(starts[cp.session])
            ax.axvline(xv, color="#C00000", linewidth=1.4, label="change point")
            ax.annotate(cp.cause or "change", (xv, 1), xycoords=("data", "axes fraction"),
                        fontsize=7, color="#C00000", rotation=90, va="top", ha="right")
    env_changes: dict[float, set[str]] = {}
    for s in members:
        for t, w in changes.get("*", []) + changes.get(s.environ, []):
            env_changes.setdefault(t, set()).add(w)
    for t, whats in sorted(env_changes.items()):
        what = "; ".join(sorted(whats))
        ax.axvline(when(t), color="#777777", linewidth=0.8, linestyle=":")
        ax.annotate(what, (when(t), 0.02), xycoords=("data", "axes fraction"), fontsize=6.5,
                    color="#555555", rotation=90, va="bottom", ha="right")
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    log_y(ax, [x for s in members for p in s.points for x in p.spread])
    unit = members[0].series.unit
    what = members[0].series.what
    ax.set_ylabel(f"{what} ({unit})")
    title = f"{check} · {placement} · {what}"
    ax.set_title(title)
    legend_below(fig, [ax])
    return to_plot(fig, f"trend-{check}-{placement}-{var}", title,
                   f"trend of {title} over the sessions")


def cost_plot(per_session: list[CostRow], per_build: list[CostRow]) -> Plot | None:
    if not per_session:
        return None
    names = max((len(r.what) for r in per_build), default=10)
    fig, axes = grid(1, 2, 3.6, 2.0, top=0.4, bottom=1.1, gap_w=0.4 + 0.065 * names)
    left, right = axes[0]
    left.bar(range(len(per_session)), [r.node_hours for r in per_session], width=0.6,
             color="#0072B2")
    left.set_xlim(-0.8, max(len(per_session), 3) - 0.2)
    left.set_xticks(range(len(per_session)),
                    [r.what.split(" (")[0] for r in per_session], rotation=30, ha="right")
    left.set_ylabel("node-hours")
    left.set_title("per session")
    right.barh([r.what for r in per_build], [r.node_hours for r in per_build],
               color="#009E73")
    right.invert_yaxis()
    right.set_xlabel("node-hours")
    right.set_title("per build (current session)")
    return to_plot(fig, "cost", "Node-hours", "node-hours per session and per build")
