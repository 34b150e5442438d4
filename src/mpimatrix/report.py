"""Summaries of ReFrame run reports: one line per test case, grouped by build."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .references import testcases


def load_report(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        raise SystemExit(f"{path}: cannot read ReFrame report: {err}") from None


def check_label(tc: dict) -> str:
    cls = tc["name"].split()[0]
    if tc.get("benchmark") not in (None, "<undefined>"):
        return f"{cls.removesuffix('Check')} {tc['benchmark']}"
    return cls.removesuffix("Check")


def _fmt_value(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def perf_text(tc: dict) -> str:
    parts = []
    for fullvar, pv in (tc.get("perfvalues") or {}).items():
        var = fullvar.rsplit(":", 1)[-1]
        value, ref, unit, res = pv[0], pv[1], pv[4], pv[5]
        s = f"{var}={_fmt_value(value)}{unit}"
        if ref:
            s += f"(ref {_fmt_value(ref)}{' FAIL' if res == 'fail' else ''})"
        parts.append(s)
    return " ".join(parts)


def rows(session: dict) -> list[list[str]]:
    out = []
    for tc in testcases([session]):
        build = tc.get("build_name")
        if not build or build == "<undefined>":
            build = tc.get("environ", "?")
        result = tc.get("result", "?")
        detail = perf_text(tc)
        if not detail and tc.get("library") not in (None, "", "<undefined>"):
            detail = f"library: {tc['library']}"
        if result in ("fail", "abort"):
            reason = (tc.get("fail_reason") or "").replace("\n", " ")
            detail = f"[{tc.get('fail_phase')}] {reason}"
        hosts = tc.get("hosts") or tc.get("job_nodelist") or []
        if isinstance(hosts, str) or hosts == "<undefined>":
            hosts = [hosts]
        out.append([build, check_label(tc), str(tc.get("placement", "")), result,
                    ",".join(h for h in hosts if h), detail])
    out.sort(key=lambda r: (r[0], r[1], r[2]))
    return out


def _split_var(var: str) -> tuple[str, str]:
    """latency_8B -> ("latency", "8 B"); t_avg_1MiB -> ("t_avg", "1 MiB")."""
    m = re.match(r"^(.*)_(\d+)(B|KiB|MiB)$", var)
    return (m.group(1), f"{m.group(2)} {m.group(3)}") if m else (var, "")


def regressions(session: dict) -> list[str]:
    """One line per performance value outside its reference, naming everything."""
    out = []
    for tc in testcases([session]):
        for fullvar, pv in (tc.get("perfvalues") or {}).items():
            value, ref, lower, upper, unit, res = pv[:6]
            if res != "fail":
                continue
            metric, size = _split_var(fullvar.rsplit(":", 1)[-1])
            build = tc.get("build_name") or tc.get("environ")
            bound = (f"allowed {_pct(upper)}" if upper is not None
                     else f"allowed {_pct(lower)}" if lower is not None else "")
            change = f"{(value - ref) / ref:+.0%}" if ref else "n/a"
            out.append(f"REGRESSION {build} {check_label(tc)} {tc.get('placement', '')} "
                       f"{metric}{' at ' + size if size else ''}: {_fmt_value(value)} {unit} "
                       f"vs reference {_fmt_value(ref)} {unit} ({change}, {bound})")
    return out


def _pct(x) -> str:
    return f"{x:+.0%}"


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
