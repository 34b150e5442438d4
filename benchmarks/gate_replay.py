#!/usr/bin/env python3
"""Replay a gate experiment's stored sessions: noise per statistic, other thresholds.

Reads the results store of `benchmarks/gate_error_rates.py` (sessions of several passes,
e.g. `--mode compare`) and prints, with no new runs:

1. the spread of each time/rate value from session to session (robust CV, median, p75
   and p90 over the values) when a session is represented by its first pass only, by
   the median of its passes, or by the best of them (what the gate judges);
2. for each FLOOR:SPREADS setting, the gate replayed: references from the first B
   sessions' best passes (as `mpimatrix bless --tolerance FLOOR` with that many robust
   spreads), the later sessions' best passes plus their confirmations judged against
   them: the values gated, the false alarms (builds not injected) and the detection
   rate per injected level. The default setting reproduces the live run's figures.

    python benchmarks/gate_replay.py /tmp/mm-gate3
    python benchmarks/gate_replay.py /tmp/mm-gate3 --settings 0.1:4,0.15:4,0.2:4 --bless 5
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from mpimatrix.results.sessions import (
    build_label,
    case_name,
    defined,
    load_report,
    perf_values,
    testcases,
)
from mpimatrix.results.statistics import best, spread, value_stats


def passes_of(report: dict) -> dict[tuple, tuple[bool, str, list[float]]]:
    """{(build, case, var): (higher_is_better, injected, [one value per pass])}"""
    out: dict[tuple, tuple[bool, str, list[float]]] = {}
    for tc in testcases([report]):
        injected = tc["injected"] if defined(tc.get("injected")) else ""
        for pv in perf_values(tc):
            if pv.value is None or pv.unit == "%":
                continue
            key = (build_label(tc), case_name(tc), pv.var)
            out.setdefault(key, (pv.higher_is_better, injected, []))[2].append(float(pv.value))
    return out


def quantiles(xs: list[float]) -> str:
    s = sorted(xs)
    return ", ".join(f"{100 * s[int(q * (len(s) - 1))]:.1f} %" for q in (0.5, 0.75, 0.9))


def noise_table(sessions: list[dict]) -> None:
    by_key: dict[tuple, list[tuple[bool, list[float]]]] = {}
    for per in sessions:
        for key, (hib, injected, xs) in per.items():
            if not injected:
                by_key.setdefault(key, []).append((hib, xs))
    rows: dict[str, list[float]] = {"first pass only": [], "median of the passes": [],
                                    "best of the passes": []}
    for runs in by_key.values():
        n = max(len(xs) for _, xs in runs)
        runs = [(hib, xs) for hib, xs in runs if len(xs) == n]
        if len(runs) < 5 or n < 2:
            continue
        rows["first pass only"].append(spread([xs[0] for _, xs in runs]).cv)
        rows["median of the passes"].append(spread([statistics.median(xs) for _, xs in runs]).cv)
        rows["best of the passes"].append(spread([best(xs, hib) for hib, xs in runs]).cv)
    n = len(rows["first pass only"])
    print(f"spread between sessions (robust CV; median, p75, p90 over {n} values):")
    for label, cvs in rows.items():
        if cvs:
            print(f"  {label:22s} {quantiles(cvs)}")


def replay(bless: list[dict], later: list[tuple[dict, dict]], floor: float, k: float) -> str:
    refs = {}
    for key in set().union(*bless):
        hib = next(b[key][0] for b in bless if key in b)
        st = value_stats([best(b[key][2], hib) for b in bless if key in b], floor, k)
        if st.gated:
            refs[key] = (st.median, st.tolerance)
    alarms, detected = Counter(), {}
    for per, conf in later:
        for key, (hib, injected, xs) in per.items():
            if key not in refs:
                continue
            ref, tol = refs[key]
            def outside(x, ref=ref, tol=tol, hib=hib):
                return x < ref * (1 - tol) if hib else x > ref * (1 + tol)
            flagged = outside(best(xs, hib))
            if flagged and key in conf:
                flagged = outside(best(xs + conf[key][2], hib))
            if injected:
                level = re.search(r"clock=([\d.]+)", injected)
                c = detected.setdefault(level.group(1) if level else injected, Counter())
                c["values"] += 1
                c["flagged"] += flagged
            else:
                alarms["values"] += 1
                alarms["flagged"] += flagged
    det = "; ".join(f"+{float(lv):.0%}: {c['flagged']}/{c['values']} = "
                    f"{c['flagged'] / c['values']:.0%}" for lv, c in sorted(detected.items()))
    return (f"floor {floor:.0%}, {k:g} spreads: {len(refs)} gated, false alarms "
            f"{alarms['flagged']}/{alarms['values']} = "
            f"{alarms['flagged'] / max(alarms['values'], 1):.1%}; detection {det}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store", type=Path, help="results store of gate_error_rates.py")
    p.add_argument("--bless", type=int, default=5, help="sessions the references came from")
    p.add_argument("--settings", default="0.1:4,0.1:5,0.1:6,0.15:4,0.2:4",
                   help="FLOOR:SPREADS,... (default: the gate's 0.1:4 and stricter ones)")
    args = p.parse_args(argv)
    reports = sorted(f for f in (args.store / "reports").glob("*.json")
                     if not f.name.startswith("latest") and not f.name.endswith("-confirm.json"))
    if len(reports) <= args.bless:
        sys.exit(f"{args.store}: {len(reports)} sessions, need more than --bless {args.bless}")
    confirms = {}
    for f in (args.store / "reports").glob("*-confirm.json"):
        c = load_report(f)
        confirms[c["session_info"].get("confirms")] = passes_of(c)
    loaded = [load_report(f) for f in reports]
    sessions = [passes_of(r) for r in loaded]
    print(f"{args.store}: {len(sessions)} sessions ({args.bless} blessed from), "
          f"{len(confirms)} confirmations")
    noise_table(sessions)
    later = [(per, confirms.get(r["session_info"]["uuid"], {}))
             for per, r in zip(sessions[args.bless:], loaded[args.bless:], strict=True)]
    for item in args.settings.split(","):
        floor, _, k = item.partition(":")
        print(replay(sessions[:args.bless], later, float(floor), float(k or 4)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
