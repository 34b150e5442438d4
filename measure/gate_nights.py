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

    .venv/bin/python measure/gate_nights.py /tmp/gate-store
    .venv/bin/python measure/gate_nights.py /tmp/gate-store --vary build_below_references=1
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from mpimatrix.results import references
from mpimatrix.results.measurements import load
from mpimatrix.results.night import judge_night
from mpimatrix.results.policy import DEFAULT_POLICY, variation
from mpimatrix.results.statistics import spread
from mpimatrix.validation.replay import confirmations_of, injected_of, sessions_of


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store", type=Path)
    p.add_argument("--bless", type=int, default=5)
    p.add_argument("--vary", default="", help="GatePolicy fields, FIELD=VALUE[,...]")
    args = p.parse_args(argv)
    reports, confirms = sessions_of(args.store), confirmations_of(args.store)
    if not reports:
        sys.exit(f"{args.store}: no stored sessions (reports/*.json)")
    unchanged = [i for i, r in enumerate(reports) if not injected_of(r)][:args.bless]
    policy = dataclasses.replace(DEFAULT_POLICY, **variation(args.vary))
    refset = references.bless_in_memory([reports[i] for i in unchanged], policy)
    history: list = [(refset.applied(reports[i]), []) for i in unchanged]
    relative: dict[str, list[float]] = defaultdict(list)
    stepped: list[tuple[float, str, float]] = []
    for n, report in enumerate(reports, 1):
        if n - 1 in unchanged:
            continue
        session = refset.applied(report)
        conf = [load(c) for c in confirms.get(session.uuid, [])]  # every round
        night = judge_night(session, conf, refset, reversed(history))
        history.append((session, conf))
        injected = injected_of(report)
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
        print(f"  {build}: {statistics.median(rs):.3f}, {spread(rs).cv:.1%}, "
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
