#!/usr/bin/env python3
"""Run-to-run spread of performance variables over interleaved repetitions.

Reads ReFrame JSON reports (a `--mode compare` run: --reruns, or --repeat) and
prints, per build and performance variable, the number of repetitions, mean,
standard deviation, coefficient of variation (CV = stdev/mean) and min/max.

    .venv/bin/python measure/repetition_spread.py                      # results/reports/latest.json
    .venv/bin/python measure/repetition_spread.py --report R.json --var 'latency_8B|bandwidth_4MiB'
    .venv/bin/python measure/repetition_spread.py --session <uuid>     # from the results database

Repetitions are recognised both as reruns (one entry per run of the report)
and as --repeat copies (display names differing only in %.repeat_no=N).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from collections import defaultdict

from mpimatrix.validation.api import sessions_given


def key_of(tc: dict) -> tuple[str, str, str]:
    name = re.sub(r"\s*%\.repeat_no=\d+", "", tc.get("display_name") or tc["name"])
    name = re.sub(r"\s*/[0-9a-f]{8}$", "", name)
    return name, f"{tc.get('system')}:{tc.get('partition')}", tc.get("environ", "?")


def collect(sessions: list[dict], check: str, var: str) -> dict:
    acc: dict = defaultdict(list)
    pat = re.compile(var)
    for s in sessions:
        for run in s.get("runs", []):
            for tc in run.get("testcases", []):
                if not tc.get("name", "").startswith(check) or tc.get("result") != "pass":
                    continue
                for fullvar, pv in (tc.get("perfvalues") or {}).items():
                    pvar = fullvar.rsplit(":", 1)[-1]
                    if pat.fullmatch(pvar) and pv[0] is not None:
                        acc[(*key_of(tc), pvar, pv[4])].append(float(pv[0]))
    return acc


def table(acc: dict) -> list[list[str]]:
    rows = []
    for (name, _part, env, pvar, unit), vals in sorted(acc.items()):
        mean = statistics.fmean(vals)
        sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
        cv = sd / mean if mean else float("nan")
        rows.append([name.replace("OsuCheck ", ""), env, pvar, unit, str(len(vals)),
                     f"{mean:.4g}", f"{sd:.3g}", f"{cv:.1%}", f"{min(vals):.4g}",
                     f"{max(vals):.4g}"])
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--report", action="append", default=[], help="ReFrame JSON report")
    p.add_argument("--session", action="append", default=[], help="stored session UUID")
    p.add_argument("--check", default="OsuCheck", help="test name prefix (default OsuCheck)")
    p.add_argument("--var", default="latency_8B|bandwidth_4MiB",
                   help="performance variables, a regex (default latency_8B|bandwidth_4MiB)")
    args = p.parse_args(argv)
    sessions = sessions_given(args.report, args.session)  # default: the latest report
    acc = collect(sessions, args.check, args.var)
    if not acc:
        print("no passing test case with those performance variables", file=sys.stderr)
        return 1
    for s in sessions:
        info = s.get("session_info", {})
        print(f"# session {info.get('uuid', '?')}: {info.get('time_start', '?')} .. "
              f"{info.get('time_end', '?')}, {len(s.get('runs', []))} run(s)")
    head = ["test", "build", "variable", "unit", "n", "mean", "stdev", "CV", "min", "max"]
    rows = [head, *table(acc)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    cvs = defaultdict(list)
    for r in rows[1:]:
        if r[7] != "nan%":
            cvs[r[2]].append(float(r[7].rstrip("%")))
    for pvar, vals in sorted(cvs.items()):
        print(f"# {pvar}: median CV over builds {statistics.median(vals):.1f}% "
              f"(min {min(vals):.1f}%, max {max(vals):.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
