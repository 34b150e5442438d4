"""How a build looks in every plot: its MPI family's colour (a lighter or darker shade per
build of the family), its fabric class's line style, its compiler's marker; a second
partition draws hollow markers (and, when every build has one fabric, its own dash)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict, cast

import matplotlib
from matplotlib.colors import ListedColormap, to_hex, to_rgb
from matplotlib.lines import Line2D

from .axes import Axes, axes_of_name
from .model import Line

if TYPE_CHECKING:
    from matplotlib.typing import LineStyleType, RGBColorType


def _tab10() -> Sequence[RGBColorType]:
    """matplotlib's tab10 colours (its stubs type a colormap as a Colormap, and the colours
    of a ListedColormap as any array: they are RGB tuples)."""
    return cast("Sequence[RGBColorType]",
                cast(ListedColormap, matplotlib.colormaps["tab10"]).colors)


#: Colour-blind safe palette (Okabe-Ito), then matplotlib's tab10.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#F0E442", *_tab10()]
#: One hue per MPI family (Okabe-Ito); builds of other families take the rest in turn.
FAMILY_COLOURS = {"openmpi": "#0072B2", "mpich": "#D55E00", "mvapich2": "#009E73",
                  "mvapich": "#E69F00", "impi": "#CC79A7"}
OTHER_COLOURS = ["#000000", "#56B4E9", *_tab10()]
DASHES: list[LineStyleType] = ["-", "--", ":", "-.", (0, (6, 2, 1, 2, 1, 2)), (0, (1, 3))]
#: The same fabric class has the same dash in every report; other classes take the rest.
FABRIC_DASHES: dict[str, LineStyleType] = {"ucx": "-", "ofi": "--", "tcp": ":", "verbs": "-."}
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
HATCHES = ["", "////", "....", "xxxx"]


def shade(colour: RGBColorType, k: int, n: int) -> RGBColorType:
    """The k-th of n shades of a colour: from darker (toward black) to lighter (toward
    white), the colour itself in the middle; one shade is the colour."""
    if n <= 1:
        return colour
    t = -0.45 + 0.9 * k / (n - 1)  # -0.45 .. +0.45
    rgb = to_rgb(colour)
    target = 1.0 if t > 0 else 0.0
    return to_hex(cast("tuple[float, float, float]",  # one per channel of rgb
                       tuple(c + abs(t) * (target - c) for c in rgb)))


class _Line(TypedDict):
    color: RGBColorType
    linestyle: LineStyleType | None


class LineStyle(_Line, total=False):
    """A build's line (matplotlib keyword arguments): colour, dash, and hollow markers
    on every partition but the first."""
    markerfacecolor: str


class BarStyle(TypedDict):
    """A build's bars (matplotlib keyword arguments): its colour, the partition's hatch."""
    color: RGBColorType
    hatch: str
    edgecolor: str


class Colours:
    """The same build looks the same everywhere: family colour (shaded per build), fabric
    dash, compiler marker; the partition's hatch for bars."""

    def __init__(self, lines: list[Line], axes: dict[str, Axes] | None = None):
        builds = sorted({ln.build for ln in lines})
        parts = sorted({ln.partition for ln in lines})
        self.axes = {b: (axes or {}).get(b) or axes_of_name(b) for b in builds}
        families = sorted({a.family for a in self.axes.values()})
        others = iter(OTHER_COLOURS * len(families))
        self.hue = {f: FAMILY_COLOURS.get(f) or next(others) for f in families}
        self.colour = {}
        for f in families:
            members = [b for b in builds if self.axes[b].family == f]
            for k, b in enumerate(members):
                self.colour[b] = shade(self.hue[f], k, len(members))
        fabrics = sorted({a.fabric for a in self.axes.values()})
        compilers = sorted({a.compiler for a in self.axes.values()})
        self.by_fabric = len(fabrics) > 1
        spare = iter([d for d in DASHES if d not in FABRIC_DASHES.values()] * len(fabrics))
        # `| None`: mypy's type of `get(f) or next(spare)` (which is never None)
        self.fabric_dash: dict[str, LineStyleType | None] = {
            f: FABRIC_DASHES.get(f) or next(spare) for f in fabrics}
        self.marker_of = {c: MARKERS[i % len(MARKERS)] for i, c in enumerate(compilers)}
        self.dash = {p: DASHES[i % len(DASHES)] for i, p in enumerate(parts)}
        self.hatch = {p: HATCHES[i % len(HATCHES)] for i, p in enumerate(parts)}
        self.first = parts[0] if parts else ""
        self.many = len(parts) > 1

    def of(self, line: Line) -> LineStyle:
        a = self.axes.get(line.build)
        dash = (self.fabric_dash.get(a.fabric, "-") if self.by_fabric and a
                else self.dash.get(line.partition, "-"))
        out = LineStyle(color=self.colour.get(line.build, "#555555"), linestyle=dash)
        if line.partition != self.first:
            out["markerfacecolor"] = "white"
        return out

    def marker(self, line: Line) -> str:
        a = self.axes.get(line.build)
        return self.marker_of.get(a.compiler, "o") if a else "o"

    def bar(self, line: Line) -> BarStyle:
        """Bars: the build's colour, the partition's hatch."""
        return BarStyle(color=self.colour.get(line.build, "#555555"),
                        hatch=self.hatch.get(line.partition, ""), edgecolor="white")

    def label(self, line: Line) -> str:
        return line.label(self.many)

    def key(self, builds) -> list[tuple[Line2D, str]]:
        """Legend entries that say what colour, dash and marker mean among these builds:
        families when two or more, fabrics and compilers when they vary."""
        axes = [self.axes[b] for b in sorted(set(builds)) if b in self.axes]
        out = []
        families = sorted({a.family for a in axes})
        if len(families) > 1:
            out += [(Line2D([], [], color=self.hue[f], linewidth=5),
                     next(a.family_name for a in axes if a.family == f)) for f in families]
        fabrics = sorted({a.fabric for a in axes})
        if self.by_fabric and len(fabrics) > 1:
            out += [(Line2D([], [], color="#444444", linestyle=self.fabric_dash[f],
                            linewidth=1.4), f"fabric {f or '?'}") for f in fabrics]
        compilers = sorted({a.compiler for a in axes})
        if len(compilers) > 1:
            out += [(Line2D([], [], color="#444444", marker=self.marker_of[c],
                            linestyle="none"), f"compiler {c or '?'}") for c in compilers]
        return out
