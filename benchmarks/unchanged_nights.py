#!/usr/bin/env python3
"""How many unchanged nights end red: the figure a site feels (a nightly red on an
unchanged system gets switched off), next to the per-value rates.

Takes a series of unchanged sessions in the order they ran (default: the 14 recorded
3-pass halves of the seven six-pass quick sessions of a quiet machine,
tests/fixtures/reports), blesses from the first B (`--bless`, 5) as `mpimatrix bless`
does, then judges each later session with the next one as its confirmation (only the
test cases the gate would measure again, as `mpimatrix run` does), and prints each
night's REGRESSION lines, the nights that ended red, and the values that made them red.
No new runs.

    python benchmarks/unchanged_nights.py
    python benchmarks/unchanged_nights.py --report a.json --report b.json ...   # in run order
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mpimatrix.results import gate, references  # noqa: E402
from mpimatrix.results.measurements import with_references  # noqa: E402
from mpimatrix.results.policy import DEFAULT_POLICY  # noqa: E402
from mpimatrix.results.sessions import load_report  # noqa: E402

RECORDED = ROOT / "tests" / "fixtures" / "reports"


def recorded_halves() -> list[dict]:
    out = []
    for i in range(1, 8):
        with gzip.open(RECORDED / f"imb-6pass-unchanged-{i}.json.gz", "rt") as fp:
            session = json.load(fp)
        for first in (0, 3):
            half = copy.deepcopy(session)
            half["runs"] = half["runs"][first:first + 3]
            half["session_info"]["uuid"] = f"night-{len(out) + 1:02d}"
            out.append(half)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--report", action="append", help="ReFrame JSON report, in run order "
                   "(default: the recorded quiet-machine sessions)")
    p.add_argument("--bless", type=int, default=5, help="sessions blessed from (5)")
    p.add_argument("--floor", type=float, default=DEFAULT_POLICY.value_floor)
    args = p.parse_args(argv)
    sessions = [load_report(Path(r)) for r in args.report] if args.report else recorded_halves()
    if len(sessions) < args.bless + 2:
        sys.exit(f"need at least {args.bless + 2} sessions (bless from {args.bless}, then a "
                 "session and its confirmation)")
    blessed = references.bless(sessions[:args.bless], args.floor, None,
                               references.CommentedMap(), {})
    red, culprits, nights = 0, Counter(), 0
    for k in range(args.bless, len(sessions) - 1):
        night = with_references(sessions[k], blessed.refs)
        again = {c.hashcode for c in gate.failed_first(night, blessed.stats)}
        conf = with_references(sessions[k + 1], blessed.refs)
        for run in conf["runs"]:
            run["testcases"] = [tc for tc in run["testcases"] if tc.get("hashcode") in again]
        j = gate.judge(night, [conf] if again else [], blessed.stats)
        nights += 1
        red += bool(j.regressions)
        gated = sum(v.status not in (gate.NOT_GATED, gate.NO_REFERENCE) for v in j.verdicts)
        print(f"night {k + 1}: {gated} values gated, {len(j.regressions)} REGRESSION line(s)")
        for line in j.regressions:
            print(f"    {line}")
        culprits.update(f"{v.build} {v.check} {v.placement} {v.var}" for v in j.verdicts
                        if v.status == gate.REGRESSION)
        culprits.update(f"{b.build} (the whole build)" for b in j.builds
                        if b.status == gate.REGRESSION)
    print(f"unchanged nights red: {red} of {nights} ({red / nights:.0%}); blessed from "
          f"{args.bless} sessions, {blessed.gated} values gated")
    for what, n in culprits.most_common():
        print(f"  red {n} night(s): {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
