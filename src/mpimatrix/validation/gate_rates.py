#!/usr/bin/env python3
"""False-alarm and detection rates of the regression gate, measured for real.

In a fresh results store: B unchanged sessions, `mpimatrix bless` from them;
then K unchanged sessions with an injected one after every M of them (`--inject-every`,
default 1: U, I, U, I, ...; the issue's measure is K=20, M=2: 20 unchanged, 10 injected). Each
injected session slows one build (in turn) by one level (in turn over --levels,
shifted by one after every round of builds, so each build gets each level) with
the regression injector (MPIMATRIX_INJECT=<build>:clock=<level>: every interval
the benchmark times grows by that fraction). Every session runs
as a nightly would: `mpimatrix run` with 3 interleaved passes (the default
`--mode compare`: the quick catalogue with `--reruns=2`; the gate judges the best
pass) and confirmation of values whose best pass is outside their tolerance.

Printed: the unchanged sessions that ended red (a REGRESSION line: exit code 1 of the
nightly), with the gate's watch rule (results/watch.py: a value alone outside for the
first time is on watch, each session judged against the stored ones before it) and
without it; the false-alarm rate over all gated values of the unchanged sessions
and of the builds left alone in injected sessions; the detection rate per
level over the injected build's gated time and rate values (latency and times
up, bandwidth down; percentages are left alone by the injector) and on whole builds
as a detection curve next to what the floor model predicted (validation/tally.py);
the sessions with a HOST line; the share of values gated; the run time. Every rate
with its counts and its 95 % interval.

    mpimatrix validate gate                    # B=5, K=10, 3 passes
    mpimatrix validate gate --levels 0.25 --sessions 20 --inject-every 2
    mpimatrix validate gate --mode quick       # one pass per session
    mpimatrix validate gate --sessions 4 --levels 0.5 --only 'mpich|impi'
    mpimatrix validate gate --sessions 10 --record 6   # for mpimatrix validate replay
    mpimatrix validate gate --levels 0.10 --inject-test 'MPI1:Allreduce$'  # one benchmark
    mpimatrix validate gate --levels 0.10 --streak 3 --inject-every 2  # within three nights
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from ..results import floors
from ..results.policy import DEFAULT_POLICY, variation
from ..rfm.inject_spec import InjectError, check_pattern
from ..run.prune import KEEP_ENV
from .command import MPIMATRIX, description
from .experiment import Experiment
from .store import Store, StoredNight, builds_of
from .tally import Tally


def run(store: Store, args, inject: str = "", confirm: bool = True) -> dict:
    """One `mpimatrix run` in the store; returns its report (its confirmations are the
    store's, read on)."""
    # the experiment reads its sessions' report files back, whatever their age
    env = {**os.environ, "MPIMATRIX_RESULTS": str(store.path), KEEP_ENV: "all"}
    env.pop("MPIMATRIX_INJECT", None)
    if inject:
        env["MPIMATRIX_INJECT"] = inject
    cmd = run_command(args, confirm)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    m = re.search(r"^report: (\S+)$", proc.stdout, re.M)
    if not m:
        sys.exit(f"no report from {' '.join(cmd)} (rc={proc.returncode}):\n"
                 f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return store.session_in(Path(m.group(1)))


def require_at_least_one(parser: argparse.ArgumentParser, args: argparse.Namespace,
                         *names: str) -> None:
    """An argparse error for the first of these counts below 1 (one not given is left
    alone)."""
    for name in names:
        if (value := getattr(args, name)) is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, not {value}")


def run_command(args, confirm: bool = True) -> list[str]:
    """The `mpimatrix run` command line of one session of the experiment."""
    cmd = [MPIMATRIX, "run", "--mode", args.mode]
    cmd += [a for o in args.only for a in ("--only", o)]
    cmd += ["--confirm-repeats", str(args.confirm_repeats)] if confirm else ["--no-confirm"]
    if args.reframe:
        cmd += ["--", *args.reframe.split()]
    return cmd


def injections(report: dict) -> set[tuple[str, str]]:
    """(build, injector spec) of the builds the injector slowed in a session."""
    return {(tc["build_name"], tc["injected"]) for r in report["runs"] for tc in r["testcases"]
            if tc.get("injected")}


def scheduled(i: int, injected: bool, builds: list[str], levels: list[float],
              test: str = ""):
    """Session i's injection: (build, level, MPIMATRIX_INJECT). Builds in turn, and levels
    in turn shifted by one every round of builds, so every build gets every level. With
    `test` (a regex of test case names), only the build's test cases it matches."""
    if not injected:
        return "", 0.0, ""
    # round r = i // len(builds) shifts the levels by r: (i + r) gave build b the level
    # 4r + b, the same one in every round when the builds are 3 and the levels 2
    turn, rnd = i % len(builds), i // len(builds)
    build, level = builds[turn], levels[(turn + rnd) % len(levels)]
    return build, level, f"^{re.escape(build)}${'@' + test if test else ''}:clock={level}"


def schedule(unchanged: int, every: int, streak: int = 1) -> list[tuple[int, bool]]:
    """(index, injected) in run order: `unchanged` unchanged sessions, after every `every`
    of them an injected step held `streak` sessions running; the index counts each kind on
    its own (it picks the build and level: the same for every night of a streak)."""
    out, injected = [], 0
    for i in range(unchanged):
        out.append((i, False))
        if (i + 1) % every == 0:
            out += [(injected, True)] * streak
            injected += 1
    return out


def nights(args) -> list[tuple[int, bool]]:
    """The experiment's schedule from its command line."""
    return schedule(args.sessions, args.inject_every, args.streak)


def main(argv=None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog, description=description(__doc__))
    p.add_argument("--bless", type=int, default=5, help="unchanged sessions to bless from")
    p.add_argument("--sessions", type=int, default=10, help="K: unchanged sessions (and "
                   "injected ones, one after every --inject-every unchanged)")
    p.add_argument("--inject-every", type=int, default=1, metavar="M", help="an injected "
                   "session after every M unchanged ones (1: U, I, U, I, ...; 2: U, U, I, ...)")
    p.add_argument("--streak", type=int, default=1, metavar="N", help="each injected step "
                   "held N nights running (same build, level and tests): counts what is "
                   "named by each night, a value alone being on watch its first night")
    p.add_argument("--levels", default="0.10,0.25,0.50", help="injected slowdowns")
    p.add_argument("--floor", default=str(DEFAULT_POLICY.value_floor),
                   help="bless --tolerance (the floor)")
    p.add_argument("--mode", default="compare",
                   help="mpimatrix run mode (default compare: quick catalogue, 3 passes)")
    p.add_argument("--only", action="append", default=[], help="mpimatrix run --only")
    p.add_argument("--reframe", default="", help="extra ReFrame options (one string)")
    p.add_argument("--results", help="results store (default: a new one under /tmp)")
    p.add_argument("--json", help="write the raw figures here too")
    p.add_argument("--include-disturbed", action="store_true", help="bless from sessions "
                   "other programs disturbed too (a smoke run on a busy machine: its figures "
                   "then measure those programs as well)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted experiment "
                   "in --results: its stored sessions are used where they fit the schedule")
    p.add_argument("--inject-test", default="", metavar="REGEX", help="slow only the "
                   "injected build's test cases whose name matches (one benchmark, e.g. "
                   "'MPI1:Allreduce$'): its values are counted as injected, the build's "
                   "others as unchanged, the build as a whole not at all")
    p.add_argument("--confirm-repeats", type=int, default=3, metavar="N", help="mpimatrix "
                   "run --confirm-repeats: samples of each test measured again")
    p.add_argument("--vary", default="", metavar="FIELD=VALUE[,...]", help="bless --vary: "
                   "gate settings other than the defaults, judged live (GatePolicy fields)")
    p.add_argument("--record", type=int, metavar="P", help="only record: the same sessions "
                   "(B, then K unchanged and K injected interleaved) with P passes each and "
                   "no confirmation, for `mpimatrix validate replay` to judge with any setting")
    args = p.parse_args(argv)
    require_at_least_one(p, args, "bless", "sessions", "inject_every", "streak",
                         "confirm_repeats")
    try:
        variation(args.vary)
        if args.inject_test:
            check_pattern(args.inject_test)
    except (ValueError, InjectError) as err:  # InjectError: a regex that does not compile
        p.error(str(err))
    if args.record:
        args.mode, args.reframe = "quick", f"{args.reframe} --reruns={args.record - 1}".strip()
    levels = [float(x) for x in args.levels.split(",")]
    store = Store(Path(args.results or f"/tmp/mpimatrix-gate-{time.strftime('%Y%m%dT%H%M%S')}"))
    results = store.path
    t0 = time.time()
    print(f"# results store {results}; bless {args.bless}, K={args.sessions}, levels "
          f"{levels}, mode {args.mode}", flush=True)
    stored = store.sessions if args.resume else []
    if stored:
        print(f"# resuming: {len(stored)} stored session(s)", flush=True)
    bless_reports = stored[:args.bless]
    bless_reports += [run(store, args, confirm=False)
                      for _ in range(args.bless - len(bless_reports))]
    if args.record:
        return record_only(store, args, builds_of(bless_reports[0]), levels, t0)
    if not (args.resume and store.references().blessed):
        env = {**os.environ, "MPIMATRIX_RESULTS": str(results)}
        out = subprocess.run([MPIMATRIX, "bless", "--tolerance", args.floor,
                              *(["--vary", args.vary] if args.vary else []),
                              *(["--include-disturbed"] if args.include_disturbed else []),
                              *[a for r in bless_reports
                                for a in ("--session", r["session_info"]["uuid"])]],
                             env=env, capture_output=True, text=True)
        if out.returncode != 0:  # without references every later verdict would be empty
            print(f"{out.stdout}{out.stderr}mpimatrix validate gate: bless failed (rc "
                  f"{out.returncode}); the sessions are in {results}: `--resume` after "
                  "fixing it", file=sys.stderr, flush=True)
            return out.returncode
        print("\n".join(ln for ln in out.stdout.splitlines()
                        if not ln.startswith("mpimatrix bless: left out")), flush=True)
    # the references bless wrote; the sessions blessed from are the first nights before
    experiment = Experiment(store.references(), tuple(bless_reports))
    tally = Tally({(f.partition, f.environ): f.spread
                   for f in floors.build_floors(experiment.references)})
    # each night run (or, resuming, read) when its turn comes; the watch rule skips the
    # nights other programs disturbed, as the live gate's does (read again each night)
    planned = scheduled_nights(store, args, stored[args.bless:], builds_of(bless_reports[0]),
                                 levels)
    for judged in experiment.judge(planned, disturbed=store.disturbed):
        n_run, what, injected = judged.tag
        tally.add(judged.night, injected, f"session {n_run}, {what}")
        print(f"# session {n_run} {what}: {time.time() - t0:.0f} s", flush=True)
    print("\n".join([*tally.log, *tally.lines()]))
    print(f"run time: {(time.time() - t0) / 60:.1f} min")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "values": {f"{k} {m}": v for (k, m), v in tally.values.items()},
            "whole_builds": {f"{k} {m}": v for (k, m), v in tally.builds.items()},
            "gated": {str(k): v for k, v in tally.gated.items()}, "hosts": tally.hosts,
            "nights": dict(tally.nights), "seconds": time.time() - t0, "log": tally.log},
            indent=1))
    return 0


def scheduled_nights(store: Store, args, stored: list[dict], builds: list[str],
                     levels: list[float]) -> Iterator[StoredNight]:
    """The experiment's nights after bless, each with its confirmations, tagged (its
    number, what was injected, (build, level) or None): the stored ones first where they
    fit the schedule (--resume), then each run when the loop asks for it."""
    for n_run, (i, injected) in enumerate(nights(args), 1):
        build, level, spec = scheduled(i, injected, builds, levels, args.inject_test)
        what = f"injected {build} +{level:.0%}" if injected else "unchanged"
        if stored:
            report = stored.pop(0)
            if injections(report) != ({(build, f"clock={level}")} if injected else set()):
                sys.exit(f"--resume: stored session {report['session_info']['uuid']} "
                         f"does not fit the schedule here ({what}); start a new store")
        else:
            report = run(store, args, inject=spec)
        yield StoredNight(report, store.confirmations(report["session_info"]["uuid"]),
                          (n_run, what, (build, level) if injected else None))


def record_only(store: Store, args, builds: list[str], levels: list[float], t0: float) -> int:
    for n_run, (i, injected) in enumerate(nights(args), 1):
        build, level, spec = scheduled(i, injected, builds, levels, args.inject_test)
        run(store, args, inject=spec, confirm=False)
        what = f"injected {build} +{level:.0%}" if injected else "unchanged"
        print(f"# session {n_run} {what}: "
              f"{time.time() - t0:.0f} s", flush=True)
    print(f"recorded in {store.path}: mpimatrix validate replay {store.path} "
          f"--passes 3 --settings ...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
