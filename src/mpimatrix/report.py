"""Summaries of ReFrame run reports: one line per test case, grouped by build."""

from __future__ import annotations

import json
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


def format_table(session: dict, width: int = 200) -> str:
    header = ["build", "check", "placement", "result", "nodes", "values / reason"]
    data = rows(session)
    widths = [max(len(r[i]) for r in [header, *data]) for i in range(5)]
    lines = []
    for r in [header, *data]:
        head = "  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=False))
        lines.append(f"{head}  {r[5]}"[:width])
    info = session.get("session_info", {})
    n, f = info.get("num_cases", len(data)), info.get("num_failures", 0)
    lines.append("")
    lines.append(f"{n} test case(s), {f} failure(s), {info.get('num_aborted', 0)} aborted; "
                 f"session {info.get('uuid', '?')}")
    return "\n".join(lines)
