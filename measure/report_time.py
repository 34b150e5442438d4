#!/usr/bin/env python3
"""How long `mpimatrix report --html` takes to make the report of a large session.

By default the session is the multi-node, two-fabric session derived from the recorded
real `--mode compare` run (tests/fixtures/reports/compare-local-5builds.json.gz; see
src/mpimatrix/validation/derived_session.py): 452 test cases over 5 layouts and 2 partitions, 3 runs
each (1356 test case records). Prints the size of the session and of the report, and the
wall-clock and CPU time (this process and its drawing workers) of each repeat, with
their median, min and max.

    .venv/bin/python measure/report_time.py                     # derived session, 3 repeats
    .venv/bin/python measure/report_time.py --layouts 3   # 2 partitions x 3 layouts: 276 cases
    .venv/bin/python measure/report_time.py --repeats 5 --jobs 1
    .venv/bin/python measure/report_time.py --report results/reports/latest.json [--derive]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from mpimatrix.validation.api import (  # noqa: E402
    DERIVED_LAYOUTS,
    derive_session,
    derived_prices,
    drawing_workers,
    make_report,
    write_report,
)

FIXTURE = ROOT / "tests" / "fixtures" / "reports" / "compare-local-5builds.json.gz"


def cpu_seconds() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def spread(values: list[float]) -> str:
    return (f"median {statistics.median(values):.1f} s, min {min(values):.1f} s, "
            f"max {max(values):.1f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", help="a ReFrame JSON report (default: the derived session)")
    ap.add_argument("--derive", action="store_true", help="derive layouts from --report")
    ap.add_argument("--layouts", type=int, default=len(DERIVED_LAYOUTS),
                    help=f"derive the first N of the {len(DERIVED_LAYOUTS)} layouts (intranode, "
                    "internode, 2x2, 4x1, 4x2)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--jobs", type=int, help="drawing processes (MPIMATRIX_REPORT_JOBS)")
    args = ap.parse_args()
    if args.jobs:
        os.environ["MPIMATRIX_REPORT_JOBS"] = str(args.jobs)
    if args.report:
        session = json.loads(Path(args.report).read_text())
        if args.derive:
            session = derive_session(session, DERIVED_LAYOUTS[:args.layouts])
    else:
        with gzip.open(FIXTURE, "rt") as fp:
            session = derive_session(json.load(fp), DERIVED_LAYOUTS[:args.layouts])
    records = [tc for run in session["runs"] for tc in run["testcases"]]
    cases = {(tc["name"], tc["partition"], tc["environ"]) for tc in records}
    print(f"session: {len(cases)} test cases, {len(session['runs'])} runs, {len(records)} "
          f"records; drawing processes: {drawing_workers()}, cores: {os.cpu_count()}")
    walls, cpus = [], []
    with tempfile.TemporaryDirectory() as out:
        for i in range(args.repeats):
            w0, c0 = time.perf_counter(), cpu_seconds()
            rep = make_report([session], name="bench", prices=derived_prices())
            html, _ = write_report(Path(out), "bench", rep.html, rep.markdown)
            walls.append(time.perf_counter() - w0)
            cpus.append(cpu_seconds() - c0)
            print(f"repeat {i + 1}: {walls[-1]:.1f} s wall, {cpus[-1]:.1f} s CPU; "
                  f"{len(rep.plots)} plots, {html.stat().st_size / 1e6:.1f} MB")
    print(f"wall: {spread(walls)}")
    print(f"CPU:  {spread(cpus)}")
    print(f"load average during the run: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
