#!/usr/bin/env python3
"""How many unchanged nights end red: the figure a site feels (a nightly red on an
unchanged system gets switched off), next to the per-value rates.

Takes a series of unchanged sessions in the order they ran (the folder of recorded
six-pass sessions `imb-6pass-unchanged-<i>.json.gz`, each split into its two 3-pass halves:
in a checkout the seven quick sessions of a quiet machine in the test fixtures' reports
folder; or --report files), blesses from the first B (`--bless`, 5) as `mpimatrix bless`
does, then judges each later session with the next one as its confirmation (only the
test cases the gate would measure again, as `mpimatrix run` does) and the watch rule
against the nights before it (results/watch.py), and prints each night's REGRESSION and
WATCH lines, the nights that ended red (and how many would without the watch rule), and
the values that made them red.
No new runs.

    mpimatrix validate unchanged RECORDED_FOLDER
    mpimatrix validate unchanged --report a.json --report b.json ...   # in run order
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from ..results import gate
from ..results.blessing import Blessed
from ..results.measurements import load
from ..results.policy import DEFAULT_POLICY, GatePolicy
from ..results.reference_set import ReferenceSet
from ..results.sessions import load_report
from .command import description
from .experiment import Experiment, cut_to_confirm, measured_again
from .store import StoredNight

#: the recorded six-pass sessions of a folder, <i> their order
RECORDED = re.compile(r"imb-6pass-unchanged-(\d+)\.json\.gz")


def recorded_halves(folder: Path) -> list[dict]:
    """The recorded six-pass sessions of `folder`, in their order, each split into two
    3-pass halves (the second half starting later)."""
    files = sorted((int(m.group(1)), f) for f in Path(folder).glob("*.json.gz")
                   if (m := RECORDED.fullmatch(f.name)))
    out = []
    for _, f in files:
        with gzip.open(f, "rt") as fp:
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
    ReFrame reported them (the gate judges them against the blessed references)."""
    return cut_to_confirm(sessions[k + 1], load(sessions[k]), refset)


def judged_nights(sessions: list[dict], bless: int, floor: float,
                  policy: GatePolicy = DEFAULT_POLICY
                  ) -> Iterator[tuple[int, Blessed, gate.Judgement, gate.Judgement]]:
    """Bless from the first `bless` sessions, then judge each later one as a nightly would
    (validation.experiment): the next session as its confirmation (only the test cases
    the gate measures again), and the watch rule against the nights before it. Yields
    (index, the bless, the judgement without the watch rule, with it)."""
    experiment = Experiment.bless(sessions[:bless], policy, floor)
    nights = [StoredNight(sessions[k], [sessions[k + 1]], k)
              for k in range(bless, len(sessions) - 1)]
    for judged in experiment.judge(nights, confirm=measured_again):
        yield judged.tag, experiment.blessed, judged.night.alone, judged.night.judgement


def main(argv=None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog, description=description(__doc__))
    p.add_argument("recorded", type=Path, nargs="?", help="the folder of the recorded "
                   "six-pass sessions, imb-6pass-unchanged-<i>.json.gz (a checkout's test "
                   "fixtures hold seven of a quiet machine, in their reports folder)")
    p.add_argument("--report", action="append", help="ReFrame JSON report, in run order "
                   "(instead of the recorded folder)")
    p.add_argument("--bless", type=int, default=5, help="sessions blessed from (5)")
    p.add_argument("--floor", type=float, default=DEFAULT_POLICY.value_floor,
                   help="bless --tolerance (the floor; default the policy's)")
    args = p.parse_args(argv)
    if bool(args.report) == (args.recorded is not None):
        p.error("give the folder of the recorded sessions (RECORDED, holding "
                "imb-6pass-unchanged-<i>.json.gz) or --report FILE for each session, in "
                "run order: one of them")
    if args.report:
        sessions = [load_report(Path(r)) for r in args.report]
    elif not (sessions := recorded_halves(args.recorded)):
        sys.exit(f"{args.recorded}: no recorded sessions (imb-6pass-unchanged-<i>.json.gz) "
                 "in it")
    if len(sessions) < args.bless + 2:
        sys.exit(f"need at least {args.bless + 2} sessions (bless from {args.bless}, then a "
                 "session and its confirmation)")
    red, red_alone, culprits, n = 0, 0, Counter(), 0
    for k, blessed, alone, j in judged_nights(sessions, args.bless, args.floor):
        n, bless_gated = n + 1, blessed.gated
        red += bool(j.regressions)
        red_alone += bool(alone.regressions)
        gated = sum(v.status.gated for v in j.verdicts)
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
