"""Summaries of ReFrame sessions: one line per test case, grouped by build, and
one line per performance value outside its reference."""

from __future__ import annotations

from ..units import human_size
from .sessions import build_label, check_label, defined, perf_values, testcases


def fmt_value(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def perf_text(tc: dict) -> str:
    parts = []
    for pv in perf_values(tc):
        s = f"{pv.var}={fmt_value(pv.value)}{pv.unit}"
        if pv.ref:
            s += f"(ref {fmt_value(pv.ref)}{' FAIL' if pv.result == 'fail' else ''})"
        parts.append(s)
    return " ".join(parts)


#: Columns of the table; the last one (values or failure reason) is not padded.
HEADER = ["build", "check", "partition", "placement", "result", "nodes", "values / reason"]
#: After a placement that puts more busy ranks than cores on its nodes.
OVERSUBSCRIBED = " (oversubscribed)"


def placement_label(tc: dict) -> str:
    label = str(tc.get("placement", ""))
    return label + OVERSUBSCRIBED if tc.get("oversubscribed") is True else label


def failure_text(tc: dict) -> str:
    """'[phase] reason', without the '<build> <placement>: ' the columns already show."""
    reason = (tc.get("fail_reason") or "").replace("\n", " ")
    for prefix in (f"{build_label(tc)} {tc.get('placement', '')}: ",):
        reason = reason.replace(prefix, "", 1)
    return f"[{tc.get('fail_phase')}] {reason}"


def rows(session: dict) -> list[list[str]]:
    out = []
    for tc in testcases([session]):
        result = tc.get("result", "?")
        detail = perf_text(tc)
        if not detail and defined(tc.get("library")):
            detail = f"library: {tc['library']}"
        if result in ("fail", "abort"):
            detail = failure_text(tc)
        hosts = tc.get("hosts") or tc.get("job_nodelist") or []
        if isinstance(hosts, str) or hosts == "<undefined>":
            hosts = [hosts]
        out.append([build_label(tc), check_label(tc), str(tc.get("partition", "")),
                    placement_label(tc), result, ",".join(h for h in hosts if h), detail])
    out.sort(key=lambda r: (r[0], r[1], r[2], r[3]))
    return out


def regressions(session: dict) -> list[str]:
    """One line per performance value outside its reference, naming everything."""
    out = []
    for tc in testcases([session]):
        for pv in perf_values(tc):
            if pv.result != "fail":
                continue
            bound = (f"allowed {pv.upper:+.0%}" if pv.upper is not None
                     else f"allowed {pv.lower:+.0%}" if pv.lower is not None else "")
            change = f"{(pv.value - pv.ref) / pv.ref:+.0%}" if pv.ref else "n/a"
            size = f" at {human_size(pv.size, ' ')}" if pv.size is not None else ""
            out.append(f"REGRESSION {build_label(tc)} {check_label(tc)} "
                       f"{tc.get('placement', '')} {pv.quantity}{size}: "
                       f"{fmt_value(pv.value)} {pv.unit} vs reference {fmt_value(pv.ref)} "
                       f"{pv.unit} ({change}, {bound})")
    return out


def format_table(session: dict, width: int = 200) -> str:
    """One line per test case, cut at `width` characters; a failure's line is never
    cut: its reason names the cause."""
    data = rows(session)
    n = len(HEADER) - 1
    widths = [max(len(r[i]) for r in [HEADER, *data]) for i in range(n)]
    lines = []
    for r in [HEADER, *data]:
        head = "  ".join(c.ljust(w) for c, w in zip(r[:n], widths, strict=False))
        line = f"{head}  {r[n]}"
        lines.append(line if r[n - 2] in ("fail", "abort") else line[:width])
    regs = regressions(session)
    if regs:
        lines.append("")
        lines += regs
    info = session.get("session_info", {})
    n, f = info.get("num_cases", len(data)), info.get("num_failures", 0)
    lines.append("")
    lines.append(f"{n} test case(s), {f} failure(s), {info.get('num_aborted', 0)} aborted; "
                 f"session {info.get('uuid', '?')}")
    return "\n".join(lines)
