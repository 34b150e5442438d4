"""Systems side by side: per build, benchmark, placement and value, each system's latest
value (or the median over the period) and its ratio to the first system's, as text. A
value is matched across systems by build, benchmark, placement and name (the series key
holds the system, which differs)."""

from __future__ import annotations

from statistics import median

from ..history import Series

HOW = ("latest", "median")


def _figure(series: Series, how: str) -> float | None:
    values = [p.value for p in series.points if not p.failed]
    if not values:
        return None
    return values[-1] if how == "latest" else median(values)


def compare(by_system: dict[str, list[Series]], how: str = "latest"
            ) -> tuple[list[tuple[tuple[str, str, str, str], str, list[float | None]]], int]:
    """Rows (build, benchmark, placement, value), unit, each system's figure (in the
    order given); and how many values only some systems have."""
    systems = list(by_system)
    table: dict[tuple[str, str, str, str], tuple[str, dict[str, float | None]]] = {}
    for system, series in by_system.items():
        for s in series:
            if s.against_host or s.whole_build:
                continue
            what = (s.build, s.check, s.placement, s.var)
            table.setdefault(what, (s.unit, {}))[1][system] = _figure(s, how)
    rows, partial = [], 0
    for what in sorted(table):
        unit, figures = table[what]
        if len(figures) < len(systems):
            partial += 1
            continue
        rows.append((what, unit, [figures[system] for system in systems]))
    return rows, partial


def _number(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def text(by_system: dict[str, list[Series]], how: str = "latest") -> str:
    """The table: one line per value every system has, the ratio of each system after
    the first to the first."""
    systems = list(by_system)
    rows, partial = compare(by_system, how)
    head = ["build", "benchmark", "placement", "value", "unit", *systems,
            *(f"{s}/{systems[0]}" for s in systems[1:])]
    lines = [head]
    for (build, check, placement, var), unit, figures in rows:
        first = figures[0]
        ratios = [("-" if v is None or not first else f"{v / first:.3f}") for v in figures[1:]]
        lines.append([build, check, placement, var, unit, *map(_number, figures), *ratios])
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
           for r in lines]
    counts = ", ".join(f"{s}: {sum(bool(x.points) for x in by_system[s])} value(s)"
                       for s in systems)
    out.append(f"{len(rows)} value(s) on every system ({how} of each; {counts}); "
               f"{partial} on some only, left out")
    return "\n".join(out)
