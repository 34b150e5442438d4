"""The NPB figure: NPB's time per kernel, a bar per build and partition, a panel per
placement (npb_view.py computes the rows, its NpbRow: not imported here,
npb_view imports this module)."""

from __future__ import annotations

import math

from .figures import Colours, Plot, grid, legend_below, log_y, to_plot
from .model import Line, placement_label, placement_order


def npb_plot(klass: str, table: list, colours: Colours) -> Plot | None:
    """NPB time per kernel (x), a bar per build and partition (hatch: the partition),
    whiskers: the median's interval; a panel per placement."""
    if not table:
        return None
    placements = sorted({r.key.placement for r in table}, key=placement_order)
    lines = sorted({Line(r.key.build, r.key.partition) for r in table})
    kernels = sorted({r.key.kernel for r in table})
    cols = min(len(placements), 3)
    nrows = math.ceil(len(placements) / cols)
    width = max(2.6, 0.28 * len(lines) * len(kernels) + 0.6)
    fig, axes = grid(nrows, cols, width, 2.2, top=0.6, bottom=0.5,
                     legend=[colours.label(ln) for ln in lines])
    by = {(r.key.placement, Line(r.key.build, r.key.partition), r.key.kernel): r
          for r in table}
    step = 0.8 / len(lines)
    flat = [ax for row in axes for ax in row]
    for ax, pl in zip(flat, placements, strict=False):
        values = []
        for j, line in enumerate(lines):
            xs, ys, lo, hi = [], [], [], []
            for i, kernel in enumerate(kernels):
                r = by.get((pl, line, kernel))
                if r is None:
                    continue
                xs.append(i - 0.4 + step * (j + 0.5))
                ys.append(r.time.median)
                lo.append(r.time.median - (r.time.lo if r.time.lo is not None
                                           else r.time.median))
                hi.append((r.time.hi if r.time.hi is not None else r.time.median)
                          - r.time.median)
                values += [r.time.median, r.time.hi or r.time.median]
            if xs:
                ax.bar(xs, ys, width=step * 0.9, label=colours.label(line),
                       **colours.bar(line))
                ax.errorbar(xs, ys, yerr=[lo, hi], fmt="none", ecolor="#222222",
                            capsize=2, linewidth=0.9)
        ax.set_xticks(range(len(kernels)), kernels)
        ax.set_xlim(-0.6, len(kernels) - 0.4)
        log_y(ax, [v for v in values if v > 0])
        ax.set_ylabel("NPB time (s)")
        ax.set_title(f"class {klass} · {placement_label(pl)}")
    for ax in flat[len(placements):]:
        ax.set_visible(False)
    legend_below(fig, flat[:len(placements)])
    title = f"NPB class {klass}: time per kernel"
    return to_plot(fig, f"npb-{klass}", title,
                   f"NPB time per kernel and build, class {klass}, per placement")
