#!/usr/bin/env python3
"""Replay a gate experiment's stored sessions through the gate's own code, with other
settings; no new runs.

Reads a results store of `mpimatrix validate gate` and prints:

1. the spread of each time/rate value from session to session (robust CV; median, p75
   and p90 over the values) when a session is represented by its first pass, the
   median of its passes, their best, or their best against the session's host factor
   (what bless and the gate take);
2. for each setting FLOOR:SPREADS:MAX (tolerance floor, robust spreads, largest
   tolerance a gated value may get), with and without judging against the host: the
   references `mpimatrix bless` writes from the first B unchanged sessions
   (results.blessing.bless), every later session judged by results.gate.judge with
   its confirmation, and counted: values gated, false alarms over the gated values of
   builds left alone, detection per injected level over the injected build's gated
   time and rate values, sessions with a HOST line, and the unchanged sessions that
   ended red with the gate's watch rule (results/watch.py) and without it.

The confirmation is the store's own (`*-confirm.json`, what the live gate measured
again), or, for sessions recorded with more passes than the gate judges
(`mpimatrix validate gate --record 6`), the later passes of the test cases the gate
would have measured again, on every build: then every setting gets the
confirmation it would have asked for.

    mpimatrix validate replay /tmp/mpimatrix-gate-20261124T120000
    mpimatrix validate replay <store> --settings 0.3:4:0.3:0,0.3:4:0.3:99
    mpimatrix validate replay <store> --spread
    mpimatrix validate replay <store> --vary build_floor=0.1 --vary build_sigmas=4
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import statistics
import sys
from pathlib import Path

from ..results import floors, samples
from ..results.measurements import Session, load
from ..results.night import Night
from ..results.policy import DEFAULT_POLICY, GatePolicy, variation
from ..results.reference_set import ReferenceSet
from ..results.statistics import best, spread
from .command import description
from .experiment import Experiment, cut_to_confirm, split
from .gate_rates import require_at_least_one
from .store import Store, StoredNight
from .tally import Tally


def passes(report: dict, first: int, last: int | None = None) -> dict:
    out = copy.deepcopy(report)
    out["runs"] = out["runs"][first:last]
    return out


def later_passes(judged_passes: int):
    """The Confirm of a replay: a session's stored confirmation, or, for a session recorded
    with more passes than the gate judges, its later passes of the test cases the gate
    would measure again (results.night.to_confirm, with the blessed build tolerances)."""
    def confirm(stored: StoredNight, session: Session, references: ReferenceSet
                ) -> list[Session]:
        if len(stored.report["runs"]) <= judged_passes:
            return [load(c) for c in stored.confirmations]
        later = cut_to_confirm(passes(stored.report, judged_passes), session, references)
        return [load(later)] if later else []
    return confirm


def first_samples(confirmation: dict, k: int) -> dict:
    """A stored confirmation as `mpimatrix run --confirm-repeats k` would have measured
    it: ReFrame's --repeat runs each test's samples back to back, as copies under new
    hashcodes in order, so the first k hashcodes of each test name on each build."""
    out = copy.deepcopy(confirmation)
    for run in out["runs"]:
        first: dict[tuple, list[str]] = {}  # (test name, build): its first k hashcodes
        for tc in run["testcases"]:
            hashes = first.setdefault((tc.get("name"), tc.get("environ")), [])
            if len(hashes) < k and tc.get("hashcode") not in hashes:
                hashes.append(tc.get("hashcode"))
        run["testcases"] = [tc for tc in run["testcases"]
                            if tc.get("hashcode") in first[tc.get("name"), tc.get("environ")]]
    return out


def replay_store(store: Path) -> list[Night]:
    """Every stored session of a results store, oldest first, judged again as `mpimatrix
    run` judged it: its stored confirmations, the nights before it for the watch rule, the
    references `mpimatrix bless` wrote there (the verdicts must be the live gate's). As
    there, the nights other programs disturbed are no earlier nights of the watch rule
    (run/nights.py previous_nights)."""
    stored = Store(store)
    return [j.night for j in Experiment(stored.references()).judge(
        stored.nights(), disturbed=stored.disturbed())]


def noise_table(reports: list[dict]) -> None:
    by_key: dict[tuple, list[tuple[bool, list[float]]]] = {}
    for r in reports:
        per: dict[tuple, tuple[bool, list[float]]] = {}
        for case in load(r).cases:
            for pv in case.values:
                if pv.value is not None and not pv.is_share:
                    per.setdefault((case.build, case.name, pv.var),
                                   (pv.higher_is_better, []))[1].append(float(pv.value))
        for key, item in per.items():
            by_key.setdefault(key, []).append(item)
    rows: dict[str, list[float]] = {"first pass": [], "median of the passes": [],
                                    "best of the passes": []}
    for runs in by_key.values():
        if len(runs) < 5 or min(len(xs) for _, xs in runs) < 2:
            continue
        rows["first pass"].append(spread([xs[0] for _, xs in runs]).cv)
        rows["median of the passes"].append(spread([statistics.median(xs) for _, xs in runs]).cv)
        rows["best of the passes"].append(spread([best(xs, hib) for hib, xs in runs]).cv)
    # what bless sees: each session's best, divided by the session's host factor
    acc = samples.collect(reports)
    samples.against_host(acc)
    rows["best, against the host"] = [
        spread(sm.values).cv for parts in acc.values() for envs in parts.values()
        for keys in envs.values() for pvars in keys.values() for sm in pvars.values()
        if not sm.is_share and len(sm.by_session) >= 5 and sm.host]
    n = len(rows["first pass"])
    print(f"spread between unchanged sessions (robust CV; median, p75, p90 over {n} values):")
    for label, cvs in rows.items():
        if cvs:
            s = sorted(cvs)
            print(f"  {label:22s} " + ", ".join(f"{100 * s[int(q * (len(s) - 1))]:.1f} %"
                                                for q in (0.5, 0.75, 0.9)))


def replay(bless_from: list[StoredNight], judged: list[StoredNight], setting: tuple,
           judged_passes: int, against_host: bool, vary: dict | None = None) -> str:
    floor, k, max_tol, outside = setting
    # as measured: no partition has enough builds for a host factor
    policy = GatePolicy(value_floor=floor, k_sigma=k, max_tolerance=max_tol,
                        max_blessed_outside=outside,
                        min_builds=DEFAULT_POLICY.min_builds if against_host else 10**6)
    policy = dataclasses.replace(policy, **(vary or {}))
    experiment = Experiment.bless([passes(n.report, 0, judged_passes) for n in bless_from],
                                  policy, floor)
    blessed = experiment.blessed
    tally = Tally({(f.partition, f.environ): f.spread
                   for f in floors.build_floors(experiment.references)})
    for j in experiment.judge(judged, change=lambda r: passes(r, 0, judged_passes),
                              confirm=later_passes(judged_passes)):
        tally.add(j.night, j.stored.injected, j.night.session.uuid)
    nights, gated = tally.nights, tally.gated_rate
    lines = [
        f"floor {floor:.0%}, {k:g} spreads, max {max_tol:.0%}, at most {outside:g} "
        f"blessed outside, {'against the host' if against_host else 'as measured'}"
        f"{''.join(f', {n}={v}' for n, v in (vary or {}).items())}: "
        f"unchanged nights red {nights['red']}/{nights['n']} (without the watch rule "
        f"{nights['red without the watch rule']}); {blessed.gated} gated "
        f"({gated.k / max(gated.n, 1):.0%} of value-sessions); false alarms "
        f"{tally.rate(tally.values, 'unchanged').text(2)}; whole builds: false alarms "
        f"{tally.rate(tally.builds, 'unchanged').text()}; HOST in {tally.hosts} of "
        f"{len(judged)} sessions", *(ln.strip() for ln in tally.curve())]
    return "\n  ".join([*lines, tally.model_line()] if tally.model_values else lines)


def main(argv=None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog, description=description(__doc__))
    p.add_argument("store", type=Path, help="results store of `mpimatrix validate gate`")
    p.add_argument("--bless", type=int, default=5, help="unchanged sessions blessed from")
    p.add_argument("--passes", type=int, default=3, help="passes per session the gate judges")
    d = DEFAULT_POLICY
    gates = f"{d.value_floor:g}:{d.k_sigma:g}:{d.max_tolerance:g}:{d.max_blessed_outside}"
    p.add_argument("--settings", default=gates,
                   help=f"FLOOR:SPREADS:MAX[:OUTSIDE],... (OUTSIDE: blessed samples a gated "
                   f"value may have beyond its tolerance; default: the gate's {gates})")
    p.add_argument("--spread", action="store_true", help="bless from unchanged sessions "
                   "spread over the experiment (every other one) instead of the first B")
    p.add_argument("--vary", action="append", default=[], metavar="FIELD=VALUE[,...]",
                   help="replay once more with these GatePolicy fields changed (against the "
                   "host only; repeatable), e.g. build_floor=0.1")
    p.add_argument("--host-only", action="store_true", help="only the gate against the host")
    p.add_argument("--confirm-samples", type=int, metavar="K", help="judge each stored "
                   "confirmation on the first K samples of each test only, as `mpimatrix run "
                   "--confirm-repeats K` would have measured it")
    args = p.parse_args(argv)
    try:
        variations = [variation(v) for v in args.vary]
    except ValueError as err:
        p.error(str(err))
    require_at_least_one(p, args, "confirm_samples")
    if not (args.store / "reports").is_dir():
        print(f"{args.store}: not a results store (no reports/ in it); give the --results "
              "folder of `mpimatrix validate gate`", file=sys.stderr)
        return 2
    store = Store(args.store)
    nights, confirmed = store.nights(rounds=1), store.confirmed
    bless_from, judged = split(nights, args.bless, spread=args.spread)
    if len(bless_from) < args.bless:
        sys.exit(f"{args.store}: {sum(not n.injected for n in nights)} unchanged sessions, "
                 "too few to bless from")
    if args.confirm_samples:
        judged = [dataclasses.replace(n, confirmations=[
            first_samples(c, args.confirm_samples) for c in n.confirmations]) for n in judged]
    most = max(len(n.report["runs"]) for n in nights)
    print(f"{args.store}: {len(nights)} sessions of up to {most} passes, {len(confirmed)} "
          f"confirmations; bless from sessions {', '.join(str(n.tag) for n in bless_from)}, "
          f"{args.passes} passes judged"
          + (f"; confirmations on their first {args.confirm_samples} sample(s) of each test"
             if args.confirm_samples else ""))
    noise_table([passes(n.report, 0, args.passes) for n in nights if not n.injected])
    for item in args.settings.split(","):
        floor, k, max_tol, *outside = (float(x) for x in item.split(":"))
        setting = (floor, k, max_tol, int(outside[0]) if outside else 10**6)
        for against_host in ((True,) if args.host_only else (False, True)):
            print(replay(bless_from, judged, setting, args.passes, against_host),
                  flush=True)
        for vary in variations:
            print(replay(bless_from, judged, setting, args.passes, True, vary),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
