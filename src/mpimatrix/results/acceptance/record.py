"""The acceptance record: one HTML page (plots embedded, opens without network) and a
PDF of it printed by headless Chromium, for the people who sign the acceptance.

It holds the system, the sessions, the builds with their specs, hashes and lock, the
requirements table (median, interval, bound, margin, verdict per build), one plot per
requirement (every sample, the interval, the bound) and the reference files written
for the nightlies."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

import jinja2
from matplotlib.figure import Figure

from ...atomic import atomic_write
from ..measurements import Session
from ..report.figures import PALETTE, to_plot
from .requirements import Requirements
from .scope import Scope
from .verdicts import RequirementVerdict, Verdict, samples_needed

#: The record's CSS class of each verdict.
CLASS = {Verdict.MET: "met", Verdict.NOT_MET: "not-met", Verdict.INCONCLUSIVE: "inconclusive",
         Verdict.UNMEASURED: "unmeasured"}

PAGE = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"), autoescape=True,
).get_template("record.html.j2")


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.0f}" if abs(x) >= 1e4 else f"{x:.4g}"


class Plot(TypedDict):
    """A requirement's figure in the record."""

    title: str
    uri: str  # the image, as a data: URI


class Context(TypedDict):
    """What the record's template shows (templates/record.html.j2): each row, build,
    session and reference a mapping of the fields the template names."""

    system: str
    file: str
    file_sha: str
    generated: str
    overall: str
    overall_class: str
    rows: list[Mapping[str, object]]
    plots: list[Plot]
    builds: list[Mapping[str, str]]
    sessions: list[Mapping[str, object]]
    disturbance: str
    references: list[Mapping[str, str]]


def plot(rv: RequirementVerdict) -> Plot | None:
    """Every sample per build, the median's interval and the bound."""
    builds = [b for b in rv.builds if b.samples]
    if not builds:
        return None
    req = rv.requirement
    fig = Figure(figsize=(8, 0.6 + 0.45 * len(builds)))
    ax = fig.subplots()
    for i, b in enumerate(builds):
        colour = PALETTE[i % len(PALETTE)]
        ax.plot(b.samples, [i] * len(b.samples), "o", color=colour, alpha=0.6, ms=4)
        if b.low is not None:
            assert b.high is not None  # an interval has both ends (verdicts.build_verdict)
            ax.plot([b.low, b.high], [i, i], "-", color=colour, lw=5, alpha=0.35)
        assert b.median is not None  # a build with samples has a median
        ax.plot([b.median], [i], "|", color="black", ms=14)
    ax.axvline(req.bound, color="#D55E00", ls="--", lw=1.5)
    ax.set_yticks(range(len(builds)), [b.build for b in builds])
    ax.set_ylim(-0.6, len(builds) - 0.4)
    ax.set_xlabel(f"{req.metric} [{req.unit}]  (dashed: bound {req.bound_text}; bar: "
                  f"{req.confidence:.0%} interval of the median; |: median)")
    fig.tight_layout()
    title = f"{req.name}: {req.what}"
    return Plot(title=title, uri=to_plot(fig, req.name, title, title).uri)


def load_text(session: Session, scope: Scope) -> str:
    """The machine load recorded for a session, as the record and the verdicts say it."""
    load = scope.loads.get(session.uuid)
    if load is None:
        return "not recorded (a session `mpimatrix run` did not run)"
    return f"{'DISTURBED: ' if load.disturbed else 'quiet: '}{load.text}"


def disturbance_note(sessions: list[Session], scope: Scope) -> str:
    """One sentence on the disturbed sessions ('' when none was)."""
    bad = [s.uuid[:8] for s in sessions if scope.disturbed(s.uuid)]
    if not bad:
        return ""
    if scope.include_disturbed:
        return (f"Other programs disturbed session(s) {', '.join(bad)}; their samples are "
                "counted as the others' at the user's request (--include-disturbed).")
    return (f"Other programs disturbed session(s) {', '.join(bad)}: a verdict resting on "
            "their samples is at most inconclusive; measure again on a quiet machine.")


def context(reqs: Requirements, verdicts: list[RequirementVerdict], sessions: list[Session],
            references: list[Path], scope: Scope | None = None) -> Context:
    scope = scope or Scope()
    rows: list[Mapping[str, object]] = []
    for rv in verdicts:
        req = rv.requirement
        rows.append({
            "name": req.name, "what": req.what, "bound": req.bound_text,
            "rules": ", ".join(r.text() for r in req.builds),
            "confidence": f"{req.confidence:.0%}", "needed": samples_needed(req.confidence),
            "verdict": rv.verdict, "cls": CLASS[rv.verdict],
            "reason": rv.reason,
            "builds": [{"build": b.build, "n": len(b.samples), "median": _num(b.median),
                        "interval": (f"{_num(b.low)} - {_num(b.high)} ({b.coverage:.1%})"
                                     if b.low is not None else "-"),
                        "margin": "-" if b.margin is None else f"{b.margin:+.1%}",
                        "verdict": b.verdict, "cls": CLASS[b.verdict],
                        "reason": b.reason} for b in rv.builds]})
    counts = {v: sum(rv.verdict == v for rv in verdicts) for v in Verdict}
    overall = (f"{counts[Verdict.MET]} of {len(verdicts)} requirement(s) met, "
               f"{counts[Verdict.NOT_MET]} not met, {counts[Verdict.INCONCLUSIVE]} "
               f"inconclusive, {counts[Verdict.UNMEASURED]} not measured")
    worst = next((v for v in (Verdict.NOT_MET, Verdict.INCONCLUSIVE) if counts[v]), Verdict.MET)
    builds: dict[str, Mapping[str, str]] = {}
    for s in sessions:
        for c in s.cases:
            builds.setdefault(c.build, {"name": c.build, "spec": c.build_spec or "-",
                                        "hash": c.build_hash or "-",
                                        "lock": c.lock_sha256 or "-"})
    data = reqs.path.read_bytes()
    return Context(
        system=reqs.system, file=str(reqs.path),
        file_sha=hashlib.sha256(data).hexdigest(),
        generated=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        overall=overall,
        overall_class=CLASS[worst] if not counts[Verdict.UNMEASURED] else "not-met",
        rows=rows, plots=[p for p in map(plot, verdicts) if p],
        builds=sorted(builds.values(), key=lambda b: b["name"]),
        sessions=[{"uuid": s.uuid, "date": s.date, "mode": s.mode, "runs": s.runs,
                   "software": s.software or "-", "load": load_text(s, scope),
                   "disturbed": bool(scope.disturbed(s.uuid))} for s in sessions],
        disturbance=disturbance_note(sessions, scope),
        references=[{"path": str(p), "sha": hashlib.sha256(p.read_bytes()).hexdigest()}
                    for p in references if p.is_file()],
    )


def write_record(reqs: Requirements, verdicts: list[RequirementVerdict],
                 sessions: list[Session], out: Path, references: list[Path],
                 scope: Scope | None = None) -> Path:
    """The record's HTML page at `out`."""
    atomic_write(out, PAGE.render(**context(reqs, verdicts, sessions, references, scope)))
    return out


def verdict_lines(verdicts: list[RequirementVerdict]) -> list[str]:
    """The verdicts as text: one line per requirement, one per build under it."""
    out = []
    for rv in verdicts:
        req = rv.requirement
        out.append(f"{rv.verdict.upper():12} {req.name}: {req.what} {req.bound_text}"
                   f"{f' ({rv.reason})' if rv.reason else ''}")
        for b in rv.builds:
            ci = (f"[{_num(b.low)}, {_num(b.high)}] at {b.coverage:.1%}" if b.low is not None
                  else "no interval")
            margin = "" if b.margin is None else f", margin {b.margin:+.1%}"
            out.append(f"  {b.build}: {b.verdict}: median {_num(b.median)} {req.unit} of "
                       f"{len(b.samples)} sample(s), {ci}{margin}"
                       f"{f' ({b.reason})' if b.reason else ''}")
    return out
