"""Summaries of ReFrame sessions: one line per test case, grouped by build, and
one line per performance value outside its reference."""

from __future__ import annotations

from .changed_since import ChangedSince
from .gate import NOISE, NOT_GATED, REGRESSION, WATCH, Judgement, ValueVerdict
from .measurements import Case, Session
from .night import Night, judge_night
from .reference_set import NO_REFERENCES


def fmt_value(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def perf_text(case: Case) -> str:
    parts = []
    for pv in case.values:
        s = f"{pv.var}={fmt_value(pv.value)}{pv.unit}"
        if pv.ref:
            s += f"(ref {fmt_value(pv.ref)}{' FAIL' if pv.result == 'fail' else ''})"
        parts.append(s)
    return " ".join(parts)


#: Columns of the table; the last one (values or failure reason) is not padded.
HEADER = ["build", "check", "partition", "placement", "result", "nodes", "values / reason"]
RESULT = HEADER.index("result")
#: Results whose row shows the reason (in full) instead of the values.
WITH_REASON = ("fail", "abort", "xfail", REGRESSION)
#: After a placement that puts more busy ranks than cores on its nodes.
OVERSUBSCRIBED = " (oversubscribed)"


def placement_label(case: Case) -> str:
    return case.placement + OVERSUBSCRIBED if case.oversubscribed else case.placement


def failure_text(case: Case) -> str:
    """'[phase] reason', without the '<build> <placement>: ' the columns already show
    (an expected failure's reason is the check's expected_failure: ReFrame keeps none)."""
    reason = (case.fail_reason or case.expected_failure or "").replace("\n", " ")
    reason = reason.replace(f"{case.build} {case.placement}: ", "", 1)
    return f"[{case.fail_phase or 'expected failure'}] {reason}"


def rows(session: Session, results: list[ValueVerdict] | None = None
         ) -> list[list[str]]:
    """One row per test case. A case that failed only its references shows the gate's
    word for it: "regression" (confirmed), "watch" (confirmed, alone, not outside before)
    or "noise" (cleared by the confirmation)."""
    statuses: dict[tuple, set[str]] = {}
    for v in results or []:
        statuses.setdefault((v.environ, v.check, v.placement), set()).add(v.status)
    out = []
    for case in session.cases:
        result = case.result
        key = (case.environ, case.check, case.placement)
        if case.outside_in_performance and key in statuses:
            found = statuses[key]
            result = REGRESSION if REGRESSION in found else WATCH if WATCH in found else NOISE
        detail = perf_text(case)
        if not detail and case.library:
            detail = f"library: {case.library}"
        if result in WITH_REASON:
            detail = failure_text(case)
        elif case.skip_reason:
            detail = "[skipped] " + case.skip_reason.replace("\n", " ")
        out.append([case.build, case.check, case.partition_name, placement_label(case),
                    result, ",".join(h for h in case.hosts if h), detail])
    out.sort(key=lambda r: (r[0], r[1], r[2], r[3]))
    return out


def gate_lines(results: list[ValueVerdict]) -> list[str]:
    """What the gate decided beyond the regressions: noise it cleared, values not gated."""
    out = []
    noise = [v for v in results if v.status == NOISE]
    if noise:
        out.append(f"{len(noise)} value(s) outside their tolerance once, within it on "
                   "confirmation (noise): " + ", ".join(
                       f"{v.build} {v.check} {v.placement} {v.var}" for v in noise[:6])
                   + (" ..." if len(noise) > 6 else ""))
    loose = [v for v in results if v.status == NOT_GATED]
    if loose:
        out.append(f"{len(loose)} value(s) reported, not gated:")
        out += [f"  {v.build} {v.check} {v.placement} {v.var}: {v.why()}"
                for v in loose]
    return out


def host_lines(judged: Judgement) -> list[str]:
    """The host factor of each partition: a HOST line when every build ran slow."""
    out = []
    for h in judged.hosts:
        if h.slow:
            out.append(h.line())
        elif h.fast:
            out.append(h.fast_line())
        elif h.factor:
            out.append(f"host {h.partition}: every build {h.factor - 1:+.1%} against its "
                       f"references ({len(h.builds)} builds); values judged against the host")
    return out


def regression_lines(judged: Judgement, changed: list[ChangedSince] | None = None
                     ) -> list[str]:
    """The REGRESSION lines, each build's together, followed by what changed in its
    software since it last passed (when `changed` says)."""
    notes = {c.build: c.lines() for c in changed or []}
    by_build: dict[str, list[str]] = {}
    for line in judged.regressions:
        by_build.setdefault(line.split()[1], []).append(line)
    return [ln for build, lines in by_build.items() for ln in (*lines, *notes.get(build, ()))]


def fixtures_text(session: Session) -> str:
    """' (+11 fixtures: ...)': the passed fixtures ReFrame counts among its test cases
    and the table leaves out ('' when there are none)."""
    kinds = session.passed_fixtures
    if not kinds:
        return ""
    what = ", ".join(f"{n} {label}" for kind, label in (("bench", "benchmark build(s)"),
                                                        ("probe", "probe build(s)"))
                     if (n := kinds.get(kind)))
    n = sum(kinds.values())
    return (f" (+{n} fixture(s) ReFrame counts as test cases too: {what}; "
            f"{len(session.cases) + n} in all)")


def format_table(session: Session, night: Night | None = None, width: int = 200) -> str:
    """One line per test case, cut at `width` characters, except a failure's: its
    reason names the cause; after each build's REGRESSION lines, what changed since it
    last passed; last, the night's verdict (the exit code's). Without `night`: the
    session judged alone against the references it ran with."""
    night = judge_night(session, [], NO_REFERENCES) if night is None else night
    judged = night.judgement
    results = judged.verdicts
    data = rows(session, results)
    n = len(HEADER) - 1
    widths = [max(len(r[i]) for r in [HEADER, *data]) for i in range(n)]
    lines = []
    for r in [HEADER, *data]:
        line = "  ".join(c.ljust(w) for c, w in zip(r[:n], widths, strict=False)) + "  " + r[n]
        lines.append(line if r[RESULT] in WITH_REASON else line[:width])
    extra = [*regression_lines(judged, night.changed), *judged.watched, *gate_lines(results),
             *host_lines(judged)]
    if extra:
        lines.append("")
        lines += extra
    failed = sum(c.failed_in_sanity or c.result == "xpass" for c in session.cases)
    known = sum(r[RESULT] == "xfail" for r in data)
    skipped = sum(r[RESULT] == "skip" for r in data)
    gated = sum(v.status.gated for v in results)
    lines.append("")
    lines.append(f"{len(data)} test case(s){fixtures_text(session)}, {failed} failed, "
                 f"{skipped} skipped, {known} known fault(s) (expected failures); "
                 f"{len(results)} performance value(s), {gated} gated, "
                 f"{len(judged.regressions)} regression(s), {len(judged.watched)} on watch; "
                 f"session {session.uuid}")
    lines.append(night.verdict.line())
    return "\n".join(lines)
