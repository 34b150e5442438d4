#!/usr/bin/env python3
"""Apache Otava vs ruptures on the project's own recorded series.

Reads sessions (ReFrame JSON reports of `mpimatrix run`, e.g. the ones
`mpimatrix validate history` writes), builds every value's series
(mpimatrix.results.history.series_of) and runs both detectors on each:

  otava     E-Divisive means with a t-test per change point (what `mpimatrix
            changes` uses), p < 0.01
  ruptures  PELT, least-squares cost on the series divided by its median, penalty
            BIC-like: 2 * sigma^2 * log(n), sigma from the first differences (MAD)

Ground truth comes from the sessions themselves: a series has a step where the
`injected` spec of its points changes (the regression injector). Printed per
detector: steps found at the injected session or the next (hits), found later or
earlier (late/early), missed, changes reported in series without a step (false),
and the time taken.

    pip install ruptures==1.1.10      # not a dependency of mpimatrix
    .venv/bin/python measure/change_point_compare.py results/history-*/reports/*.json
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from mpimatrix.validation.api import (
    CHANGE_WINDOW,
    DEFAULT_POLICY,
    Series,
    load,
    load_report,
    series_of,
)


def otava_points(values: list[float]) -> list[int]:
    from otava.analysis import compute_change_points

    found, _ = compute_change_points(values, window_len=CHANGE_WINDOW,
                                     max_pvalue=DEFAULT_POLICY.max_pvalue)
    return [int(c.index) for c in found]


def ruptures_points(values: list[float]) -> list[int]:
    import numpy as np
    import ruptures as rpt

    med = statistics.median(values)
    if not med > 0 or not all(math.isfinite(v) for v in values):
        return []  # e.g. an overlap of 0 %: nothing to scale by (PELT fails on NaN)
    x = np.array(values) / med
    diffs = np.diff(x)
    sigma = 1.4826 * float(np.median(np.abs(diffs - np.median(diffs)))) / math.sqrt(2) or 1e-6
    pen = 2 * sigma ** 2 * math.log(len(x))
    bkps = rpt.Pelt(model="l2", min_size=2, jump=1).fit(x).predict(pen=pen)
    return [b for b in bkps if b < len(x)]


def truth(series: Series) -> int | None:
    """Index of the first point whose injected spec differs from the one before."""
    for i in range(1, len(series.points)):
        if series.points[i].injected != series.points[i - 1].injected:
            return i
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("reports", nargs="+", help="ReFrame JSON reports (the sessions)")
    args = p.parse_args(argv)
    sessions = [load(load_report(Path(r))) for r in args.reports
                if not r.endswith("latest.json")]
    series = [s for s in series_of(sessions) if len(s.points) >= DEFAULT_POLICY.min_points]
    print(f"# {len(sessions)} sessions, {len(series)} series "
          f"({sum(truth(s) is not None for s in series)} with an injected step)")
    detectors = {"otava": otava_points}
    try:
        import ruptures  # noqa: F401

        detectors["ruptures"] = ruptures_points
    except ImportError:
        print("# ruptures not installed (pip install ruptures==1.1.10): otava only")
    for name, detect in detectors.items():
        tally: Counter = Counter()
        t0 = time.perf_counter()
        for s in series:
            found = detect([pt.value for pt in s.points])
            step = truth(s)
            if step is None:
                tally["false"] += len(found)
                continue
            near = [i for i in found if step <= i <= step + 1]
            tally["hit" if near else "late" if any(i > step + 1 for i in found)
                  else "early" if found else "missed"] += 1
            tally["false"] += len([i for i in found if i not in near and abs(i - step) > 1])
        ms = 1000 * (time.perf_counter() - t0) / max(len(series), 1)
        stepped = sum(truth(s) is not None for s in series)
        print(f"{name:9} hits {tally['hit']}/{stepped}, late {tally['late']}, early "
              f"{tally['early']}, missed {tally['missed']}, false changes {tally['false']} "
              f"(in {len(series)} series), {ms:.1f} ms per series")
    return 0


if __name__ == "__main__":
    sys.exit(main())
