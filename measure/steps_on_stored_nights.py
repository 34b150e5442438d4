#!/usr/bin/env python3
"""Steps laid on a live experiment's unchanged nights: what the gate and the history catch.

A live run (`mpimatrix validate gate`) gives a few injected nights per level. Its unchanged
nights hold this machine's real noise, night to night, so a step laid on them (times x (1 +
level), rates / (1 + level), as the clock injector slows a run: validation/year.py
slow_case) measures the same detection on many more nights. Blessed from the store's first B
unchanged sessions, as `mpimatrix validate replay` does; then, per level:

- a whole build, the first night: each later unchanged night and its stored confirmation
  with one build slowed (each build in turn), judged by the gate's own code (judge_night,
  with the nights before it for the watch rule); named, and how many other builds were
  named with it (false alarms). A night without a stored confirmation of the build counts
  its first verdict (the live gate would have measured again: a little optimistic);
- a whole build within three nights: the step from night k on, the history (`mpimatrix
  changes`) over the nights up to k + 2: found at k (one night either side allowed);
- a single value within three nights (`--values`): each gated time or rate alone, slowed
  from night k; caught when the gate names it on one of nights k..k+2 or the history finds
  its step by night k + 2; and seen the first night (on watch or a regression on night k);
- the same with each value slowed by its own detection floor (`--at-floor`), per band of
  floors: the check of the floor the report and `bless` print.

Semi-synthetic: real nights, steps applied to their stored values. The live injected nights
(`mpimatrix validate gate`) are the check on it.

    .venv/bin/python measure/steps_on_stored_nights.py /tmp/gate-store
    .venv/bin/python measure/steps_on_stored_nights.py /tmp/gate-store --values --levels 0.1
    .venv/bin/python measure/steps_on_stored_nights.py /tmp/gate-store --at-floor --levels 0.25
    .venv/bin/python measure/steps_on_stored_nights.py /tmp/gate-store --vary build_floor=0.1
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

from mpimatrix.results import floors, gate, history, references
from mpimatrix.results.measurements import load
from mpimatrix.results.night import judge_night
from mpimatrix.results.policy import DEFAULT_POLICY, variation
from mpimatrix.results.values import Kind, case_name, kind_of
from mpimatrix.validation.gate_rates import builds_of
from mpimatrix.validation.replay import injected_of, read_store
from mpimatrix.validation.tally import Rate
from mpimatrix.validation.year import slow_case


def slowed(report: dict | None, build: str, level: float, key: tuple | None = None):
    """A copy with the build's values (or one value: its ValueKey, (partition, environ,
    test name, var)) slowed by level."""
    if report is None:
        return None
    out = copy.deepcopy(report)
    for run in out["runs"]:
        for tc in run["testcases"]:
            if tc.get("build_name") == build and (key is None or (
                    tc.get("environ") == key[1] and case_name(tc["name"]) == key[2])):
                slow_case(tc, 1 + level, None if key is None else key[3])
    return out


def first_night(refset, nights, before, builds, level) -> tuple[Rate, Rate]:
    """(builds named the night of the step, other builds named with them)."""
    named, others = Counter(), Counter()
    history_ = [(refset.applied(r), []) for r in before]
    for report, conf in nights:
        for build in builds:
            c = slowed(conf, build, level)
            night = judge_night(refset.applied(slowed(report, build, level)),
                                [load(c)] if c else [], refset, reversed(history_))
            for b in night.judgement.builds:
                counter = named if b.build == build else others
                counter["n"] += 1
                counter["k"] += b.status == gate.REGRESSION
        history_.append((refset.applied(report), [load(conf)] if conf else []))
    return Rate(named["k"], named["n"]), Rate(others["k"], others["n"])


def found_at(changes, key_test, k: int) -> bool:
    return any(key_test(c.series) and abs(c.index - k) <= 1 for c in changes)


def build_by_history(reports, builds, level, starts) -> Rate:
    """A whole build's step from night k, found by the history by night k + 2."""
    hit = n = 0
    for k in starts:
        for build in builds:
            seq = reports[:k] + [slowed(r, build, level) for r in reports[k:k + 3]]
            changes = history.all_changes([load(r) for r in seq])
            n += 1
            hit += found_at(changes, lambda s, b=build: s.whole_build and s.build == b, k)
    return Rate(hit, n)


def values_within_three(refset, reports, confs, blessed_n, level, starts,
                        at_floor: bool = False) -> dict[str, tuple[Rate, Rate]]:
    """Each gated time or rate alone slowed from night k (by `level`, or with `at_floor`
    by its own detection floor, results/floors.py): {band: (seen the first night, on watch
    or a regression; named by the gate on nights k..k+2 or its step found by the history
    by night k + 2)}. The band is "" for one level, else the value's floor band."""
    policy = refset.policy
    lone = policy.lone_pvalue_share * policy.max_pvalue
    gated = [v for v in gate.judge(refset.applied(reports[blessed_n]), [], refset).verdicts
             if v.status not in (gate.NOT_GATED, gate.NO_REFERENCE) and not v.is_share
             and v.key is not None]
    applied = [refset.applied(r) for r in reports]
    confirmed = [[load(c)] if c else [] for c in confs]
    counts: dict[str, Counter] = {}
    for k in starts:
        base = history.against_host(history.series_of([load(r) for r in reports[:k + 3]]),
                                    policy)
        for v in gated:
            build, key = v.build, v.key
            step = level
            if at_floor:
                kind = kind_of(v.unit, v.higher_is_better)  # shares are not in `gated`
                floor = floors.step(v.spread or 0.0, abs(v.tolerance or 0.0), kind)
                if not floor < 1:  # no step of a time or rate that size is seen
                    continue
                # a rate's floor is its drop d: slowed 1 / (1 - d) times
                step = floor / (1 - floor) if kind == Kind.RATE else floor
            tally = counts.setdefault(_band(floor) if at_floor else "", Counter())
            tally["n"] += 1
            caught = False
            earlier = list(zip(applied[:k], confirmed[:k], strict=True))
            for j in range(k, min(k + 3, len(reports))):
                s = refset.applied(slowed(reports[j], build, step, key))
                c = slowed(confs[j], build, step, key)
                night = judge_night(s, [load(c)] if c else [], refset, reversed(earlier))
                earlier.append((s, [load(c)] if c else []))
                status = next((x.status for x in night.judgement.verdicts if x.key == key),
                              None)
                if j == k:
                    tally["first"] += status in (gate.REGRESSION, gate.WATCH)
                if status == gate.REGRESSION:
                    caught = True
                    break
            if not caught:
                series = next((s for s in base if tuple(s.key) == tuple(key)), None)
                if series is not None:
                    f = 1 + step
                    stepped = replace(series, points=[
                        p if i < k else replace(p, value=p.value / f if series.higher_is_better
                                                else p.value * f)
                        for i, p in enumerate(series.points)])
                    caught = any(abs(c.index - k) <= 1 for c in history.change_points(
                        stepped, lone, policy))
            tally["three"] += caught
    return {band: (Rate(c["first"], c["n"]), Rate(c["three"], c["n"]))
            for band, c in sorted(counts.items())}


#: Floor bands of --at-floor, upper bounds.
BANDS = (0.1, 0.2, 0.3, 0.4, 0.5, 1.0)


def _band(step: float) -> str:
    upper = next(b for b in BANDS if step <= b)
    lower = max([b for b in BANDS if b < upper], default=0.0)
    return f"floor {lower:.0%}-{upper:.0%}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store", type=Path)
    p.add_argument("--bless", type=int, default=5)
    p.add_argument("--levels", default="0.05,0.10,0.15,0.25")
    p.add_argument("--values", action="store_true", help="single values too (slow)")
    p.add_argument("--at-floor", action="store_true",
                   help="single values, each slowed by its own detection floor (slow)")
    p.add_argument("--vary", default="", help="GatePolicy fields, FIELD=VALUE[,...]")
    args = p.parse_args(argv)
    policy = replace(DEFAULT_POLICY, **variation(args.vary))
    stored, by_uuid = read_store(args.store)
    reports = [r for r in stored if not injected_of(r)]
    if len(reports) < args.bless + 3:
        sys.exit(f"{args.store}: {len(reports)} unchanged sessions, too few")
    confs = [by_uuid.get(r["session_info"]["uuid"]) for r in reports]
    refset = references.bless_in_memory(reports[:args.bless], policy)
    builds = builds_of(reports[0])
    nights = list(zip(reports[args.bless:], confs[args.bless:], strict=True))
    # steps from night k: the history needs 3 nights before them (steps.MIN_SEGMENT)
    starts = list(range(max(args.bless, 3), len(reports) - 2, 3))
    print(f"{args.store}: {len(reports)} unchanged sessions, blessed from the first "
          f"{args.bless}, {len(nights)} judged; {len(builds)} builds; history steps from "
          f"nights {', '.join(str(k + 1) for k in starts)}")
    for level in (float(x) for x in args.levels.split(",")):
        named, others = first_night(refset, nights, reports[:args.bless], builds, level)
        print(f"+{level:.0%}: whole build named the first night {named.text()}; other "
              f"builds named with it {others.text()}", flush=True)
        print(f"  whole build, history by the third night "
              f"{build_by_history(reports, builds, level, starts).text()}", flush=True)
        if args.values:
            for first, three in values_within_three(refset, reports, confs, args.bless,
                                                    level, starts).values():
                print(f"  single values alone: seen the first night {first.text()}; named "
                      f"within three nights (gate or history) {three.text()}", flush=True)
    if args.at_floor:
        print("single values alone, each slowed by its own detection floor (the step the "
              "model says is seen the first night 95 % of the time):")
        for band, (first, three) in values_within_three(refset, reports, confs, args.bless,
                                                        0.0, starts, True).items():
            print(f"  {band}: seen the first night {first.text()}; named within three "
                  f"nights (gate or history) {three.text()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
