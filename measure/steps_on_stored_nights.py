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

from mpimatrix.validation.api import (
    REGRESSION,
    WATCH,
    Experiment,
    Kind,
    Rate,
    Store,
    StoredNight,
    all_changes,
    builds_of,
    case_name,
    change_points,
    floor_step,
    gated_values,
    kind_of,
    load,
    series_against_host,
    series_of,
    slow_case,
    split,
    varied_policy,
)


def slowed(report: dict, build: str, level: float, key: tuple | None = None) -> dict:
    """A copy with the build's values (or one value: its ValueKey, (partition, environ,
    test name, var)) slowed by level."""
    out = copy.deepcopy(report)
    for run in out["runs"]:
        for tc in run["testcases"]:
            if tc.get("build_name") == build and (key is None or (
                    tc.get("environ") == key[1] and case_name(tc["name"]) == key[2])):
                slow_case(tc, 1 + level, None if key is None else key[3])
    return out


def first_night(experiment: Experiment, nights: list[StoredNight], builds: list[str],
                level: float) -> tuple[Rate, Rate]:
    """(builds named the night of the step, other builds named with them): each night
    judged with one build slowed, the nights before it as stored."""
    named, others = Counter(), Counter()
    for build in builds:
        for judged in experiment.judge(nights, change=lambda r, b=build: slowed(r, b, level),
                                       keep_stored=True):
            for b in judged.night.judgement.builds:
                counter = named if b.build == build else others
                counter["n"] += 1
                counter["k"] += b.status == REGRESSION
    return Rate(named["k"], named["n"]), Rate(others["k"], others["n"])


def found_at(changes, key_test, k: int) -> bool:
    return any(key_test(c.series) and abs(c.index - k) <= 1 for c in changes)


def build_by_history(reports, builds, level, starts) -> Rate:
    """A whole build's step from night k, found by the history by night k + 2."""
    hit = n = 0
    for k in starts:
        for build in builds:
            seq = reports[:k] + [slowed(r, build, level) for r in reports[k:k + 3]]
            changes = all_changes([load(r) for r in seq])
            n += 1
            hit += found_at(changes, lambda s, b=build: s.whole_build and s.build == b, k)
    return Rate(hit, n)


def values_within_three(experiment: Experiment, nights: list[StoredNight], blessed_n: int,
                        level: float, starts: list[int], at_floor: bool = False
                        ) -> dict[str, tuple[Rate, Rate]]:
    """Each gated time or rate alone slowed from night k (by `level`, or with `at_floor`
    by its own detection floor, results/floors.py): {band: (seen the first night, on watch
    or a regression; named by the gate on nights k..k+2 or its step found by the history
    by night k + 2)}. The band is "" for one level, else the value's floor band."""
    refset = experiment.references
    policy = refset.policy
    lone = policy.lone_pvalue_share * policy.max_pvalue
    gated = [v for v in gated_values(nights[blessed_n].report, refset)
             if not v.is_share and v.key is not None]
    reports = [n.report for n in nights]
    counts: dict[str, Counter] = {}
    for k in starts:
        base = series_against_host(series_of([load(r) for r in reports[:k + 3]]), policy)
        for v in gated:
            build, key = v.build, v.key
            step = level
            if at_floor:
                kind = kind_of(v.unit, v.higher_is_better)  # shares are not in `gated`
                floor = floor_step(v.spread or 0.0, abs(v.tolerance or 0.0), kind)
                if not floor < 1:  # no step of a time or rate that size is seen
                    continue
                # a rate's floor is its drop d: slowed 1 / (1 - d) times
                step = floor / (1 - floor) if kind == Kind.RATE else floor
            tally = counts.setdefault(_band(floor) if at_floor else "", Counter())
            tally["n"] += 1
            caught = False
            # the step from night k on: the nights before it as stored
            for j, judged in enumerate(experiment.judge(
                    nights[k:k + 3], before=nights[:k],
                    change=lambda r, b=build, s=step, kv=key: slowed(r, b, s, kv)), k):
                status = next((x.status for x in judged.night.judgement.verdicts
                               if x.key == key), None)
                if j == k:
                    tally["first"] += status in (REGRESSION, WATCH)
                if status == REGRESSION:
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
                    caught = any(abs(c.index - k) <= 1 for c in change_points(
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
    # the unchanged nights, each with its first round of measuring again
    unchanged = [n for n in Store(args.store).nights(rounds=1) if not n.injected]
    if len(unchanged) < args.bless + 3:
        sys.exit(f"{args.store}: {len(unchanged)} unchanged sessions, too few")
    bless_from, nights = split(unchanged, args.bless)
    experiment = Experiment.bless([n.report for n in bless_from], varied_policy(args.vary))
    reports = [n.report for n in unchanged]
    builds = builds_of(reports[0])
    # steps from night k: the history needs 3 nights before them (steps.MIN_SEGMENT)
    starts = list(range(max(args.bless, 3), len(reports) - 2, 3))
    print(f"{args.store}: {len(reports)} unchanged sessions, blessed from the first "
          f"{args.bless}, {len(nights)} judged; {len(builds)} builds; history steps from "
          f"nights {', '.join(str(k + 1) for k in starts)}")
    for level in (float(x) for x in args.levels.split(",")):
        named, others = first_night(experiment, nights, builds, level)
        print(f"+{level:.0%}: whole build named the first night {named.text()}; other "
              f"builds named with it {others.text()}", flush=True)
        print(f"  whole build, history by the third night "
              f"{build_by_history(reports, builds, level, starts).text()}", flush=True)
        if args.values:
            for first, three in values_within_three(experiment, unchanged, args.bless,
                                                    level, starts).values():
                print(f"  single values alone: seen the first night {first.text()}; named "
                      f"within three nights (gate or history) {three.text()}", flush=True)
    if args.at_floor:
        print("single values alone, each slowed by its own detection floor (the step the "
              "model says is seen the first night 95 % of the time):")
        for band, (first, three) in values_within_three(experiment, unchanged, args.bless,
                                                        0.0, starts, True).items():
            print(f"  {band}: seen the first night {first.text()}; named within three "
                  f"nights (gate or history) {three.text()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
