#!/usr/bin/env python3
"""How often an MPI hangs or crashes per layout on the emulated cluster.

usage: measure/hang_rates.py --build mpich-4.0.2-debian [--layouts internode 2x2 4x1 4x2]
           [--methods srun build-mpiexec] [--runs 30] [--timeout 45] [--dir /tmp/mmc-h]

Needs root. Brings up a cluster with as many nodes as the largest layout (or uses
the one up in --dir), compiles the placement probe (reframe_checks/src/mpi_placement.c)
with the build's wrapper, then, per method and layout, one allocation that runs
the probe --runs times back to back, launched exactly as the checks launch it
(rfm/launchers.py launch_argv), each run under `timeout`. Every run is one of:
  ok           exited 0 with every rank's line
  hang-after   every rank printed its line, then the run hung until the timeout
               (the MPI_Finalize hang of docs/cluster.md)
  hang-before  killed by the timeout before every rank had printed
  signal       a rank died of a signal (the signal and top frame from stderr)
  fail         any other non-zero exit
Prints one line per run, then counts per method and layout with the machine's
load. Run directories stay under --work for post-mortems (stderr of each run).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from mpimatrix.placement import INTERNODE, INTRANODE, Placement
from mpimatrix.shell import shell_value
from mpimatrix.validation.api import (
    Layout,
    cluster_run,
    cluster_state,
    cluster_up,
    crash_report,
    launch_argv,
    load_builds,
)

PROBE = Path(__file__).resolve().parents[1] / "reframe_checks" / "src" / "mpi_placement.c"
RANK_LINE = re.compile(r"^MPIMATRIX rank=\d+ ", re.M)


def layout(name: str) -> Placement:
    if name in ("intranode", "internode"):
        return INTRANODE if name == "intranode" else INTERNODE
    nodes, ppn = name.split("x")
    return Placement(int(nodes), int(ppn))


def job_script(build, place: Placement, method: str, work: Path, runs: int,
               timeout: int) -> str:
    env = "".join(f"export {k}={shell_value(v)}\n" for k, v in build.env.items())
    launch = shlex.join(launch_argv(build, place, method))
    return f"""#!/bin/bash
{env}cd {shlex.quote(str(work))}
for i in $(seq 1 {runs}); do
    t0=$(date +%s.%N)
    timeout -k 5 {timeout} {launch} ./mpi_placement > run$i.out 2> run$i.err
    rc=$?
    echo "rc=$rc seconds=$(echo "$(date +%s.%N) - $t0" | bc)" > run$i.rc
done
"""


def classify(work: Path, i: int, place: Placement) -> tuple[str, float, str]:
    out = (work / f"run{i}.out").read_text(errors="replace")
    err = (work / f"run{i}.err").read_text(errors="replace")
    m = re.match(r"rc=(\d+) seconds=([\d.]+)", (work / f"run{i}.rc").read_text())
    rc, secs = int(m.group(1)), float(m.group(2))
    lines = len(RANK_LINE.findall(out))
    crash = crash_report(err + out)
    if rc == 0 and lines == place.ranks:
        return "ok", secs, ""
    if crash:
        return "signal", secs, crash
    if rc in (124, 137):
        return ("hang-after" if lines == place.ranks else "hang-before"), secs, \
            f"{lines}/{place.ranks} rank lines"
    tail = " / ".join(err.strip().splitlines()[-2:])
    return "fail", secs, f"rc={rc} {lines}/{place.ranks} rank lines: {tail}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--layouts", nargs="+", default=["internode", "2x2", "4x1", "4x2"])
    ap.add_argument("--methods", nargs="+", default=["srun", "build-mpiexec"])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--timeout", type=int, default=45)
    ap.add_argument("--dir", default="/tmp/mmc-h")
    ap.add_argument("--work", default="/tmp/mm-hang-rates")
    args = ap.parse_args()
    build = next((b for b in load_builds().builds if b.name == args.build), None)
    if build is None:
        sys.exit(f"no build {args.build!r}")
    places = [layout(n) for n in args.layouts]
    state = cluster_state(Layout.at(args.dir))
    lay = Layout.at(args.dir, state["nodes"] if state else max(p.nodes for p in places))
    cluster_up(lay)
    root = Path(args.work) / build.name
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **{k: os.path.expandvars(v) for k, v in build.env.items()}}
    subprocess.run([build.cc, str(PROBE), "-o", str(root / "mpi_placement")], check=True,
                   env=env)
    counts: dict[tuple[str, str], collections.Counter] = {}
    for method in args.methods:
        for place in places:
            work = root / f"{method}-{place.name}"
            work.mkdir(parents=True, exist_ok=True)
            (work / "mpi_placement").unlink(missing_ok=True)
            os.link(root / "mpi_placement", work / "mpi_placement")
            script = work / "job.sh"
            script.write_text(job_script(build, place, method, work, args.runs, args.timeout))
            load = os.getloadavg()[0]
            t0 = time.monotonic()
            cluster_run(lay, "head", [
                "salloc", f"--nodes={place.nodes}", f"--ntasks={place.ranks}",
                f"--ntasks-per-node={place.ppn}", "bash", str(script)],
                timeout=args.runs * (args.timeout + 10) + 120)
            c = counts[(method, place.name)] = collections.Counter()
            for i in range(1, args.runs + 1):
                what, secs, detail = classify(work, i, place)
                c[what] += 1
                print(f"{build.name} {method} {place.name} run {i}: {what} {secs:.1f}s "
                      f"{detail}", flush=True)
            print(f"== {build.name} {method} {place.name}: {dict(c)} of {args.runs} "
                  f"({time.monotonic() - t0:.0f} s, load1 at start {load:.1f})", flush=True)
    print()
    print(time.strftime("%Y-%m-%d"), f"{build.name}, {lay.nodes}-node cluster, "
          f"timeout {args.timeout} s per run")
    for (method, name), c in counts.items():
        n = sum(c.values())
        print(f"  {method:14} {name:10} " + ", ".join(
            f"{k} {v}/{n}" for k, v in sorted(c.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
