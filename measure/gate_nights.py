#!/usr/bin/env python3
"""Each night of a stored gate experiment, build by build: what the machine did, what each
build did, and how far each build's own level moves from night to night.

Reads a results store of `mpimatrix validate gate`, blesses from its first B unchanged
sessions as `mpimatrix validate replay` does, judges every later session with its stored
confirmation through the gate's own code, and prints one line per session: what was
injected, the partition's host factor (every build against its references at once), each
build's median slowdown once its classes' host factors are out (`host.Slowdowns.builds`)
and each build's verdict (its factor against the least-slowed build and its status).

Then, over the unchanged nights, each build's level relative to the other builds (its median
over the median of the others'): its median, robust spread and range; and for the injected
nights the victim's relative level. A build whose relative level moves by x on unchanged
nights hides a step of x from any first-night test, whatever its tolerance: the last lines
say how many injected nights, per level, stood above every unchanged night of their build
(the best a relative gate with no false alarm on these nights could have caught).

Last, each gated value's spread over the unchanged nights against its blessed spread, and
the detection floor from each: the floor `bless` prints assumes the nights spread as the
blessed sessions did.

    .venv/bin/python measure/gate_nights.py /tmp/gate-store
    .venv/bin/python measure/gate_nights.py /tmp/gate-store --vary build_floor=0.1
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from mpimatrix.validation.api import (
    Experiment,
    Kind,
    Store,
    floor_step,
    percentile,
    robust_spread,
    split,
    value_floors,
    varied_policy,
)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store", type=Path)
    p.add_argument("--bless", type=int, default=5)
    p.add_argument("--vary", default="", help="GatePolicy fields, FIELD=VALUE[,...]")
    args = p.parse_args(argv)
    nights = Store(args.store).nights()  # every round of measuring again
    if not nights:
        sys.exit(f"{args.store}: no stored sessions (reports/*.json)")
    bless_from, later = split(nights, args.bless)
    experiment = Experiment.bless([n.report for n in bless_from], varied_policy(args.vary))
    relative: dict[str, list[float]] = defaultdict(list)
    stepped: list[tuple[float, str, float]] = []
    # each gated value's session bests against the host on the unchanged nights
    night_bests: dict[tuple, list[float]] = defaultdict(list)
    for judged in experiment.judge(later):
        n, night, injected = judged.tag, judged.night, judged.stored.injected
        if injected is None:
            for v in night.judgement.verdicts:
                if v.host_judged and v.samples:
                    night_bests[v.partition, v.environ, v.ref_key, v.var].append(v.first)
        for h in night.judgement.hosts:
            own = h.slowdowns.builds.medians
            names = {b.environ: b.build for b in night.judgement.builds}
            verdicts = ", ".join(f"{b.build} {b.factor:.2f} {b.status}"
                                 for b in night.judgement.builds)
            levels = ", ".join(f"{names.get(e, e)} {m:.2f}" for e, m in sorted(own.items()))
            what = f"{injected[0]} +{injected[1]:.0%}" if injected else "unchanged"
            print(f"{n:3d} {what:32s} host {h.factor or 0:.2f}; own {levels}; {verdicts}")
            for env, m in own.items():
                others = [x for e, x in own.items() if e != env]
                if not others:
                    continue
                r = m / statistics.median(others)
                build = names.get(env, env)
                if injected is None:
                    relative[build].append(r)
                elif injected[0] == build:
                    stepped.append((injected[1], build, r))
    print("\neach build's level over the others' on unchanged nights (median, robust "
          "spread, range):")
    for build, rs in sorted(relative.items()):
        print(f"  {build}: {statistics.median(rs):.3f}, {robust_spread(rs).cv:.1%}, "
              f"{min(rs):.3f}-{max(rs):.3f} over {len(rs)} nights")
    print("the slowed build's relative level on the injected nights, and whether it stood "
          "above every unchanged night of that build:")
    by_level: dict[float, list[bool]] = defaultdict(list)
    for level, build, r in sorted(stepped):
        above = bool(relative.get(build)) and r > max(relative[build])
        by_level[level].append(above)
        print(f"  +{level:.0%} {build}: {r:.3f}{'  above' if above else ''}")
    for level, seen in sorted(by_level.items()):
        print(f"  +{level:.0%}: {sum(seen)} of {len(seen)} above their build's unchanged range")
    print_night_spreads(night_bests, experiment.references)
    return 0


def print_night_spreads(night_bests: dict, references) -> None:
    """Each gated value's robust spread over the unchanged nights (its session best
    against the host) over its blessed spread, and the detection floor each gives: the
    floor bless prints assumes the nights spread as the blessed sessions did."""
    blessed = {(f.partition, f.environ, f.ref_key, f.var): f for f in value_floors(references)}
    ratios, at_bless, at_nights = [], [], []
    for key, xs in night_bests.items():
        f = blessed.get(key)
        if f is None or f.kind == Kind.SHARE or f.spread <= 0 or len(xs) < 5:
            continue
        c = robust_spread(xs).cv
        ratios.append(c / f.spread)
        at_bless.append(f.step)
        at_nights.append(floor_step(c, f.tolerance, f.kind))
    if not ratios:
        return
    pct = percentile
    print(f"\ngated values' spread from night to night over their blessed spread "
          f"({len(ratios)} values): median {pct(ratios, 0.5):.2f}, 10th-90th percentile "
          f"{pct(ratios, 0.1):.2f}-{pct(ratios, 0.9):.2f}")
    print(f"  detection floor from the blessed spread: median {pct(at_bless, 0.5):.0%}, 90th "
          f"percentile {pct(at_bless, 0.9):.0%}; from the nights' spread: median "
          f"{pct(at_nights, 0.5):.0%}, 90th percentile {pct(at_nights, 0.9):.0%}")


if __name__ == "__main__":
    sys.exit(main())
