#!/usr/bin/env python3
"""Run-to-run spread of the quick catalogue per launch variant, sessions interleaved.

Runs K sessions per variant through the real command line (`mpimatrix run --mode
quick`), interleaving the variants in ABBA order (A B B A A B ...) so that slow and
fast phases of the host hit every variant alike, and prints per variant:

  * rCV: median over all performance values of the robust coefficient of variation
    over sessions, 1.4826 * MAD / median;
  * >1.3: the share of values whose max/min over the sessions exceeds 1.3;
  * slow: the share of (value, session) pairs more than 1.3 times worse than the
    value's median over all sessions of all variants (the "slow mode");
  * the total and mean session run time, and failed test cases.

and per session its host context: load average and busiest processes before it;
during it, the CPU seconds used by other processes ("foreign": another user's job
alongside disturbs the whole session), steal time and free memory handed back to
the host (free page reporting); and (with --c2c) a CPU0<->CPU1 cache-line round
trip measured just before it, which tells the host's vCPU
placement phase apart from what the suite does.

A variant is NAME or NAME:ITEM,ITEM,...; an ITEM is VAR=VALUE, an environment variable
for that session's `mpimatrix run` (the suite's experiment knob
MPIMATRIX_CPU_BINDING=none|core, or RFM_* variables of ReFrame), or -S [TEST.]VAR=VALUE,
a ReFrame variable of the checks, passed to ReFrame as `-S` (ImbCheck.iterations='-iter
200 -time 1' replaces IMB's -iter/-time). Only the ReFrame JSON report format is relied on:
runs[].testcases[] with perfvalues {"sys:part:var": [value, ref, lower, upper,
unit, result]}, environ, display_name, result.

    .venv/bin/python measure/noise_sources.py -k 6 --c2c \\
        --variant now --variant unbound:MPIMATRIX_CPU_BINDING=none \\
        --variant before:'MPIMATRIX_CPU_BINDING=none,-S ImbCheck.iterations=-iter 200 -time 1'
    .venv/bin/python measure/noise_sources.py --from-json results/noise/noise-X.json --detail
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from host_context import build_c2c, busiest, cpu_ticks, reported_kib, run_c2c

ROOT = Path(__file__).resolve().parents[1]
HIGHER_IS_BETTER_UNITS = {"MB/s", "%", "GB/s", "msg/s"}
SLOW = 1.3

# -- sessions ----------------------------------------------------------------------------------
class Variant(NamedTuple):
    name: str
    env: dict[str, str]  # environment variables of the session's `mpimatrix run`
    setvars: list[str]  # ReFrame variables: [TEST.]VAR=VALUE, each passed as -S


def parse_variant(spec: str) -> Variant:
    name, _, rest = spec.partition(":")
    env, setvars = {}, []
    # a comma starts the next item only when what follows looks like NAME= or -S
    for item in filter(None, re.split(r",(?=[A-Z_][A-Z0-9_]*=|-S)", rest)):
        setvar = item.startswith("-S")
        key, sep, value = (item[2:].strip() if setvar else item).partition("=")
        if not sep or not key:
            raise SystemExit(f"noise_sources: bad variant {spec!r} (want "
                             "NAME:VAR=VALUE,-S TEST.VAR=VALUE,...)")
        if setvar:
            setvars.append(f"{key}={value}")
        else:
            env[key] = value
    return Variant(name, env, setvars)


def interleaved(names: list[str], k: int) -> list[str]:
    """ABBA order: A B | B A | A B ... (each variant k times)."""
    order = []
    for i in range(k):
        order += names if i % 2 == 0 else names[::-1]
    return order


def mpimatrix_exe(arg: str | None) -> str:
    if arg:
        return arg
    local = Path(sys.executable).parent / "mpimatrix"
    return str(local) if local.exists() else (shutil.which("mpimatrix") or "mpimatrix")


def run_session(exe: str, mode: str, variant: Variant, only: list[str],
                rfm_args: list[str], out_dir: Path, c2c: Path | None, index: int) -> dict:
    name, env_extra, setvars = variant
    report = out_dir / f"session-{index:03d}-{name}.json"
    cmd = [exe, "run", "--mode", mode, *(a for o in only for a in ("--only", o)),
           "--", "--report-file", str(report), *rfm_args,
           *(a for v in setvars for a in ("-S", v))]
    ctx = {"load": Path("/proc/loadavg").read_text().split()[0], "busiest": busiest(),
           "c2c_ns": run_c2c(c2c)}
    ticks0, rep0, t0 = cpu_ticks(), reported_kib(), time.monotonic()
    own0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, env={**os.environ, **env_extra}, capture_output=True, text=True,
                          check=False)
    wall = time.monotonic() - t0
    ticks1, rep1 = cpu_ticks(), reported_kib()
    own1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    hz = os.sysconf("SC_CLK_TCK")
    busy = sum(ticks1[k] - ticks0[k] for k in ("user", "nice", "system", "irq", "softirq"))
    own = (own1.ru_utime + own1.ru_stime) - (own0.ru_utime + own0.ru_stime)
    (out_dir / f"session-{index:03d}-{name}.log").write_text(proc.stdout + proc.stderr)
    if not report.exists():  # fall back to the report the CLI names
        m = re.findall(r"^report: (\S+)", proc.stdout, re.M)
        report = Path(m[-1]) if m else report
    values, failed = read_report(report) if report.exists() else ({}, -1)
    total = sum(ticks1[k] - ticks0[k] for k in ticks0) or 1
    return {"variant": name, "env": env_extra, "setvars": setvars, "index": index,
            "rc": proc.returncode, "wall_s": round(wall, 2), "report": str(report),
            "failed": failed,
            "steal_pct": round(100 * (ticks1["steal"] - ticks0["steal"]) / total, 2),
            # CPU seconds used on this machine by anything but this session: another
            # user's job running alongside disturbs every value of the session.
            "foreign_cpu_s": round(max(busy / hz - own, 0.0), 1),
            "reported_mib": None if rep0 is None else round((rep1 - rep0) / 1024),
            **ctx, "values": values}


def test_key(tc: dict) -> str:
    name = tc.get("display_name") or tc.get("name", "?")
    name = re.sub(r"\s*/[0-9a-f]{8}$", "", name)
    name = re.sub(r"\s*%\.repeat_no=\d+", "", name)
    return f"{tc.get('environ', '?')} {name}"


def read_report(path: Path) -> tuple[dict[str, list], int]:
    """{"<environ> <test> <var>": [value, unit]} (median over the report's runs), failures."""
    data = json.loads(path.read_text())
    acc: dict[str, list[float]] = defaultdict(list)
    units: dict[str, str] = {}
    failed = 0
    for run in data.get("runs", []):
        for tc in run.get("testcases", []):
            if tc.get("result") not in ("pass", "success"):
                failed += 1
            for fullvar, pv in (tc.get("perfvalues") or {}).items():
                if not pv or pv[0] is None:
                    continue
                key = f"{test_key(tc)} {fullvar.rsplit(':', 1)[-1]}"
                acc[key].append(float(pv[0]))
                units[key] = pv[4] if len(pv) > 4 else ""
    return {k: [statistics.median(v), units[k]] for k, v in acc.items()}, failed


# -- statistics --------------------------------------------------------------------------------
def robust_cv(vals: list[float]) -> float:
    med = statistics.median(vals)
    mad = statistics.median(abs(v - med) for v in vals)
    return 1.4826 * mad / med if med else float("nan")


def badness(value: float, ref: float, unit: str) -> float:
    """How many times worse than ref (>1 worse)."""
    if value <= 0 or ref <= 0:
        return 1.0
    return ref / value if unit in HIGHER_IS_BETTER_UNITS else value / ref


def analyse(sessions: list[dict], detail: bool = False, by_build: bool = False) -> None:
    variants = list(dict.fromkeys(s["variant"] for s in sessions))
    pooled: dict[str, list[float]] = defaultdict(list)
    units: dict[str, str] = {}
    for s in sessions:
        for key, (v, unit) in s["values"].items():
            pooled[key].append(v)
            units[key] = unit
    pooled_med = {k: statistics.median(v) for k, v in pooled.items()}

    print("\n# sessions (order run; slow = share of values >1.3x worse than pooled median; "
          "c2c = CPU0<->CPU1 round trip before the session)")
    print(f"{'#':>3} {'variant':14} {'wall s':>7} {'fail':>4} {'slow':>6} {'worse':>6} "
          f"{'c2c ns':>7} {'steal%':>6} {'rep MiB':>7} {'foreign':>7} {'load':>5}  busiest before")
    for s in sessions:
        bad = [badness(v, pooled_med[k], u) for k, (v, u) in s["values"].items()]
        s["slow_share"] = sum(b > SLOW for b in bad) / len(bad) if bad else float("nan")
        s["worse"] = statistics.median(bad) if bad else float("nan")
        c2c = f"{s['c2c_ns']:.0f}" if s.get("c2c_ns") else "-"
        print(f"{s['index']:>3} {s['variant']:14} {s['wall_s']:>7.1f} {s['failed']:>4} "
              f"{s['slow_share']:>6.0%} {s['worse']:>6.2f} {c2c:>7} {s['steal_pct']:>6.2f} "
              f"{s.get('reported_mib') if s.get('reported_mib') is not None else '-':>7} "
              f"{s.get('foreign_cpu_s', '-'):>7} "
              f"{s['load']:>5}  {'; '.join(s['busiest'][:2])}")

    def summary(sel: list[dict], keys_filter=lambda k: True) -> dict:
        per: dict[str, list[float]] = defaultdict(list)
        for s in sel:
            for k, (v, _u) in s["values"].items():
                if keys_filter(k):
                    per[k].append(v)
        per = {k: v for k, v in per.items() if len(v) >= 2}
        if not per:
            return {}
        rcvs = sorted(c for c in (robust_cv(v) for v in per.values()) if c == c)  # no NaN
        ratios = [max(v) / min(v) if min(v) > 0 else float("inf") for v in per.values()]
        slow = [badness(x, pooled_med[k], units[k]) > SLOW for k, v in per.items() for x in v]
        return {"n_values": len(per), "sessions": len(sel),
                "rcv": statistics.median(rcvs), "rcv_p90": rcvs[int(0.9 * len(rcvs))],
                "gt13": sum(r > SLOW for r in ratios) / len(ratios),
                "slow": sum(slow) / len(slow)}

    print(f"\n# per variant: rCV = median over values of 1.4826*MAD/median; >1.3 = share of "
          f"values with max/min > 1.3; slow = share of (value, session) > {SLOW}x worse than "
          "the pooled median")
    print(f"{'variant':14} {'sess':>4} {'values':>6} {'rCV':>6} {'rCVp90':>7} {'>1.3':>6} "
          f"{'slow':>6} {'wall s tot':>10} {'mean':>6} {'fail':>4}  env")
    for name in variants:
        sel = [s for s in sessions if s["variant"] == name]
        sm = summary(sel)
        walls = [s["wall_s"] for s in sel]
        if not sm:
            print(f"{name:14} {len(sel):>4}  (fewer than 2 sessions with values)")
            continue
        env = ",".join([*(f"{k}={v}" for k, v in sel[0]["env"].items()),
                        *(f"-S {v}" for v in sel[0].get("setvars", []))]) or "-"
        print(f"{name:14} {sm['sessions']:>4} {sm['n_values']:>6} {sm['rcv']:>6.1%} "
              f"{sm['rcv_p90']:>7.1%} {sm['gt13']:>6.0%} {sm['slow']:>6.1%} {sum(walls):>10.0f} "
              f"{statistics.fmean(walls):>6.1f} {sum(max(s['failed'], 0) for s in sel):>4}  {env}")

    if by_build:
        builds = sorted({k.split()[0] for k in pooled})
        print("\n# per variant and build: rCV / >1.3 / slow")
        for name in variants:
            sel = [s for s in sessions if s["variant"] == name]
            cells = []
            for b in builds:
                sm = summary(sel, lambda k, b=b: k.split()[0] == b)
                if sm:
                    cells.append(f"{b}: {sm['rcv']:.1%} / {sm['gt13']:.0%} / {sm['slow']:.0%}")
            print(f"{name:14} " + "   ".join(cells))

    if detail:
        print("\n# per value: median, rCV, max/min per variant; values in session order")
        for key in sorted(pooled):
            print(key, f"[{units[key]}]")
            for name in variants:
                vals = [s["values"][key][0] for s in sessions
                        if s["variant"] == name and key in s["values"]]
                if vals:
                    ratio = max(vals) / min(vals) if min(vals) > 0 else float("inf")
                    print(f"   {name:14} med {statistics.median(vals):<9.4g} "
                          f"rCV {robust_cv(vals):6.1%} max/min {ratio:5.2f}  "
                          + " ".join(f"{v:.3g}" for v in vals))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[2:]))
    p.add_argument("--variant", action="append", default=[],
                   help="NAME[:VAR=VALUE,-S TEST.VAR=VALUE,...] (repeatable; default: baseline and "
                        "unbound:MPIMATRIX_CPU_BINDING=none)")
    p.add_argument("-k", "--sessions", type=int, default=6, help="sessions per variant (6)")
    p.add_argument("--mode", default="quick", help="mpimatrix run --mode (quick)")
    p.add_argument("--only", action="append", default=[], help="mpimatrix run --only REGEX")
    p.add_argument("--mpimatrix", help="the mpimatrix executable (default: next to python)")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "noise",
                   help="where session reports, logs and the JSON summary go")
    p.add_argument("--c2c", action="store_true",
                   help="measure a CPU0<->CPU1 cache-line round trip before each session")
    p.add_argument("--from-json", type=Path, action="append", default=[],
                   help="analyse the sessions of earlier runs of this script instead")
    p.add_argument("--exclude", default="",
                   help="session numbers (#) to leave out of the analysis, e.g. 17,18 (disturbed)")
    p.add_argument("--max-foreign", type=float, default=None,
                   help="leave out sessions during which other processes used more CPU seconds")
    p.add_argument("--detail", action="store_true", help="print every value per variant")
    p.add_argument("--by-build", action="store_true", help="print the spread per build too")
    p.add_argument("rfm_args", nargs=argparse.REMAINDER, help="-- further ReFrame options")
    args = p.parse_args(argv)
    rfm_args = args.rfm_args[1:] if args.rfm_args[:1] == ["--"] else args.rfm_args

    if args.from_json:
        sessions = [s for f in args.from_json for s in json.loads(f.read_text())["sessions"]]
        skip = {int(x) for x in args.exclude.split(",") if x}
        sessions = [s for s in sessions if s["index"] not in skip and (
            args.max_foreign is None or s.get("foreign_cpu_s", 0) <= args.max_foreign)]
        analyse(sessions, args.detail, args.by_build)
        return 0

    variants = [parse_variant(v) for v in args.variant or
                ["now", "unbound:MPIMATRIX_CPU_BINDING=none"]]
    if len({v.name for v in variants}) != len(variants):
        raise SystemExit("noise_sources: variant names must differ")
    stamp = time.strftime("%Y%m%dT%H%M%S")
    out_dir = args.out / f"noise-{stamp}"
    out_dir.mkdir(parents=True, exist_ok=True)
    c2c = build_c2c(Path(tempfile.mkdtemp(prefix="c2c-", dir=out_dir))) if args.c2c else None
    exe = mpimatrix_exe(args.mpimatrix)
    by_name = {v.name: v for v in variants}
    sessions = []
    order = interleaved([v.name for v in variants], args.sessions)
    for i, name in enumerate(order):
        s = run_session(exe, args.mode, by_name[name], args.only, rfm_args, out_dir, c2c, i)
        sessions.append(s)
        print(f"[{i + 1}/{len(order)}] {name}: {s['wall_s']:.0f} s, rc={s['rc']}, "
              f"{len(s['values'])} values, {s['failed']} failed, c2c={s['c2c_ns']}, "
              f"steal={s['steal_pct']}%, load={s['load']}", flush=True)
        (out_dir / "sessions.json").write_text(json.dumps({"sessions": sessions}, indent=1))
    analyse(sessions, args.detail, args.by_build)
    print(f"\nsessions: {out_dir / 'sessions.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
