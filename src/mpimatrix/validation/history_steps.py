#!/usr/bin/env python3
"""Does `mpimatrix changes` find a small step in a nightly series, and only it?

In a fresh results store: N quick sessions (default 12); from session S on
(default 6) one build runs with the regression injector at +X % (default 15 %:
`MPIMATRIX_INJECT=<build>:clock=0.15`, every timed interval 15 % longer). Then
the change-point detection of `mpimatrix changes` runs over the N sessions and
prints, for the injected build's time and rate values, at which session the
step was found (S or S+1 is the goal) or that it was missed, in its series as a
whole build and in each of its values' series; the changes it reported for the
other builds, as wholes and per value (none is the goal); and the host's own changes
(each build's series is judged against the host, results/history.py).

    mpimatrix validate history                  # 12 sessions, step at 6
    mpimatrix validate history --mode compare   # 3 passes, as the nightly
    mpimatrix validate history --analyse /tmp/mpimatrix-history-...   # no new runs
    .venv/bin/python measure/change_point_compare.py <store>/reports/quick-*.json  # Otava, ruptures
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from ..results import history
from ..results.measurements import load
from ..results.sessions import load_report
from ..run.prune import KEEP_ENV
from .command import MPIMATRIX, description


def analyse(reports: list[dict], build: str, step_at: int, slowdown: float) -> None:
    sessions = [load(r) for r in reports]
    changes = history.all_changes(sessions)
    series = history.series_of(sessions)
    found: Counter = Counter()
    for s in series:
        if s.build != build or s.is_share:
            continue
        mine = [c for c in changes if c.series.key == s.key]  # series_of builds new objects
        at = [c.index + 1 for c in mine]  # 1-based session of the first point after
        found["series"] += 1
        if any(a in (step_at, step_at + 1) for a in at):
            found["at step"] += 1
        elif at:
            found["elsewhere"] += 1
        else:
            found["missed"] += 1
    whole = [c for c in changes if c.series.whole_build]
    mine = [c.index + 1 for c in whole if c.series.build == build]
    others = [c for c in changes if c.series.build not in (build, history.HOST)
              and not c.series.whole_build]
    host = [c for c in changes if c.series.build == history.HOST]
    print(f"step +{slowdown:.0%} on {build} from session {step_at} of {len(reports)}:")
    print(f"  the whole build (its values' median against the host): found at session(s) "
          f"{', '.join(map(str, mine)) or 'none'} (goal: {step_at} or {step_at + 1})")
    print(f"  its time/rate values: found at session {step_at} or {step_at + 1} in "
          f"{found['at step']} of {found['series']} series, elsewhere in "
          f"{found['elsewhere']}, missed in {found['missed']}")
    print(f"changes of the other builds as a whole: "
          f"{sum(c.series.build != build for c in whole)} (goal: none)")
    for c in whole:
        if c.series.build != build:
            print(f"  {c.line()}")
    print(f"changes of the other builds' values: {len(others)} in "
          f"{sum(s.build != build and not s.is_share for s in series)} time/rate series")
    for c in others:
        print(f"  {c.line()}")
    print(f"changes of the host (every build at once): {len(host)}")
    for c in host:
        print(f"  {c.line()}")


def main(argv=None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog, description=description(__doc__))
    p.add_argument("--sessions", type=int, default=12, help="nightly sessions to run (12)")
    p.add_argument("--step-at", type=int, default=6, help="first injected session (1-based)")
    p.add_argument("--slowdown", type=float, default=0.15,
                   help="the injected step: every timed interval this much longer (0.15)")
    p.add_argument("--build", help="build to slow down (default: the first with IMB)")
    p.add_argument("--mode", default="quick", help="mpimatrix run mode (default quick)")
    p.add_argument("--results", help="results store (default: a new one under /tmp)")
    p.add_argument("--analyse", type=Path, metavar="STORE",
                   help="only analyse the sessions of an earlier run's store")
    args = p.parse_args(argv)
    results = Path(args.results or f"/tmp/mpimatrix-history-{time.strftime('%Y%m%dT%H%M%S')}")
    # the experiment reads its sessions' report files back, whatever their age
    env = {**os.environ, "MPIMATRIX_RESULTS": str(results), KEEP_ENV: "all"}
    env.pop("MPIMATRIX_INJECT", None)
    t0 = time.time()
    reports = []
    build = args.build
    if args.analyse:
        reports = sorted((load_report(f) for f in (args.analyse / "reports").glob("*.json")
                          if not f.name.startswith("latest")
                          and not f.name.endswith("-confirm.json")),
                         key=lambda r: r["session_info"].get("time_start_unix", 0))
        results, args.sessions = args.analyse, 0
        first = next(((i, c.build) for i, r in enumerate(reports, 1) for c in load(r).cases
                      if c.injected), None)
        if first is None:
            sys.exit(f"{args.analyse}: no injected session")
        args.step_at, build = first[0], build or first[1]
    for i in range(1, args.sessions + 1):
        run_env = dict(env)
        if i >= args.step_at and build:
            run_env["MPIMATRIX_INJECT"] = f"^{re.escape(build)}$:clock={args.slowdown}"
        proc = subprocess.run([MPIMATRIX, "run", "--mode", args.mode, "--no-confirm"],
                              env=run_env, capture_output=True, text=True)
        m = re.search(r"^report: (\S+)$", proc.stdout, re.M)
        if not m:
            sys.exit(f"session {i}: no report (rc={proc.returncode}):\n{proc.stdout[-2000:]}"
                     f"\n{proc.stderr[-2000:]}")
        reports.append(load_report(Path(m.group(1))))
        if build is None:
            build = next(tc["build_name"] for r in reports[0]["runs"] for tc in r["testcases"]
                         if tc.get("name", "").startswith("ImbCheck"))
        busy = "DISTURBED" if "DISTURBED:" in proc.stdout else ""
        print(f"# session {i}{' injected' if i >= args.step_at else ''} {busy}: "
              f"{time.time() - t0:.0f} s", flush=True)
    analyse(reports, build, args.step_at, args.slowdown)
    print(f"run time: {(time.time() - t0) / 60:.1f} min; sessions in {results}/reports")
    return 0


if __name__ == "__main__":
    sys.exit(main())
