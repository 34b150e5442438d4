#!/usr/bin/env python3
"""Concretization time of the project's spack.yaml (a performance figure).

Copies the environment (spack.yaml, links to packages/, site_config/ and the
machine-local .cache/spack parts) into a scratch directory and runs
`spack -v -e <copy> concretize -f` there, so the project's own spack.lock is never
touched. Each run prints the solve time of every root (Spack's own per-root timing,
setup + ground + solve in its worker), the total wall time, the peak memory (the
largest process, and the sum over Spack's processes at any one time), the load
average before and after, and the busiest processes of the machine before it
started: figures taken under load overstate, so every run says how busy it was.

    .venv/bin/python measure/concretize_time.py                     # cold, then warm
    .venv/bin/python measure/concretize_time.py --runs cold,warm,warm,cold,warm
    .venv/bin/python measure/concretize_time.py --runs cold --fresh-indexes
    .venv/bin/python measure/concretize_time.py \
        --spec 'mpimatrix-benchmarks %%c,cxx=gcc ^mpich@4.0.2'

cold  = an empty concretization cache (concretizer:concretization_cache:url set to a
        new directory): every root is solved; Spack's package indexes (built once per
        Spack and package-repository checkout) are built first and timed apart.
warm  = the cache the previous run of this invocation filled: `concretize -f` again,
        what re-concretizing an unchanged matrix costs.
--fresh-indexes: cold also with a new user cache (SPACK_USER_CACHE_PATH), i.e.
        Spack's package indexes rebuilt inside the timed run (a first use of Spack).

Needs Spack 1.x (SPACK_ROOT or PATH) and MPIMATRIX_SPACK_SITE (default debian-local,
whose shims `mpimatrix spack setup` makes first).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

from mpimatrix.validation.api import (
    SPACK_SITE_ENV,
    find_spack,
    spack_env_copy,
    spack_version,
    write_shims,
)

#: Spack's verbose per-root line: "==>   12.3s [ 50%] abcdefg <root spec>"
ROOT_LINE = re.compile(r"^(?:==>)?\s*([\d.]+)s \[\s*\d+%\]\s+(\w{7})\s+(.*)$")


class PeakRss(threading.Thread):
    """Samples a process tree: RSS of the largest process and largest sum (MB), and the
    CPU time of each process (Spack's pool starts one worker process per root)."""

    def __init__(self, pid: int, every: float = 0.5):
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.max_one = self.max_sum = 0.0
        self.cpu: dict[int, float] = {}
        self.done = threading.Event()

    def run(self):
        page_mb = os.sysconf("SC_PAGE_SIZE") / 2**20
        tick = os.sysconf("SC_CLK_TCK")
        while not self.done.wait(self.every):
            children: dict[int, list[int]] = {}
            rss: dict[int, float] = {}
            cpu: dict[int, float] = {}
            for d in os.listdir("/proc"):
                if not d.isdigit():
                    continue
                try:
                    stat = Path(f"/proc/{d}/stat").read_text()
                except OSError:
                    continue
                fields = stat.rpartition(")")[2].split()
                children.setdefault(int(fields[1]), []).append(int(d))
                rss[int(d)] = int(fields[21]) * page_mb
                cpu[int(d)] = (int(fields[11]) + int(fields[12])) / tick
            tree, todo = [], [self.pid]
            while todo:
                p = todo.pop()
                tree.append(p)
                todo.extend(children.get(p, []))
            for p in tree[1:]:
                self.cpu[p] = max(self.cpu.get(p, 0.0), cpu.get(p, 0.0))
            sizes = [rss.get(p, 0.0) for p in tree]
            self.max_one = max(self.max_one, *sizes)
            self.max_sum = max(self.max_sum, sum(sizes))


def busiest(n: int = 5) -> str:
    """The processes using the most CPU now (top's second frame: the last second)."""
    out = subprocess.run(["top", "-b", "-n", "2", "-d", "1", "-w", "200"],
                         capture_output=True, text=True).stdout
    frame = out.split("\ntop - ")[-1].splitlines()
    head = next((i for i, line in enumerate(frame) if line.split()[:1] == ["PID"]), None)
    if head is None:
        return "?"
    rows = [line.split() for line in frame[head + 1:] if line.strip()]
    return ", ".join(f"{r[11]} {r[8]}%" for r in rows[:n] if len(r) > 11)


def set_concretizer(env_dir: Path, cache: Path, overrides: list[str]) -> dict:
    """The copy's concretizer section: the cache directory, and KEY[:SUB]=VALUE
    overrides (VALUE in YAML; `-` removes the key, i.e. Spack's default)."""
    manifest = yaml.safe_load((env_dir / "spack.yaml").read_text())
    conc = manifest["spack"].setdefault("concretizer", {})
    conc["concretization_cache"] = {"enable": True, "url": str(cache)}
    for item in overrides:
        key, _, value = item.partition("=")
        *parents, leaf = key.split(":")
        d = conc
        for k in parents:
            d = d.setdefault(k, {})
        if value == "-":
            d.pop(leaf, None)
        else:
            d[leaf] = yaml.safe_load(value)
    (env_dir / "spack.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return conc


def one_run(spack: str, env_dir: Path, env: dict, label: str) -> dict:
    load0, busy = os.getloadavg(), busiest()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.Popen([spack, "-v", "-e", str(env_dir), "concretize", "-f"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sampler = PeakRss(proc.pid)
    sampler.start()
    out = proc.communicate()[0]
    wall = time.monotonic() - t0
    sampler.done.set()
    sampler.join()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    if proc.returncode != 0:
        print(out[-5000:], file=sys.stderr)
        raise SystemExit(f"{label}: spack concretize failed (rc {proc.returncode})")
    roots = [(float(m.group(1)), m.group(2), m.group(3)) for m in map(ROOT_LINE.match,
             out.splitlines()) if m]
    lock = json.loads((env_dir / "spack.lock").read_text())
    return {"label": label, "wall": wall, "roots": roots, "n_roots": len(lock["roots"]),
            "n_specs": len(lock["concrete_specs"]), "max_one": sampler.max_one,
            "max_sum": sampler.max_sum, "load0": load0, "load1": os.getloadavg(),
            "busy": busy, "cpu": cpu,
            "workers": sorted(c for c in sampler.cpu.values() if c >= 1.0)}


def report(r: dict) -> None:
    print(f"\n== {r['label']}")
    for secs, h, spec in sorted(r["roots"], key=lambda x: -x[0]):
        print(f"  {secs:7.1f} s  {h}  {spec}")
    solved = sum(s for s, _, _ in r["roots"])
    print(f"roots:             {r['n_roots']} ({len(r['roots'])} timed by Spack; "
          f"sum of per-root times {solved:.0f} s)")
    print(f"concrete specs:    {r['n_specs']}")
    print(f"wall time:         {r['wall']:.0f} s ({r['wall'] / 60:.2f} min)")
    w = r["workers"]
    if w:
        print(f"CPU per process:   {len(w)} processes >= 1 s CPU: min {w[0]:.1f} s, median "
              f"{w[len(w) // 2]:.1f} s, max {w[-1]:.1f} s (sampled every 0.5 s)")
    jobs = min(os.cpu_count() or 1, max(1, r["n_roots"]))
    print(f"CPU time:          {r['cpu']:.0f} s user+sys in all; / {jobs} cores = "
          f"{r['cpu'] / jobs / 60:.2f} min, what an idle machine would take at best")
    print(f"peak RSS:          {r['max_one']:.0f} MB largest process, {r['max_sum']:.0f} MB "
          "all Spack processes together")
    print(f"load average:      {r['load0'][0]:.2f} before, {r['load1'][0]:.2f} after "
          f"(1 min), cores {os.cpu_count()}")
    print(f"busiest before:    {r['busy']} (top, the second before the run)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", action="append", help="concretize these specs instead (the "
                    "compiler before `^`: `mpimatrix-benchmarks %%%%c,cxx=gcc ^mpich@4.0.2`; "
                    "after `^mpich...` it binds to the MPI, and an external MPI has no "
                    "compiler)")
    ap.add_argument("--runs", default="cold,warm", help="comma-separated cold|warm "
                    "(default cold,warm); warm uses the cache of the run before")
    ap.add_argument("--fresh-indexes", action="store_true",
                    help="cold runs also get a new user cache (package indexes rebuilt)")
    ap.add_argument("--concretizer", action="append", default=[], metavar="KEY=VALUE",
                    help="override spack.yaml's concretizer section in the copy, e.g. "
                    "static_analysis=false, duplicates:strategy=minimal, "
                    "targets:granularity=microarchitectures, reuse=false; VALUE - removes "
                    "the key (Spack's default)")
    ap.add_argument("--keep", metavar="DIR", help="environment copies here (kept)")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # each run's figures as soon as it ends
    spack = find_spack()
    if spack is None:
        print("Spack not found (SPACK_ROOT or PATH); `mpimatrix spack locate` says how to get "
              "it", file=sys.stderr)
        return 2
    env = dict(os.environ)
    env.setdefault(SPACK_SITE_ENV, "debian-local")
    if env[SPACK_SITE_ENV] == "debian-local":
        write_shims("debian-local", out=open(os.devnull, "w"))
    scratch = Path(args.keep or tempfile.mkdtemp(prefix="mpimatrix-concretize-"))
    env_dir = spack_env_copy(scratch / "env", args.spec)
    version = spack_version(spack)
    print(f"spack:             {version[0]} ({version[1][:10]}) {spack}")
    print(f"site:              {env[SPACK_SITE_ENV]}")
    print(f"date:              {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(f"environment copy:  {env_dir}")
    t0 = time.monotonic()
    subprocess.run([spack, "-e", str(env_dir), "list", "--count"], env=env,
                   capture_output=True)
    print(f"package indexes:   {time.monotonic() - t0:.0f} s (`spack list` before timing; "
          "once per Spack checkout)")
    results, cache = [], None
    for i, kind in enumerate(k.strip() for k in args.runs.split(",")):
        if kind not in ("cold", "warm"):
            ap.error(f"--runs: {kind!r} is not cold or warm")
        run_env = dict(env)
        if kind == "cold" or cache is None:
            cache = scratch / f"concretization-cache-{i}"
            if args.fresh_indexes:
                run_env["SPACK_USER_CACHE_PATH"] = str(scratch / f"user-cache-{i}")
        conc = set_concretizer(env_dir, cache, args.concretizer)
        if i == 0:
            shown = {k: v for k, v in conc.items() if k != "concretization_cache"}
            print(f"concretizer:       {json.dumps(shown)}")
        r = one_run(spack, env_dir, run_env, f"run {i + 1}: {kind}")
        report(r)
        results.append(r)
    print("\nsummary: " + "; ".join(f"{r['label']} {r['wall'] / 60:.2f} min "
                                    f"(load {r['load0'][0]:.1f}->{r['load1'][0]:.1f})"
                                    for r in results))
    print(f"lock:              {env_dir / 'spack.lock'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
