#!/usr/bin/env python3
"""Time `up` (from nothing to all nodes idle) and `down` of the emulated cluster.

usage: measure/cluster_lifecycle.py [--nodes 2 4] [--cycles 3] [--dir /tmp/mm-lifecycle]
Needs root. Prints one line per cycle with the 1-minute load average (the
machine may be shared: record the load next to the timings), then the
median/min/max per node count. Targets (issue 5): 4-node up <= 2 s (goal),
<= 5 s (must); down leaves nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from mpimatrix.validation.api import Layout, cluster_down, cluster_up


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/mm-lifecycle")
    args = ap.parse_args()
    rows = {}
    for n in args.nodes:
        lay = Layout.at(args.dir, n)
        cluster_down(lay)  # start from nothing
        for i in range(args.cycles):
            load = os.getloadavg()[0]
            t0 = time.monotonic()
            st = cluster_up(lay)
            t_up = time.monotonic() - t0
            idle = sorted(st["sinfo"].values())
            t0 = time.monotonic()
            res = cluster_down(lay)
            t_down = time.monotonic() - t0
            rows.setdefault(n, []).append((t_up, t_down))
            print(f"nodes={n} cycle={i + 1} up={t_up:.2f}s down={t_down:.2f}s "
                  f"load1={load:.2f} states={','.join(idle)} left={res['left']}", flush=True)
    print()
    for n, vals in rows.items():
        ups, downs = [v[0] for v in vals], [v[1] for v in vals]
        print(f"nodes={n}: up median {statistics.median(ups):.2f}s (min {min(ups):.2f}, max "
              f"{max(ups):.2f}); down median {statistics.median(downs):.2f}s (min "
              f"{min(downs):.2f}, max {max(downs):.2f}); cycles={len(vals)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
