"""Sessions in, one page out: the context of the templates, section by section."""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from ...units import human_size
from .. import history
from ..history import Series
from ..night import Night, judge_night
from ..reference_set import NO_REFERENCES, ReferenceSet
from ..session_summary import SessionSummary
from ..status import Status
from . import compare, cost, detection, effect_rows, effects, front, gate_view, layouts, page, trend
from .axes import Axes, session_axes
from .curves import SHARED_LEGEND, curve_jobs, legend_plot, reference_points, unsized_plot
from .figures import Colours, Plot
from .model import DASH, Line, ReportData, Session, load
from .mpiio_view import section as mpiio_section
from .npb_view import section as npb_section
from .render import Context, Drawer, Job
from .repetitions import crossovers, curves
from .scaling import section as scaling_section
from .trendplot import cost_plot, trend_plot


@dataclass
class Report:
    html: str
    markdown: str
    plots: list[Plot]
    context: Context


def make_report(sessions: list[Session | dict], *, name: str = "report",
                references: ReferenceSet = NO_REFERENCES, prices: dict | None = None,
                baseline: str | None = None,
                change_points: list | None = None, max_trends: int = 24,
                max_heatmaps: int = 12, earlier_nights: Iterable | None = None,
                disturbed: Collection[str] = frozenset(),
                series: list[Series] | None = None,
                older: Iterable[SessionSummary] = ()) -> Report:
    """The report of the sessions (one system). `references`: the system's references,
    their statistics and the policy bless recorded (ReferenceSet.load), as `mpimatrix run`
    judged the night with them. change_points is the seam of the history
    (trend.ChangePoint); by default the report asks results.history itself. The newest
    session is judged by results.night.judge_night, as the run judges it: its verdict is
    the page's headline. `earlier_nights`: stored nights before the report's (a session
    and its confirmations), newest first, beside the report's own sessions; `disturbed`:
    the UUIDs of sessions other programs disturbed. `series`: the sessions' history as
    history.series_of gives it (the session index keeps it, so no session is read for
    it); by default made from the sessions. `older`: the summaries of sessions before the
    newest that are not given whole (their values are in `series`)."""
    data = load(sessions, older)
    cur = data.current
    if series is None:
        series = history.series_of(data.sessions)
    axes = {b: a for s in data.sessions for b, a in session_axes(s.cases).items()}
    colours = Colours(sorted({c.line for s in data.sessions for c in s.cases}
                             | {Line(s.build, s.key[0]) for s in series
                                if s.build != history.HOST}), axes)
    cv = curves(cur.cases)
    ctx: Context = {"name": name, "system": data.system,
                 "references_file": bool(references.references),
                 "generated": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    # the current session's figures are drawn while the history is judged
    ctx["curve_plots"] = curve_jobs(cv, reference_points(cur.cases), colours)
    ctx["unsized_plot"] = Job(unsized_plot, (cv, colours))
    ctx.update(effects_section(data, cv, colours, session_axes(cur.cases)))
    ctx.update(layout_section(cv, colours))
    ctx.update(compare_section(data, cv, colours, baseline, max_heatmaps))
    drawer = Drawer()
    try:
        drawer.start(ctx)
        own = [(s, data.confirming(s)) for s in reversed(data.sessions) if s is not cur]
        night = judge_night(cur, data.confirming(cur), references,
                            itertools.chain(own, earlier_nights or ()),
                            disturbed=disturbed, what_changed=True)
        if change_points is None:
            change_points = gate_view.history_change_points(series)
        prices = {k: cost.Price.of(v) for k, v in (prices or {}).items()}
        ctx.update(front_page(data, night, references))
        ctx.update(detection.floor_section(references))
        ctx["floor_fast"] = [h.fast_line() for h in night.judgement.hosts if h.fast]
        ctx["what_changed"] = gate_view.what_changed(night)
        ctx.update(trend_section(data, series, colours, change_points, max_trends))
        ctx.update(cost_section(data, prices))
        ctx.update(npb_section(data, prices, colours))
        ctx.update(mpiio_section(data, colours))
        ctx.update(scaling_section(data, colours))
    except BaseException:
        drawer.stop()
        raise
    every = drawer.finish(ctx)
    ctx["plot_count"] = len(every)
    return Report(page.render_html(ctx), page.render_markdown(ctx), every, ctx)


def front_page(data: ReportData, night: Night, refset: ReferenceSet) -> Context:
    cur = data.current
    judged = night.judgement
    confirmations = len(data.confirming(cur))
    gate = ("the regression gate: a value outside its tolerance is a regression when the "
            "best of its samples (the session's runs"
            f"{f' and {confirmations} confirmation session(s)' if confirmations else ''}), "
            "each against its session's host factor of its class of values where three "
            "or more builds ran, is still outside")
    rows = front.verdict_rows(judged)
    regs = [r for r in rows if r.status == Status.REGRESSION]
    fails = front.failures(cur)
    not_gated = [{"check": b.key.check, "partition": b.key.partition,
                  "environ": b.key.environ, "ref_key": b.key.ref_key, "var": b.key.var,
                  "median": b.median, "spread": b.spread, "n": b.n, "reason": b.reason}
                 for b in refset.not_gated()]
    listed = {(r["partition"], r["environ"], r["ref_key"], r["var"]) for r in not_gated}
    not_gated += [  # those the statistics file does not explain (hand-set references)
        {"check": "", "partition": r.partition, "environ": r.environ,
         "ref_key": r.ref_key, "var": r.var, "median": r.value, "spread": None,
         "n": None, "reason": r.reason}
        for r in rows if r.status == Status.NOT_GATED
        and (r.partition, r.environ, r.ref_key, r.var) not in listed]
    machine = [h.line() for h in judged.hosts if h.slow]
    return {
        "verdict": {"cls": night.verdict.verdict.css, "text": night.verdict.headline(),
                    "word": str(night.verdict.verdict), "exit": night.verdict.exit_code},
        "gate": gate, "regressions": regs,
        "noise": [r for r in rows if r.status == Status.NOISE],
        "watch": [r for r in rows if r.status == Status.WATCH],
        "machine": machine,
        "not_gated": not_gated, "unreferenced": front.unreferenced(cur),
        "failures": fails, "xfails": front.expected_failures(cur),
        "skipped_cases": front.skipped_cases(cur),
        "builds": front.builds(data), "skipped": cur.skipped_builds,
        "nodes": front.nodes(cur), "partitions": data.partitions,
        "lock": cur.lock, "builds_source": cur.info.get("builds_source", ""),
        "reframe": cur.info.get("version", ""), "current": session_row(data.summaries[-1]),
        "sessions": [session_row(s) for s in reversed(data.summaries)],
    }


@dataclass(frozen=True)
class SessionRow:
    """A session in the page's list of sessions."""
    uuid: str
    date: str
    mode: str
    runs: int
    elapsed: float | None
    cases: int
    failures: int
    lock: str
    reframe: str
    host: str


def session_row(s: SessionSummary) -> SessionRow:
    return SessionRow(uuid=s.uuid, date=s.date, mode=s.mode, runs=s.runs, elapsed=s.elapsed,
                      cases=s.cases, failures=s.failures, lock=s.lock, reframe=s.reframe,
                      host=s.host)


def effects_section(data: ReportData, cv, colours: Colours, axes: dict[str, Axes]
                    ) -> Context:
    """Each axis' effect between builds that differ in it alone (effects.py)."""
    tables = effects.effect_tables(cv, data.lines(), axes, colours.label)
    found = [e for t in tables for e in t.effects]
    return {"effect_tables": tables, "size_classes": [
        f"{name} ({human_size(lo, ' ')}{DASH}{human_size(hi, ' ')})"
        for name, lo, hi, _ in effects.SIZE_CLASSES], "effect_counts": {
        "pairs": len(tables), "effects": len(found), "partitions": len(data.partitions),
        "resolved": sum(e.status == "resolved" for e in found),
        "spans0": sum(e.status == "spans0" for e in found),
        "single": sum(e.status == "one-pass" for e in found)},
        "effect_top": sorted((effect_rows.TopEffect(t, r, c)
                              for t in tables for r in t.rows for c in r.cells
                              if c and c.status == "resolved"),
                             key=lambda top: -abs(top.cell.estimate))[:10],
        "effect_builds": [{"build": colours.label(ln), "family": a.family_name,
                           "version": a.version or "?", "fabric": a.fabric or "?",
                           "compiler": a.compiler or "?", "provenance": a.provenance or "?"}
                          for ln in data.lines() for a in [axes.get(ln.build)] if a]}


def layout_section(cv, colours: Colours) -> Context:
    chosen = layouts.layout_benchmarks(cv)
    xs = crossovers(cv)
    return {"layout_plots": [Job(layouts.layout_plot, (b, t, c, cv, colours))
                             for b, t, c in chosen],
            "crossover_plot": Job(layouts.crossover_plot, (xs, colours)),
            "crossover_table": layouts.crossover_table(xs, colours),
            "placements": sorted({pl for cols in cv.values() for c in cols.values()
                                  for pl in c})}


def compare_section(data: ReportData, cv, colours: Colours, wanted: str | None,
                    limit: int = 12) -> Context:
    lines = data.lines()
    base = compare.choose_baseline(lines, wanted)
    out: Context = {"baseline": colours.label(base) if base else "", "compare_plots": [],
                 "compare_rows": [], "compare_counts": compare.CompareCounts(),
                 "baseline_missing": ""}
    if wanted and base is None:
        out["baseline_missing"] = (f"no build {wanted!r} in the current session; builds: "
                                   + ", ".join(sorted({ln.build for ln in lines})))
        base = compare.choose_baseline(lines, None)
        out["baseline"] = colours.label(base) if base else ""
    if base is not None and len(lines) > 1:
        plots, rows, counts = compare.comparisons(cv, lines, base, colours, limit)
        out.update(compare_plots=plots, compare_rows=rows, compare_counts=counts)
    return out


def trend_section(data: ReportData, series: list[Series], colours: Colours, change_points,
                  limit: int) -> Context:
    gated = trend.trends(data, series, gated_only=True)
    everything = gated or trend.trends(data, series, gated_only=False)
    cps = trend.attach(everything, change_points, data)
    out: Context = {
        "trend_plots": [], "trend_legend": None, "trend_rows": [], "trend_gated": bool(gated),
        "change_points": cps, "trend_sessions": len(data.summaries), "trend_total": 0}
    if not trend.spans(data):
        return out
    changes = trend.provenance_changes(data)
    starts = {s.uuid: s.start for s in data.summaries}
    groups = defaultdict(list)
    for t in everything:
        groups[t.group].append(t)
    chosen = trend.select(everything, limit)
    shown = sorted({Line(t.series.build, t.partition) for g in chosen for t in groups[g]})
    shared = len(shown) > SHARED_LEGEND
    out["trend_legend"] = Job(legend_plot, (shown, False, colours, "trend-legend")) \
        if shared else None
    out["trend_plots"] = [Job(trend_plot, (g, groups[g], colours, changes, starts, shared))
                          for g in chosen]
    out["trend_total"] = len(groups)
    rows: list[dict[str, Any]] = sorted(
        ({"build": colours.label(Line(t.series.build, t.partition)), "check": t.series.check,
          "placement": t.series.placement, "what": t.series.what, "unit": t.series.unit,
          "n": len(t.points), "first": t.points[0].value, "last": t.points[-1].value,
          "ref": t.ref[0] if t.ref else None, "drift": t.drift,
          "failed": t.failed, "changes": len(t.change_points)} for t in everything),
        key=lambda r: (-r["changes"], -r["failed"], -abs(r["drift"])))
    out["trend_rows"] = rows
    return out


def cost_section(data: ReportData, prices: cost.Prices) -> Context:
    cur = data.current
    sessions = cost.per_session(data, prices)
    per_build = cost.totals(cur.cases, prices, lambda c: c.line.build)
    per_bench = cost.totals(cur.cases, prices, lambda c: f"{c.check} · {c.placement}")
    fabric = [{"first": a, "second": b, "p1": prices[a], "p2": prices[b],
               "rows": cost.fabric_table(cur, prices, a, b)}
              for a, b in cost.fabric_pairs(prices, data.partitions)]
    return {"cost_sessions": sessions, "cost_builds": per_build, "cost_benchmarks": per_bench,
            "cost_fabric": fabric, "prices": {p: prices[p] for p in data.partitions
                                               if p in prices},
            "cost_plot": Job(cost_plot, (sessions, per_build)),
            "unpriced": [p for p in data.partitions if p not in prices]}
