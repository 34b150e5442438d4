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
3. with --variants: two alternatives to the gate's statistics, replayed: a value's spread
   at least the median spread of its build's values (a MAD of 5 samples is itself noisy),
   and each build judged relative to the other builds of the same session (their median
   best/reference divides its values: host drift cancels, a slowdown of one build stays);
4. with --spread: the same thresholds with references blessed from B unchanged sessions
   spread over the experiment (every other later unchanged session, as a week of
   nightlies would be) against the first B (back to back, as the live run blessed),
   both judged on the same remaining sessions.

    python benchmarks/gate_replay.py /tmp/mm-gate3
    python benchmarks/gate_replay.py /tmp/mm-gate3 --settings 0.1:4,0.15:4,0.2:4 --bless 5
    python benchmarks/gate_replay.py /tmp/mm-gate4 --spread
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from mpimatrix.results.references import Samples
from mpimatrix.results.sessions import (
    build_label,
    case_name,
    defined,
    load_report,
    perf_values,
    testcases,
)
from mpimatrix.results.statistics import MAX_TOLERANCE, MIN_SAMPLES, best, spread, value_stats


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


def references_from(bless: list[dict], floor: float, k: float,
                    pooled: bool = False) -> dict[tuple, tuple[float, float]]:
    """{key: (median, tolerance)} of the gated values, as `bless` computes them; with
    `pooled`, a value's spread is at least the median spread of its build's values."""
    samples: dict[tuple, Samples] = {}
    for i, b in enumerate(bless):
        for key, (hib, _, xs) in b.items():
            for x in xs:
                samples.setdefault(key, Samples("", hib)).add(str(i), x)
    # Samples.values picks what bless takes: each session's best pass (or every pass)
    stats = {key: value_stats(s.values, floor, k) for key, s in samples.items()}
    pool: dict[str, list[float]] = {}
    for key, st in stats.items():
        if st.n >= MIN_SAMPLES:
            pool.setdefault(key[0], []).append(st.spread)
    refs = {}
    for key, st in stats.items():
        tol = st.tolerance
        if pooled and st.gated:
            tol = max(tol, k * statistics.median(pool[key[0]]))
        if st.gated and tol <= MAX_TOLERANCE:
            refs[key] = (st.median, tol)
    return refs


def host_factors(per: dict, refs: dict) -> dict[str, float]:
    """Per build, how much slower than their references the other builds' gated values
    ran in this session (median of best/reference, rates inverted)."""
    ratio = {}
    for key, (hib, _, xs) in per.items():
        if key in refs:
            x, ref = best(xs, hib), refs[key][0]
            ratio[key] = ref / x if hib else x / ref
    return {build: statistics.median([r for k, r in ratio.items() if k[0] != build] or [1.0])
            for build in {k[0] for k in ratio}}


def replay(bless: list[dict], later: list[tuple[dict, dict]], floor: float, k: float,
           pooled: bool = False, relative: bool = False) -> str:
    """The gate replayed; `relative` judges each build's values divided by the host
    factor of the other builds in the same session."""
    refs = references_from(bless, floor, k, pooled)
    alarms, detected = Counter(), {}
    for per, conf in later:
        factors = host_factors(per, refs) if relative else {}
        for key, (hib, injected, xs) in per.items():
            if key not in refs:
                continue
            ref, tol = refs[key]
            f = factors.get(key[0], 1.0)
            def outside(x, ref=ref, tol=tol, hib=hib, f=f):
                return x * f < ref * (1 - tol) if hib else x / f > ref * (1 + tol)
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
    variant = "".join([", pooled spread" if pooled else "", ", relative" if relative else ""])
    return (f"floor {floor:.0%}, {k:g} spreads{variant}: {len(refs)} gated, false alarms "
            f"{alarms['flagged']}/{alarms['values']} = "
            f"{alarms['flagged'] / max(alarms['values'], 1):.1%}; detection {det}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store", type=Path, help="results store of gate_error_rates.py")
    p.add_argument("--bless", type=int, default=5, help="sessions the references came from")
    p.add_argument("--settings", default="0.1:4,0.1:5,0.1:6,0.15:4,0.2:4",
                   help="FLOOR:SPREADS,... (default: the gate's 0.1:4 and stricter ones)")
    p.add_argument("--variants", action="store_true",
                   help="also: a value's spread at least its build's median spread "
                   "(pooled); each build judged relative to the others in the session")
    p.add_argument("--spread", action="store_true",
                   help="also bless from unchanged sessions spread over the experiment")
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
    settings = [(float(f), float(k or 4)) for f, _, k in
                (item.partition(":") for item in args.settings.split(","))]
    for floor, k in settings:
        print(replay(sessions[:args.bless], later, floor, k))
    if args.variants:
        for floor, k in settings:
            for pooled, relative in ((True, False), (False, True), (True, True)):
                print(replay(sessions[:args.bless], later, floor, k, pooled, relative))
    if args.spread:
        spread_bless(sessions, later, args.bless, settings)
    return 0


def spread_bless(sessions: list[dict], later: list[tuple[dict, dict]], b: int,
                 settings: list[tuple[float, float]]) -> None:
    unchanged = [i for i, (per, _) in enumerate(later)
                 if not any(injected for _, injected, _ in per.values())]
    spread = unchanged[0::2][:b]
    if len(spread) < b:
        sys.exit(f"--spread: {len(unchanged)} later unchanged sessions, need {2 * b - 1}")
    judged = [x for i, x in enumerate(later) if i not in spread]
    print(f"bless from {b} unchanged sessions spread over the experiment (later sessions "
          f"{', '.join(str(i + 1) for i in spread)}) vs the first {b}, judged on the "
          f"other {len(judged)}:")
    for floor, k in settings:
        print("  first:  " + replay(sessions[:b], judged, floor, k))
        print("  spread: " + replay([later[i][0] for i in spread], judged, floor, k))


if __name__ == "__main__":
    sys.exit(main())
