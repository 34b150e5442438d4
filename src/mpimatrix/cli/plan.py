"""`mpimatrix plan`: what a mode would run here, before anything runs. The system
ReFrame selects on this host, its partitions, the builds, the placements and test cases
of the mode (ReFrame's own `--list=C` under the run's selection), and an estimate of the
duration from the stored sessions of the mode on that system."""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
from collections import Counter, defaultdict

from ..builds.sources import ONLY_ENV, load_builds, only_patterns
from ..run import session_index
from ..run.reframe_cmd import reframe_cmd
from ..run.selection import select_partitions
from ..site.config import build_config

#: `- ImbCheck %placement=internode %benchmark=PingPong /1a2b3c4d @sys:part+environ`
CASE = re.compile(r"^- (?P<check>\S+)(?P<params>(?: %\S+)*) /\w+ @(?P<system>[^:\s]+):"
                  r"(?P<partition>[^+\s]+)\+(?P<environ>\S+)")
#: Stored sessions of a mode an estimate is made from, newest first.
ESTIMATE_FROM = 7


def planned_cases(mode: str, reframe_args: list[str]) -> tuple[list[dict], str]:
    """The test cases ReFrame concretizes for the mode (no fixtures), and its output."""
    cmd = reframe_cmd("--mode", mode, "-l", "C", *reframe_args)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    cases = []
    for line in proc.stdout.splitlines():
        m = CASE.match(line)
        if m:
            params = dict(p.split("=", 1) for p in m["params"].split() if "=" in p)
            cases.append({**m.groupdict(), "placement": params.get("%placement", "-")})
    if proc.returncode != 0 or not cases:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return cases, "\n".join(tail)
    return cases, ""


def estimate(mode: str, system: str, cases: int) -> str:
    """Seconds per test case of the stored sessions of this mode on this system."""
    listed = session_index.listed()
    own = sorted((u for u, (_, confirms) in listed.items() if not confirms),
                 key=lambda u: -listed[u][0])
    rates = []
    for s in session_index.summaries(own[:200]):
        if s.mode == mode and system in s.systems and s.elapsed and s.cases:
            rates.append(s.elapsed / s.cases)
            if len(rates) == ESTIMATE_FROM:
                break
    if not rates:
        return (f"no stored session of mode {mode} on {system}: no estimate (the first "
                "night measures it)")
    per = statistics.median(rates)
    lo, hi = min(rates) * cases, max(rates) * cases
    return (f"about {per * cases / 60:.0f} min ({lo / 60:.0f}-{hi / 60:.0f} min over the "
            f"{len(rates)} newest stored session(s) of mode {mode} on {system}: "
            f"{per:.1f} s per test case); measuring values again adds to a night with "
            "values outside their tolerance")


def print_partitions(config: dict, system: str, used: Counter) -> None:
    for sysdef in config["systems"]:
        if sysdef["name"] != system:
            continue
        print(f"system {system}: {sysdef.get('descr', '')}")
        print(f"  stage and output under {sysdef.get('prefix', '?')}; modules "
              f"{sysdef.get('modules_system', 'nomod')}")
        for part in sysdef["partitions"]:
            extras = part.get("extras") or {}
            access = " ".join(part.get("access") or []) or "-"
            mark = "" if used[part["name"]] else "   (no test case: not selected)"
            print(f"  partition {part['name']}: scheduler {part['scheduler']}, launcher "
                  f"{part['launcher']}, nodes {extras.get('nodes', 1)}, cores "
                  f"{extras.get('cores', '?')}, max_jobs {part.get('max_jobs', 1)}, "
                  f"access {access}{mark}")


def cmd_plan(args) -> int:
    if args.only:
        os.environ[ONLY_ENV] = "\n".join(args.only)
        only_patterns()
    select_partitions(args.partition)
    buildset = load_builds()
    print(f"builds from {buildset.source}: {len(buildset.builds)} usable"
          + (f", {len(buildset.skipped)} skipped" if buildset.skipped else ""))
    for b in buildset.builds:
        print(f"  {b.name:32} environment {b.environ_name}")
    for s in buildset.skipped:
        print(f"  SKIPPED {s.name}: {s.reason}")
    cases, why = planned_cases(args.mode, args.reframe_args)
    if not cases:
        print(f"mpimatrix plan: ReFrame lists no test case for mode {args.mode}: {why}",
              file=sys.stderr)
        return 3
    system = cases[0]["system"]
    print_partitions(build_config(buildset), system,
                     Counter(c["partition"] for c in cases))
    placements: dict[str, Counter] = defaultdict(Counter)
    for c in cases:
        placements[c["partition"]][c["placement"]] += 1
    for part, count in placements.items():
        print(f"  placements on {part}: " + ", ".join(f"{p} ({n})" for p, n in
                                                      sorted(count.items())))
    print(f"mode {args.mode}: {len(cases)} test case(s)")
    for check, n in sorted(Counter(c["check"] for c in cases).items()):
        envs = len({c["environ"] for c in cases if c["check"] == check})
        print(f"  {check:28} {n:5} on {envs} build(s)")
    print(f"duration: {estimate(args.mode, system, len(cases))}")
    return 0


def register(sub) -> None:
    s = sub.add_parser("plan", help="what a mode would run here (system, partitions, builds, "
                       "placements, test cases, duration), before anything runs",
                       description=__doc__)
    s.add_argument("--mode", default="quick", help="the mode (default quick)")
    s.add_argument("--only", action="append", metavar="REGEX",
                   help="only the builds whose name matches (as `mpimatrix run --only`)")
    s.add_argument("--partition", action="append", metavar="REGEX",
                   help="only the partitions whose system:partition matches")
    s.add_argument("reframe_args", nargs="*", help="further ReFrame options after --")
    s.set_defaults(func=cmd_plan)
