"""What every plot shares: matplotlib without a display, build styles (styles.py), size
axes, PNGs embedded as data URIs."""

from __future__ import annotations

import base64
import io
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")  # no display; must precede any pyplot import elsewhere

from matplotlib.figure import Figure
from matplotlib.ticker import (
    FixedLocator,
    FuncFormatter,
    LogLocator,
    NullFormatter,
    NullLocator,
)

from ...units import human_size
from .styles import PALETTE, Colours

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["PALETTE", "Colours", "Plot", "grid", "legend_below", "log_y", "plain_log",
           "size_axis", "slug", "to_plot"]

DPI = 80
STYLE: dict[RcKeyType, Any] = {
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
    "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.grid": True, "grid.alpha": 0.3,
    "axes.spines.top": False, "axes.spines.right": False, "figure.dpi": DPI,
}
matplotlib.rcParams.update(STYLE)


@dataclass
class Plot:
    """One embedded figure of the page."""

    id: str
    title: str
    uri: str  # data:image/png;base64,...
    alt: str
    width: int
    height: int


def grid(rows: int, cols: int, axis_w: float, axis_h: float, *, left: float = 0.75,
         right: float = 0.2, top: float = 0.6, bottom: float = 0.5,
         legend: list[str] | None = None, key: list[str] | None = None,
         gap_w: float = 0.8, gap_h: float = 0.7, **kw):
    """A figure of rows x cols axes of the given size in inches, margins in inches and
    room below for a legend of the `legend` labels and, under it, a key of the `key`
    labels (legend_below): a fixed layout (constrained layout measures every text twice
    and doubled the report's time)."""
    width = left + cols * axis_w + (cols - 1) * gap_w + right
    lines = math.ceil(len(legend) / legend_columns(width, legend)) if legend else 0
    room = LEGEND_ROW * lines + key_height(width, key or [])
    height = top + rows * axis_h + (rows - 1) * gap_h + bottom + room
    fig = Figure(figsize=(width, height), dpi=DPI)
    axes = fig.subplots(rows, cols, squeeze=False, gridspec_kw={
        "left": left / width, "right": 1 - right / width, "top": 1 - top / height,
        "bottom": (bottom + room) / height, "wspace": gap_w / axis_w,
        "hspace": gap_h / axis_h}, **kw)
    return fig, axes


#: Height of a line of legend (inches), and the gap above a key.
LEGEND_ROW, KEY_GAP = 0.22, 0.08


def legend_columns(width: float, labels, most: int = 4) -> int:
    """Legend entries per line that fit a figure `width` inches wide."""
    longest = max((len(str(label)) for label in labels), default=10)
    return max(1, min(most, int(width / (0.4 + 0.062 * longest))))


def key_height(width: float, labels) -> float:
    """Inches a key of these labels takes under the legend (0 for none)."""
    if not labels:
        return 0.0
    return LEGEND_ROW * math.ceil(len(labels) / legend_columns(width, labels, 6)) + KEY_GAP


def to_plot(fig: Figure, pid: str, title: str, alt: str) -> Plot:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    w, h = (round(x * DPI) for x in fig.get_size_inches())
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return Plot(slug(pid), title, f"data:image/png;base64,{data}", alt, w, h)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def size_axis(ax, sizes: list[float]) -> None:
    """Log-2 message size axis labelled 8 B, 1 KiB, 4 MiB: the measured sizes, at most
    8, none closer than an eighth of the range (the largest always)."""
    sizes = sorted({s for s in sizes if s and s > 0})
    ax.set_xscale("log", base=2)
    if not sizes:
        return
    gap = max(1.0, math.log2(sizes[-1] / sizes[0]) / 7)
    ticks = [sizes[-1]]
    for s in reversed(sizes[:-1]):
        if math.log2(ticks[-1] / s) >= gap:
            ticks.append(s)
    ticks.reverse()
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: human_size(round(v), " ")))
    ax.set_xlabel("message size")


def log_y(ax, values: list[float], axis: str = "y") -> None:
    """Log scale when the values span more than a factor 20, else linear from zero."""
    pos = [v for v in values if v and v > 0]
    if pos and max(pos) / min(pos) > 20:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
        plain_log(ax.yaxis if axis == "y" else ax.xaxis)
    else:
        (ax.set_ylim if axis == "y" else ax.set_xlim)(0, None)


def plain_log(axis) -> None:
    """Log axis labels as numbers people read (0.1, 20, 3000), no minor labels, minor
    ticks at 2 and 5 of each decade (all eight made the ticks half of a plot's time)."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}" if 1e-3 <= v < 1e6
                                           else f"{v:.0e}"))
    axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
    axis.set_minor_formatter(NullFormatter())


def legend_below(fig: Figure, axes, key=()) -> None:
    """One legend for the figure, under the plots, with every label of every axes; under
    it the `key`, (handle, label) entries that say what colours, dashes and markers mean."""
    seen: dict = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=False):
            seen.setdefault(label, h)
    width = fig.get_figwidth()
    keyed = {label: h for h, label in key}
    lift = key_height(width, keyed) / fig.get_figheight()
    if seen:
        fig.legend(seen.values(), seen.keys(), loc="lower center",
                   bbox_to_anchor=(0.5, lift), ncol=min(legend_columns(width, seen), len(seen)),
                   frameon=False, borderaxespad=0.2)
    if keyed:
        fig.legend(keyed.values(), keyed.keys(), loc="lower center", bbox_to_anchor=(0.5, 0),
                   ncol=min(legend_columns(width, keyed, 6), len(keyed)), frameon=False,
                   borderaxespad=0.2, handlelength=2.6, labelcolor="#444444")
