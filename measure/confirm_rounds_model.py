#!/usr/bin/env python3
"""What rounds of measuring again buy a whole build, by the gate's own model.

The gate names a whole build when its factor is beyond the build tolerance in the
session and the mean of the session's and the confirmation's factors is too; with
GatePolicy.confirm_rounds > 1 a build whose pooled factor is still within close_spreads
spreads of the threshold is measured again, one more draw a round (results/night.py
close_calls). For a build spread (the night-to-night
spread of its factor against the other builds) and a tolerance, this prints per step the
probability that it is named the night it happens (step 0: the false-alarm rate of an
unchanged build) and the mean rounds measured when the session was outside, for 1, 2 and
3 rounds; results/floors.py caught_pooled, normal noise, independent draws. Then, per
number of rounds, the tolerance that keeps an unchanged build's false-alarm rate at
--alarm and the floor it gives (the step named the first night 95 % of the time): what
the rounds buy, at the same false-alarm rate.

    .venv/bin/python measure/confirm_rounds_model.py                      # 6 %, spread 1.5 %
    .venv/bin/python measure/confirm_rounds_model.py --tolerance 0.06 --spread 0.04
"""

from __future__ import annotations

import argparse

from mpimatrix.validation.api import caught_pooled


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tolerance", type=float, default=0.06)
    p.add_argument("--spread", type=float, default=0.015)
    p.add_argument("--close", type=float, default=1.0, help="close_spreads")
    p.add_argument("--steps", default="0,0.05,0.08,0.10,0.15")
    p.add_argument("--rounds", default="1,2,3")
    p.add_argument("--alarm", type=float, default=0.01,
                   help="false-alarm rate per build and night the tolerance is set for")
    args = p.parse_args(argv)
    rounds = [int(r) for r in args.rounds.split(",")]
    print(f"tolerance {args.tolerance:.1%}, spread {args.spread:.1%}, close within "
          f"{args.close:g} spread(s)/sqrt(draws); per step: named the first night "
          "(mean rounds when outside)")
    print("step   " + "  ".join(f"{r} round{'s' if r > 1 else ' '}      " for r in rounds))
    for step in (float(x) for x in args.steps.split(",")):
        cells = [caught_pooled(args.spread, args.tolerance, step, r, args.close)
                 for r in rounds]
        print(f"{step:5.0%}  " + "  ".join(f"{p:6.1%} ({m:.2f})  " for p, m in cells))
    print(f"at a false-alarm rate of {args.alarm:.1%} per build and night:")
    for r in rounds:
        tol = smallest(lambda t, r=r: caught_pooled(args.spread, t, 0.0, r, args.close)[0]
                       <= args.alarm)
        floor = smallest(lambda d, r=r, tol=tol: caught_pooled(
            args.spread, tol, d, r, args.close)[0] >= 0.95)
        print(f"  {r} round(s): tolerance {tol:.1%}, floor {floor:.1%}")
    return 0


def smallest(holds, low: float = 0.0, high: float = 0.5, steps: int = 14) -> float:
    """The smallest x in [low, high] where `holds(x)` (monotone: false below, true
    above), by bisection."""
    for _ in range(steps):
        mid = (low + high) / 2
        low, high = (low, mid) if holds(mid) else (mid, high)
    return high


if __name__ == "__main__":
    raise SystemExit(main())
