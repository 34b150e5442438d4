#!/usr/bin/env python3
"""A year of nightlies: how the store and the commands that read it grow with the nights
and the builds (the commands themselves, run as a site runs them, on a generated store).

For each number of builds, `mpimatrix validate year` writes nights into a new store,
newest first, and at each checkpoint (1, 30, 90, 365 nights stored) this measures:
  - the store's size (ReFrame's database, the JSON reports, the software records);
  - wall time and peak memory (the process and its children: ReFrame, drawing workers) of
      bless     `mpimatrix bless --since 7d --mode nightly --replace`
      judge     the nightly's judging after its ReFrame part (run/session.judge_report on
                the newest night, no confirmation runs)
      changes   `mpimatrix changes --dry-run` (30 days)
      report    `mpimatrix report --html --since 14d`
      diff      `mpimatrix diff` of the two newest nights
      list      `reframe --list-stored-sessions=all` on the store's database
Prints one table row per checkpoint and command; --json keeps the figures.
Runs serially: the commands measure each other when run together.

    .venv/bin/python measure/year_of_nights.py --from STORE --builds 5,40
    .venv/bin/python measure/year_of_nights.py --from STORE --builds 5 --nights 1,30 --json f.json
    .venv/bin/python measure/year_of_nights.py --store RESULTS   (a store as it is)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
JUDGE = ("import sys; from pathlib import Path; "
         "from mpimatrix.run.session import judge_report; "
         "sys.exit(judge_report(Path(sys.argv[1]), 'nightly', 0, []))")


def commands(store: Path, newest: list[Path]) -> dict[str, list[str]]:
    with sqlite3.connect(store / "db" / "sessions-index.db") as conn:
        uuids = [u for (u,) in conn.execute("SELECT uuid FROM sessions WHERE confirms = '' "
                                            "ORDER BY start DESC LIMIT 2")]
    out = {
        "bless": [str(BIN / "mpimatrix"), "bless", "--since", "7d", "--mode", "nightly",
                  "--replace"],
        "judge": [str(BIN / "python"), "-c", JUDGE, str(newest[0])],
        "changes": [str(BIN / "mpimatrix"), "changes", "--dry-run"],
        "report": [str(BIN / "mpimatrix"), "report", "--html", "--since", "14d",
                   "--name", "year", "--output-dir", str(store / "html")],
        "list": [str(BIN / "reframe"), "-C", str(ROOT / "site_config" / "reframe_config.py"),
                 "--list-stored-sessions=all"],
    }
    if len(uuids) > 1:
        out["diff"] = [str(BIN / "mpimatrix"), "diff", uuids[1], uuids[0]]
    return out


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall s, peak RSS GB of the process or any child, exit code)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    err = proc.stderr.read() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1, 4):
        print(f"  {cmd[1] if len(cmd) > 1 else cmd[0]}: exit {proc.returncode}: "
              f"{err.strip().splitlines()[-1:] }", file=sys.stderr)
    # ru_maxrss of wait4 is the largest of the process and its waited-for descendants
    return wall, usage.ru_maxrss / 1e6, proc.returncode


def sizes(store: Path) -> dict[str, int]:
    def total(p: Path) -> int:
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.exists() else 0
    index = store / "db" / "sessions-index.db"
    kept = index.stat().st_size if index.exists() else 0
    return {"db": total(store / "db") - kept, "index": kept,
            "reports": total(store / "reports"), "software": total(store / "software")}


def newest_reports(store: Path) -> list[Path]:
    files = [p for p in (store / "reports").glob("nightly-*.json") if not p.is_symlink()]
    return sorted(files, key=lambda p: p.stat().st_mtime, reverse=True)[:1]


def measure(source: Path, mode: str, builds: int, checkpoints: list[int], work: Path,
            seed: int) -> list[dict]:
    from mpimatrix.validation.api import generate_year, recorded_nightly

    store = work / f"b{builds}"
    shutil.rmtree(store, ignore_errors=True)
    store.mkdir(parents=True)
    rec = recorded_nightly(source, mode)
    rows: list[dict] = []

    def at(done: int, nights: int) -> None:
        if done in checkpoints:
            rows.append(measure_store(store, builds, done, time.monotonic() - t0))

    t0 = time.monotonic()
    generate_year(rec, max(checkpoints), builds, [], store, seed=seed, progress=at)
    return rows


def measure_store(store: Path, builds: int, nights: int, generated: float = 0.0) -> dict:
    """One row: the store's size and each command's time and peak memory on it."""
    env = {**os.environ, "MPIMATRIX_RESULTS": str(store),
           "RFM_SQLITE_DB_FILE": str(store / "db" / "results.db")}
    env.pop("MPIMATRIX_INJECT", None)
    row = {"builds": builds, "nights": nights, "generate_s": round(generated, 1),
           **sizes(store)}
    for name, cmd in commands(store, newest_reports(store)).items():
        wall, rss, rc = timed(cmd, env)
        row[name] = {"s": round(wall, 2), "gb": round(rss, 3), "rc": rc}
    print_row(row)
    return row


def stored_nights(store: Path) -> tuple[int, int]:
    """(nights in the store's session index, builds of its newest night)."""
    with sqlite3.connect(store / "db" / "sessions-index.db") as conn:
        nights = conn.execute("SELECT count(*) FROM sessions WHERE confirms = ''").fetchone()[0]
    info = json.loads(newest_reports(store)[0].read_text())["session_info"]
    return nights, len([b for b in (info.get("builds") or "").split("+") if b])


COLUMNS = ("judge", "changes", "bless", "report", "diff", "list")


def print_row(row: dict) -> None:
    mb = (row["db"] + row["index"] + row["reports"] + row["software"]) / 1e6
    cells = []
    for c in COLUMNS:
        f = row.get(c)
        cells.append(f"{f['s']:6.1f} s {f['gb']:5.2f} GB" + ("" if f["rc"] in (0, 1, 4)
                     else f" rc{f['rc']}") if f else "-")
    print(f"| {row['builds']:3d} | {row['nights']:4d} | {mb:8.0f} MB "
          f"(ReFrame {row['db'] / 1e6:.0f}, index {row['index'] / 1e6:.0f}, reports "
          f"{row['reports'] / 1e6:.0f}) | "
          + " | ".join(cells) + " |", flush=True)


def plot(rows: list[dict], path: Path) -> None:
    """Time and peak memory of each command, and the store's size, against the nights
    stored: one line per command, solid for the most builds, dashed for the fewest (the
    report's figure style)."""
    from mpimatrix.validation.api import PALETTE, figure_grid, legend_below, log_y, plain_log

    builds = sorted({r["builds"] for r in rows})
    names = [c for c in COLUMNS if any(c in r for r in rows)]
    labels = [*names, "store"]
    fig, axes = figure_grid(1, 3, 3.2, 2.4,
                            legend=[f"{n}, {b} builds" for n in labels for b in builds])
    (ax_t, ax_m, ax_s) = axes[0]
    for i, name in enumerate(names):
        for b in builds:
            pts = [(r["nights"], r[name]) for r in rows if r["builds"] == b and name in r]
            style = "-" if b == builds[-1] else "--"
            kw = {"color": PALETTE[i % len(PALETTE)], "linestyle": style, "marker": "o",
                  "markersize": 3, "label": f"{name}, {b} builds"}
            ax_t.plot([n for n, _ in pts], [f["s"] for _, f in pts], **kw)
            ax_m.plot([n for n, _ in pts], [f["gb"] for _, f in pts], **kw)
    for b in builds:
        pts = [(r["nights"], (r["db"] + r.get("index", 0) + r["reports"] + r["software"]) / 1e9)
               for r in rows if r["builds"] == b]
        ax_s.plot([n for n, _ in pts], [g for _, g in pts], color="black", marker="o",
                  markersize=3, linestyle="-" if b == builds[-1] else "--",
                  label=f"store, {b} builds")
    for ax, title, unit in ((ax_t, "time", "s"), (ax_m, "peak memory", "GB"),
                            (ax_s, "store size", "GB")):
        ax.set_title(title)
        ax.set_xlabel("nights stored")
        ax.set_ylabel(unit)
        ax.set_xscale("log")
        plain_log(ax.xaxis)
        log_y(ax, [y for line in ax.get_lines() for y in line.get_ydata()])
    legend_below(fig, axes[0])
    fig.savefig(path, dpi=fig.dpi)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="source", type=Path,
                    help="a results store with a recorded `mpimatrix run --mode nightly`")
    ap.add_argument("--store", type=Path, help="measure the commands on this store as it "
                    "is (generated before, or a site's own) instead of generating one")
    ap.add_argument("--mode", default="nightly", help="the recorded sessions' mode")
    ap.add_argument("--builds", default="5,40", help="builds per night, comma-separated")
    ap.add_argument("--nights", default="1,30,90,365", help="checkpoints, comma-separated")
    ap.add_argument("--work", type=Path, help="where the stores go (default: a temporary "
                    "folder, removed at the end)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--plot", type=Path, help="draw them into this PNG")
    ap.add_argument("--no-header", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    checkpoints = sorted(int(n) for n in args.nights.split(","))
    work = args.work or Path(tempfile.mkdtemp(prefix="year-"))
    if not args.no_header:
        print(f"store: {work}; commands run serially, one at a time\n", flush=True)
        print("| builds | nights | store | " + " | ".join(COLUMNS) + " |")
        print("|---|---|---|" + "---|" * len(COLUMNS), flush=True)
    rows: list[dict] = []
    builds = [int(x) for x in args.builds.split(",")]
    if args.store:
        nights, found = stored_nights(args.store)
        rows = [measure_store(args.store.resolve(), found, nights)]
        builds = []
    elif args.source is None:
        ap.error("give --from STORE (a recorded nightly to generate from) or --store STORE")
    try:
        if len(builds) == 1:
            rows = measure(args.source.resolve(), args.mode, builds[0], checkpoints, work,
                           args.seed)
        for b in builds if len(builds) > 1 else []:
            # one process per store: ReFrame's runtime (and its database) is set up once
            # per process
            part = work / f"b{b}.json"
            subprocess.run([sys.executable, __file__, "--from", str(args.source), "--mode",
                            args.mode, "--builds", str(b), "--nights", args.nights,
                            "--work", str(work), "--seed", str(args.seed), "--json",
                            str(part), "--no-header"], check=True)
            rows += json.loads(part.read_text())
    finally:
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
        if args.plot and rows:
            plot(rows, args.plot)
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
