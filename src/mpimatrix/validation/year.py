"""A year of nightlies, generated from recorded real sessions and written into a results
store exactly as `mpimatrix run` stores a night, so that the real commands (`changes`,
`bless`, `report`, the nightly's judging, ReFrame's own listing) can be measured on it.

It writes:

    <store>/db/results.db           ReFrame's results database, written by ReFrame's own
                                    storage backend (the tables and the JSON it keeps)
    <store>/reports/nightly-*.json  the session's JSON report (mtime: the night's end)
    <store>/software/<id>.json      the software record the session names

Night n starts at --start + n days, 02:00 UTC. Build b is the recorded build b mod k (k
recorded builds) renamed `<build>-yNN` for the NNth copy (the original names for the
first). Its test cases are resampled: every pass of every test case is a copy of the same
test case drawn at random (seeded) from all passes of all recorded sessions, so each value
keeps its measured spread and the whole test case (values, curve, result) stays one
measurement. A step (`--step BUILD:NIGHT:FACTOR[:software]`) multiplies the times of that
build by FACTOR (and divides its rates) from that night on; with `software`, the build's
software record changes the same night (a Debian package version), as an update would.

Report files are written for the nights of the last day (and the newest night); nights
older than the retention rule (MPIMATRIX_KEEP_FULL, 7 days by default) are
written as `mpimatrix run` leaves them after its `mpimatrix prune`: in the session index
only. What it does not make: confirmation sessions (the gate decides those after a night) and
the machine's own state changes (every build at once)."""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import re
import sys
import time
import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path

from ..paths import project_root, results_dir
from ..results.sessions import SessionError, load_report, session_info, session_mode
from ..results.software_store import store_software, stored_software
from ..run import session_index
from ..run.prune import KEEP_ENV, REPORT_KEEP, retention
from .command import description

NIGHT = 86400.0
START_HOUR = 2 * 3600
#: the package a `software` step changes in the build's record (its Debian packages)
STEP_PACKAGE = "libmpimatrix-year-step"


@dataclass(frozen=True)
class Step:
    build: int  # index of the generated build
    night: int  # first night it holds (0-based)
    factor: float  # times x factor, rates / factor
    software: bool = False  # the build's software record changes that night too

    @classmethod
    def parse(cls, text: str) -> Step:
        parts = text.split(":")
        try:
            if len(parts) not in (3, 4) or (len(parts) == 4 and parts[3] != "software"):
                raise ValueError
            step = cls(int(parts[0]), int(parts[1]), float(parts[2]), len(parts) == 4)
        except ValueError:
            raise SessionError(f"--step {text!r}: write BUILD:NIGHT:FACTOR[:software], e.g. "
                               "3:200:1.10 (build 3 10 % slower from night 200 on)") from None
        if step.build < 0 or step.night < 0 or not step.factor > 0:
            raise SessionError(f"--step {text!r}: build and night count from 0 and the "
                               "factor is above 0")
        return step


@dataclass
class Recorded:
    """The recorded sessions a year is drawn from: each build's test cases by key, with
    every pass of every session as a sample."""

    info: dict  # session_info of the newest recording
    runs: int  # passes per session
    builds: list[str]  # environ names, in the order of the session's builds
    names: dict[str, str]  # environ name -> build name
    samples: dict[tuple[str, str], list[dict]]  # (environ, case name) -> test cases
    software: dict  # the newest recording's software record
    span: float  # seconds from a session's start to its end


def _builds_of(info: dict, cases: list[dict]) -> list[str]:
    listed = [b for b in str(info.get("builds") or "").split("+") if b]
    seen = {tc["environ"] for tc in cases if tc.get("environ")}
    return [b for b in listed if b in seen] + sorted(seen - set(listed))


def recorded(store: Path, mode: str) -> Recorded:
    """The sessions of `mode` the store's `mpimatrix run` kept (reports/), with their
    software record; an error naming the store when there is none."""
    files = sorted(f for f in (store / "reports").glob("*.json")
                   if not f.is_symlink() and not f.name.endswith("-confirm.json"))
    reports = [r for r in (load_report(f) for f in files)
               if session_mode(session_info(r)) == mode]
    if not reports:
        raise SessionError(f"{store}: no `mpimatrix run --mode {mode}` session in "
                           f"{store / 'reports'}: run one there first (MPIMATRIX_RESULTS="
                           f"{store} mpimatrix run --mode {mode}), or give --from a store "
                           "that has one")
    reports.sort(key=lambda r: r["session_info"].get("time_start_unix") or 0)
    newest = reports[-1]
    info = session_info(newest)
    samples: dict[tuple[str, str], list[dict]] = {}
    names: dict[str, str] = {}
    for r in reports:
        for run in r["runs"]:
            for tc in run["testcases"]:
                samples.setdefault((tc["environ"], tc["name"]), []).append(tc)
                if tc.get("build_name"):
                    names[tc["environ"]] = tc["build_name"]
    cases = [tc for run in newest["runs"] for tc in run["testcases"]]
    software = stored_software(str(info.get("software") or ""), store) or {}
    start = newest["session_info"].get("time_start_unix") or 0.0
    end = newest["session_info"].get("time_end_unix") or start
    return Recorded(newest["session_info"], len(newest["runs"]), _builds_of(info, cases),
                    names, samples, software, max(end - start, 1.0))


def _renamer(old: list[str], new: list[str]):
    """A function that copies a test case, renaming in every string each old name (a
    whole word of a name: not inside a longer one) to its new one."""
    mapping = {o: n for o, n in zip(old, new, strict=True) if o != n}
    if not mapping:
        return copy.deepcopy  # a copy all the same: the recorded samples are drawn again
    pattern = re.compile(r"(?<![\w.-])(" + "|".join(
        re.escape(o) for o in sorted(mapping, key=len, reverse=True)) + r")(?![\w.-])")

    def rename(value):
        if isinstance(value, str):
            return pattern.sub(lambda m: mapping[m.group(1)], value)
        if isinstance(value, list):
            return [rename(v) for v in value]
        if isinstance(value, dict):
            return {rename(k): rename(v) for k, v in value.items()}
        return value
    return rename


#: curve columns (suites/*/output.canonical_column) that are rates, and those that are
#: neither rates nor times; every other column is a time
_RATES = {"bandwidth", "message_rate", "bi_bandwidth"}
_NOT_SLOWED = {"size", "repetitions", "valid", "nprocs", "overlap", "iterations"}


def slow_case(tc: dict, factor: float, only: str | None = None) -> None:
    """Times x factor, rates / factor: the values, and the curve the report plots (`only`:
    that one performance variable, and not the curve). Not marked as the injector marks
    its runs: a step of a year is a real change (bless takes the nights after it, as it
    takes those after an update)."""
    info = tc.get("perf_info") or {}
    for key, entry in (tc.get("perfvalues") or {}).items():
        var = key.rsplit(":", 1)[-1]
        if only is not None and var != only:
            continue
        if isinstance(entry, list) and isinstance(entry[0], (int, float)):
            better = (info.get(var) or {}).get("better", "lower")
            entry[0] = entry[0] * factor if better == "lower" else entry[0] / factor
    if only is not None:
        return
    for points in (tc.get("curve") or {}).values():
        for p in points if isinstance(points, list) else []:
            for k, v in p.items():
                if isinstance(v, (int, float)) and k not in _NOT_SLOWED:
                    p[k] = v / factor if k in _RATES else v * factor


@dataclass
class Generated:
    builds: list[str]  # environ names of the generated builds
    sessions: int
    cases: int
    pruned: int  # nights older than the retention rule: in the session index only


class Year:
    """Writes the nights; `night(n)` is one session, stored as `mpimatrix run` stores it."""

    def __init__(self, source: Recorded, builds: int, steps: list[Step], seed: int,
                 start: float, store: Path):
        self.src, self.steps, self.start, self.store = source, steps, start, store
        self.rng = random.Random(seed)
        self.pruned = 0
        k = len(source.builds)
        self.origin = [source.builds[b % k] for b in range(builds)]
        self.envs = [e if b < k else f"{e}-y{b // k:02d}" for b, e in enumerate(self.origin)]
        self.renames = [_renamer([e, source.names.get(e, e)],
                                 [n, source.names.get(e, e) + n[len(e):]])
                        for e, n in zip(self.origin, self.envs, strict=True)]
        self.keys = {e: sorted(name for env, name in source.samples if env == e)
                     for e in source.builds}
        bad = [s for s in steps if s.build >= builds]
        if bad:
            raise SessionError(f"--step {bad[0].build}:{bad[0].night}:{bad[0].factor:g}: "
                               f"there are only {builds} builds (0 to {builds - 1})")

    def factor(self, build: int, night: int) -> float:
        f = 1.0
        for s in self.steps:
            if s.build == build and night >= s.night:
                f *= s.factor
        return f

    def software(self, night: int) -> dict:
        builds = self.src.software.get("builds") or {}
        out = {}
        for b, (origin, env) in enumerate(zip(self.origin, self.envs, strict=True)):
            name = self.src.names.get(origin, origin)
            entry = copy.deepcopy(builds.get(name) or {})
            changes = [s for s in self.steps if s.build == b and s.software and night >= s.night]
            if changes:
                entry.setdefault("debs", {})[STEP_PACKAGE] = f"1.0+night{changes[-1].night}"
            out[name + env[len(origin):]] = entry
        return {**self.src.software, "builds": out}

    def night(self, n: int) -> dict:
        start = self.start + n * NIGHT
        uuid = str(uuidlib.UUID(int=self.rng.getrandbits(128), version=4))
        runs = []
        for r in range(self.src.runs):
            cases = []
            for b, origin in enumerate(self.origin):
                factor = self.factor(b, n)
                for name in self.keys[origin]:
                    tc = self.renames[b](self.rng.choice(self.src.samples[(origin, name)]))
                    if factor != 1.0 and tc.get("perfvalues"):
                        slow_case(tc, factor)
                    done = tc.get("job_completion_time_unix")
                    if isinstance(done, (int, float)):
                        rel = (done - (self.src.info.get("time_start_unix") or done))
                        tc["job_completion_time_unix"] = start + rel % self.src.span
                    tc["uuid"] = f"{uuid}:{r}:{len(cases)}"
                    if "session_uuid" in tc:
                        tc["session_uuid"] = uuid
                    cases.append(tc)
            runs.append({"num_cases": len(cases), "num_failures": sum(
                tc.get("result") == "fail" for tc in cases), "runid": r, "testcases": cases})
        info = copy.deepcopy(self.src.info)
        extras = {"builds": "+".join(self.envs), "mode": "nightly",
                  "software": store_software(self.software(n), [], self.store)}
        for where in (info, info.get("extras")):
            if isinstance(where, dict):
                where.pop("confirms", None)
                where.update(extras)
        info.update(uuid=uuid, time_start_unix=start, time_end_unix=start + self.src.span,
                    time_start=time.strftime("%Y%m%dT%H%M%S+0000", time.gmtime(start)),
                    time_end=time.strftime("%Y%m%dT%H%M%S+0000",
                                           time.gmtime(start + self.src.span)),
                    num_cases=sum(len(r["testcases"]) for r in runs),
                    num_failures=sum(r["num_failures"] for r in runs))
        return {"session_info": info, "runs": runs}


def reframe_storage():
    """ReFrame's own results storage, for the database RFM_SQLITE_DB_FILE names (ReFrame's
    runtime set up from the project's configuration, as `reframe` sets it up)."""
    import reframe.core.config as config
    import reframe.core.runtime as rt
    from reframe.frontend.reporting.storage import StorageBackend

    site = config.load_config(str(project_root() / "site_config" / "reframe_config.py"))
    site.select_subconfig("local")
    rt.init_runtime(site)
    return StorageBackend.default()


def generate(source: Recorded, nights: int, builds: int, steps: list[Step], store: Path,
             seed: int = 1, start: float | None = None, progress=None) -> Generated:
    """Write `nights` sessions of `builds` builds into `store`, as `mpimatrix run` does.
    One store per process: ReFrame's runtime, which names the database, is set up once."""
    if start is None:  # the year ends last night
        today = time.time() // NIGHT * NIGHT
        start = today - nights * NIGHT + START_HOUR
    year = Year(source, builds, steps, seed, start, store)
    os.environ["RFM_SQLITE_DB_FILE"] = str(store / "db" / "results.db")
    storage = reframe_storage()
    reports = store / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    keep = retention()
    cutoff = time.time() - keep if keep is not None else float("-inf")
    cases = 0
    # newest night first: a store cut short (or measured while it grows, as the benchmark
    # does) holds the most recent nights, which the commands' periods (--since 7d) read
    for done, n in enumerate(reversed(range(nights)), 1):
        session = year.night(n)
        info = session["session_info"]
        cases += info["num_cases"]
        session_index.add([session])  # as `mpimatrix run` indexes the night it stored
        if info["time_start_unix"] < cutoff:
            # what `mpimatrix run`'s retention rule leaves of a night this old: its values
            # in the session index, no full copy
            year.pruned += 1
        else:
            path = reports / (f"nightly-{info['time_start'][:15]}-{info['uuid'][:6]}.json")
            if keep is None or done == 1 or info["time_end_unix"] >= time.time() - REPORT_KEEP:
                path.write_text(json.dumps(session))
                os.utime(path, (info["time_end_unix"], info["time_end_unix"]))
            storage.store(session, str(path))
        if progress:
            progress(done, nights)
    return Generated(year.envs, nights, cases, year.pruned)


def main(argv=None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog, description=description(__doc__))
    p.add_argument("--nights", type=int, default=365, help="nights to write (default 365)")
    p.add_argument("--builds", type=int, default=40, help="builds per night (default 40)")
    p.add_argument("--results", type=Path, required=True,
                   help="the results store to write (new or empty)")
    p.add_argument("--from", dest="source", type=Path, default=None,
                   help="the results store whose recorded nightly sessions are drawn from "
                   "(default: the project's, MPIMATRIX_RESULTS)")
    p.add_argument("--mode", default="nightly", help="the recorded sessions' mode (nightly)")
    p.add_argument("--step", action="append", default=[], metavar="BUILD:NIGHT:FACTOR",
                   help="build BUILD (0-based) FACTOR times slower from night NIGHT on; "
                   "`:software` also changes its software record (repeatable)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    args = p.parse_args(argv)
    try:
        if args.nights < 1 or args.builds < 1:
            raise SessionError("--nights and --builds are 1 or more")
        steps = [Step.parse(s) for s in args.step]
        if (args.results / "db" / "results.db").exists() or any(
                (args.results / "reports").glob("*.json")):
            raise SessionError(f"{args.results} already holds sessions: give a new folder "
                               "(the year is written from night 0)")
        source = recorded((args.source or results_dir()).resolve(), args.mode)
        args.results.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        done = generate(source, args.nights, args.builds, steps, args.results.resolve(),
                        args.seed)
    except SessionError as err:
        print(f"{prog or 'year'}: {err}", file=sys.stderr)
        return 2
    size = sum(f.stat().st_size for f in args.results.rglob("*") if f.is_file())
    print(f"{args.results}: {done.sessions} nights of {len(done.builds)} builds "
          f"({source.runs} passes, {done.cases} test cases) in {time.monotonic() - t0:.0f} s; "
          f"{size / 1e6:.1f} MB; {done.pruned} night(s) older than the retention rule "
          f"({KEEP_ENV}) only in the session index")
    return 0
