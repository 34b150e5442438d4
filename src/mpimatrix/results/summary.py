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


def rows(session: dict) -> list[list[str]]:
    out = []
    for tc in testcases([session]):
        result = tc.get("result", "?")
        detail = perf_text(tc)
        if not detail and defined(tc.get("library")):
            detail = f"library: {tc['library']}"
        if result in ("fail", "abort"):
            reason = (tc.get("fail_reason") or "").replace("\n", " ")
            detail = f"[{tc.get('fail_phase')}] {reason}"
        hosts = tc.get("hosts") or tc.get("job_nodelist") or []
        if isinstance(hosts, str) or hosts == "<undefined>":
            hosts = [hosts]
        out.append([build_label(tc), check_label(tc), str(tc.get("placement", "")), result,
                    ",".join(h for h in hosts if h), detail])
    out.sort(key=lambda r: (r[0], r[1], r[2]))
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
    header = ["build", "check", "placement", "result", "nodes", "values / reason"]
    data = rows(session)
    widths = [max(len(r[i]) for r in [header, *data]) for i in range(5)]
    lines = []
    for r in [header, *data]:
        head = "  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=False))
        lines.append(f"{head}  {r[5]}"[:width])
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
