#!/usr/bin/env python3
"""How many unchanged nights end red: the figure a site feels (a nightly red on an
unchanged system gets switched off), next to the per-value rates.

Takes a series of unchanged sessions in the order they ran (default: the 14 recorded
3-pass halves of the seven six-pass quick sessions of a quiet machine,
tests/fixtures/reports), blesses from the first B (`--bless`, 5) as `mpimatrix bless`
does, then judges each later session with the next one as its confirmation (only the
test cases the gate would measure again, as `mpimatrix run` does) and the watch rule
against the nights before it (results/watch.py), and prints each night's REGRESSION and
WATCH lines, the nights that ended red (and how many would without the watch rule), and
the values that made them red.
No new runs.

    mpimatrix validate unchanged
    mpimatrix validate unchanged --report a.json --report b.json ...   # in run order
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import sys
from collections import Counter
from pathlib import Path

from ..results import gate, references
from ..results.night import judge_night, to_confirm
from ..results.policy import DEFAULT_POLICY, GatePolicy
from ..results.reference_set import ReferenceSet
from ..results.sessions import load_report

#: seven six-pass quick sessions of a quiet machine (in a checkout: tests/fixtures)
RECORDED = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "reports"


def recorded_halves() -> list[dict]:
    out = []
    for i in range(1, 8):
        with gzip.open(RECORDED / f"imb-6pass-unchanged-{i}.json.gz", "rt") as fp:
            session = json.load(fp)
        for first in (0, 3):
            half = copy.deepcopy(session)
            half["runs"] = half["runs"][first:first + 3]
            half["session_info"]["uuid"] = f"night-{len(out) + 1:02d}"
            half["session_info"]["time_start_unix"] += first  # the second half ran later
            out.append(half)
    return out


def confirmation(sessions: list[dict], k: int, refset: ReferenceSet) -> dict | None:
    """Session k's confirmation: the next session's passes of the test cases the gate
    would measure again (results.night.to_confirm; None when it would measure none), as
    ReFrame reported them (`refset.applied` judges them against the blessed references)."""
    again = {c.hashcode for c in to_confirm(refset.applied(sessions[k]), refset)}
    if not again:
        return None
    conf = copy.deepcopy(sessions[k + 1])
    for run in conf["runs"]:
        run["testcases"] = [tc for tc in run["testcases"] if tc.get("hashcode") in again]
    return conf


def judged_nights(sessions: list[dict], bless: int, floor: float,
                  policy: GatePolicy = DEFAULT_POLICY):
    """Bless from the first `bless` sessions, then judge each later one as a nightly would
    (results.night.judge_night): the next session as its confirmation (only the test cases
    the gate measures again), and the watch rule against the nights before it. Yields
    (index, the bless, the judgement without the watch rule, with it)."""
    blessed = references.bless(sessions[:bless], floor, None, references.CommentedMap(), {},
                               policy)
    refset = ReferenceSet(blessed.refs, blessed.stats, policy)
    history = [(refset.applied(s), []) for s in sessions[:bless]]
    for k in range(bless, len(sessions) - 1):
        night = refset.applied(sessions[k])
        conf = confirmation(sessions, k, refset)
        confs = [refset.applied(conf)] if conf else []
        judged = judge_night(night, confs, refset, reversed(history))
        history.append((night, confs))
        yield k, blessed, judged.alone, judged.judgement


def main(argv=None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    p.add_argument("--report", action="append", help="ReFrame JSON report, in run order "
                   "(default: the recorded quiet-machine sessions)")
    p.add_argument("--bless", type=int, default=5, help="sessions blessed from (5)")
    p.add_argument("--floor", type=float, default=DEFAULT_POLICY.value_floor)
    args = p.parse_args(argv)
    if not args.report and not RECORDED.is_dir():
        sys.exit(f"no recorded sessions at {RECORDED} (a checkout's tests/fixtures): give "
                 "--report FILE for each session, in run order")
    sessions = [load_report(Path(r)) for r in args.report] if args.report else recorded_halves()
    if len(sessions) < args.bless + 2:
        sys.exit(f"need at least {args.bless + 2} sessions (bless from {args.bless}, then a "
                 "session and its confirmation)")
    red, red_alone, culprits, n = 0, 0, Counter(), 0
    for k, blessed, alone, j in judged_nights(sessions, args.bless, args.floor):
        n, bless_gated = n + 1, blessed.gated
        red += bool(j.regressions)
        red_alone += bool(alone.regressions)
        gated = sum(v.status not in (gate.NOT_GATED, gate.NO_REFERENCE) for v in j.verdicts)
        print(f"night {k + 1}: {gated} values gated, {len(j.regressions)} REGRESSION line(s), "
              f"{len(j.watched)} on watch")
        for line in [*j.regressions, *j.watched]:
            print(f"    {line}")
        culprits.update(f"{v.build} {v.check} {v.placement} {v.var}" for v in j.verdicts
                        if v.status == gate.REGRESSION)
        culprits.update(f"{b.build} (the whole build)" for b in j.builds
                        if b.status == gate.REGRESSION)
    print(f"unchanged nights red: {red} of {n} ({red / n:.0%}); without the watch rule "
          f"{red_alone} of {n}; blessed from {args.bless} sessions, {bless_gated} values "
          "gated")
    for what, k in culprits.most_common():
        print(f"  red {k} night(s): {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
