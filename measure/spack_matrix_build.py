#!/usr/bin/env python3
"""The cold build time of every kit row, row by row, and what Spack recorded of each build.

    .venv/bin/python measure/spack_matrix_build.py --install-tree /tmp/cold   # truly cold
    .venv/bin/python measure/spack_matrix_build.py                  # into Spack's own tree
    .venv/bin/python measure/spack_matrix_build.py --env /tmp/kitenv/env --row '<spec>' ...
    .venv/bin/python measure/spack_matrix_build.py --from-times --lock /tmp/kitenv/env/spack.lock

Build: the environment is a fresh copy of spack.yaml with the kit's rows
(builds/spack/kit.py KIT_ROWS) concretized with --fresh, as tests/test_spack_kit.py does,
or `--env DIR`, one concretized already. Each row (`--row`, default every spec of the
environment) is installed on its own, `spack -e ENV install -j2 '<row>'`, into
`--install-tree DIR` (a configuration scope `config: install_tree: root: DIR`, `spack -C`;
an empty DIR makes every build cold) or Spack's own tree (what is installed there is not
built again). Per row: wall time, rc, load average before and after, the CPU time other
processes took meanwhile (anything else running inflates the figures), and for each
package built for the row (the MPI, OSU, IMB, ...) the build time Spack itself recorded in
`<prefix>/.spack/install_times.json`, by phase. A row that fails prints its rc and the path
of its build log, and the next row is built.

--from-times: no build. For each row of `--lock`, the times recorded in the install tree
(`--install-tree`, default Spack's own) for its nodes; a node shared by several rows
(gcc-runtime, compiler-wrapper) is counted in the first.

Figures only, no goals asserted: they depend on the machine and on what else runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from concretize_time import busiest

from mpimatrix.paths import offline_kit
from mpimatrix.validation.api import (
    KIT_ROWS,
    Lock,
    add_kit_sources,
    build_log_path,
    find_spack,
    install_times,
    phases_text,
    read_lock,
    row_label,
    row_mpi,
    row_nodes,
    spack_env_args,
    spack_env_copy,
    store_index,
    store_root,
    tree_scope,
    write_activation,
    write_shims,
)


def cpu_busy() -> float:
    """CPU seconds the whole machine has been busy (all cores, /proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def prepare() -> str:
    """Spack, the site's shims, the kit's sources in the mirror, the activation. Only for
    a new environment: the shims are re-made, which a build using them would not survive."""
    spack = find_spack()
    kit = offline_kit()
    if spack is None or kit is None:
        raise SystemExit("needs Spack (`mpimatrix spack get --kit DIR`) and the offline kit")
    with open(os.devnull, "w") as quiet:
        write_shims("debian-local", out=quiet)
    add_kit_sources(kit)
    write_activation()
    return spack


def env_rows(env_dir: Path) -> list[str]:
    specs = yaml.safe_load((env_dir / "spack.yaml").read_text())["spack"].get("specs") or []
    return [s for s in specs if isinstance(s, str)]


def lock_root(lock: Lock, rows: list[str], row: str) -> dict | None:
    """The lock's root of a row: the same text, else the same position in spack.yaml
    (Spack writes the roots in the order of the specs, in its own spelling)."""
    norm = " ".join(row.split())
    for r in lock.roots:
        if " ".join(str(r.get("spec", "")).split()) == norm:
            return r
    i = rows.index(row) if row in rows else -1
    return lock.roots[i] if 0 <= i < len(lock.roots) == len(rows) else None


# -- what Spack recorded -------------------------------------------------------------------
def node_lines(lock: Lock, root: dict, index: dict[str, dict], since: float | None,
               counted: set[str]) -> tuple[list[str], dict[str, float]]:
    """Lines for the nodes of a row, and the seconds per role of those built for it (since:
    installed after that time; None: every node not counted for an earlier row)."""
    lines, sums = [], {}
    mpi = row_mpi(lock, root["hash"])
    if mpi is not None and mpi.is_external:
        lines.append(f"    {'MPI':6s} {mpi.name}@{mpi.version} external, {mpi.external_path}")
    for rn in row_nodes(lock, root["hash"]):
        rec = index.get(rn.node.hash)
        if rec is None:
            lines.append(f"    {rn.role:6s} {rn.label:48s} not installed")
            continue
        times = install_times(rec["path"]) or {}
        new = (since is None and rn.node.hash not in counted) or (
            since is not None and (rec.get("installation_time") or 0) >= since)
        how = "from a binary cache" if times.get("cache") else phases_text(times)
        if not new:
            why = "installed before" if since is not None else "counted in an earlier row"
            lines.append(f"    {rn.role:6s} {rn.label:48s} ({why})")
            continue
        counted.add(rn.node.hash)
        total = float(times.get("total") or 0.0)
        sums[rn.role or "other"] = sums.get(rn.role or "other", 0.0) + total
        lines.append(f"    {rn.role:6s} {rn.label:48s} {total:7.1f} s  {how}")
    return lines, sums


def print_summary(results: list[dict]) -> None:
    """One line per row: wall time, rc and other processes' CPU (when built here), and the
    seconds Spack recorded for the row's MPI, OSU, IMB and other packages; then totals."""
    roles = ("MPI", "OSU", "IMB", "other")
    print(f"\n{'row':>3}  {'wall s':>7} {'rc':>3} {'MPI s':>7} {'OSU s':>6} {'IMB s':>6} "
          f"{'other s':>7} {'other CPU':>9}  row")
    tot = dict.fromkeys(("wall", *roles), 0.0)
    for i, r in enumerate(results, 1):
        s = dict.fromkeys(roles, 0.0)
        for role, seconds in r["sums"].items():
            s[role if role in roles else "other"] += seconds
        for k in roles:
            tot[k] += s[k]
        built = r.get("wall") is not None
        tot["wall"] += r["wall"] if built else 0.0
        wall = f"{r['wall']:7.0f}" if built else f"{'-':>7}"
        other_cpu = f"{r['other_cpu']:8.0f}s" if built else f"{'-':>9}"
        figures = (f"{s['MPI']:7.1f} {s['OSU']:6.1f} {s['IMB']:6.1f} {s['other']:7.1f}"
                   if r["sums"] or r.get("installed", True) else f"{'not installed':>30}")
        print(f"{i:3d}  {wall} {r.get('rc', '-'):>3} {figures} {other_cpu}  "
              f"{r['row'].removeprefix('mpimatrix-benchmarks ')}")
    recorded = sum(tot[k] for k in roles)
    wall = f"{tot['wall']:7.0f}" if tot["wall"] else f"{'-':>7}"
    print(f"all  {wall}     {tot['MPI']:7.1f} {tot['OSU']:6.1f} {tot['IMB']:6.1f} "
          f"{tot['other']:7.1f}            Spack recorded {recorded:.0f} s = "
          f"{recorded / 60:.1f} min of builds"
          + (f"; {tot['wall'] / 60:.1f} min wall" if tot["wall"] else ""))


# -- building ----------------------------------------------------------------------------------
def build_rows(spack: str, env_dir: Path, rows: list[str], scope: list[str], store: Path,
               work: Path, jobs: int) -> list[dict]:
    senv = dict(os.environ, MPIMATRIX_SPACK_SITE=os.environ.get("MPIMATRIX_SPACK_SITE",
                                                                "debian-local"))
    lock = read_lock(env_dir / "spack.lock")
    all_rows, results, counted = env_rows(env_dir), [], set()
    for i, row in enumerate(rows, 1):
        load0, busy = os.getloadavg()[0], busiest()
        cpu0, mine0 = cpu_busy(), children_cpu()
        since, t0 = time.time() - 1, time.monotonic()
        log = work / f"install-row{i:02d}.log"
        with open(log, "w") as out:
            rc = subprocess.call([spack, *scope, "-e", str(env_dir), "install", f"-j{jobs}",
                                  row], env=senv, stdout=out, stderr=subprocess.STDOUT)
        wall = time.monotonic() - t0
        other = max(0.0, (cpu_busy() - cpu0) - (children_cpu() - mine0))
        print(f"\nrow {i}/{len(rows)}: {row}\n  wall {wall:.0f} s ({wall / 60:.1f} min), "
              f"rc {rc}; load {load0:.2f} -> {os.getloadavg()[0]:.2f}; other processes "
              f"{other:.0f} CPU-s ({100 * other / wall / (os.cpu_count() or 1):.0f}% of the "
              f"{os.cpu_count()} cores); busiest before: {busy}")
        if rc != 0:
            text = log.read_text(errors="replace")
            error = next((ln for ln in text.splitlines() if ln.startswith("==> Error")), "")
            print(f"  FAILED: {error[4:].strip() or 'see the install output'}\n  build log: "
                  f"{build_log_path(text) or '(none: nothing was built)'}; "
                  f"install output: {log}")
        root = lock_root(lock, all_rows, row)
        sums = {}
        if root is None:
            print("  (row not found in the lock: no recorded times)")
        else:
            lines, sums = node_lines(lock, root, store_index(store), since, counted)
            print("\n".join(lines))
        results.append({"row": row, "wall": wall, "rc": rc, "sums": sums,
                        "other_cpu": other})
    return results


def from_times(lock_path: Path, store: Path) -> int:
    lock = read_lock(lock_path)
    index = store_index(store)
    print(f"lock {lock_path} ({len(lock.roots)} rows), install tree {store} "
          f"({len(index)} installed)")
    results, counted = [], set()
    for i, root in enumerate(lock.roots, 1):
        row = row_label(lock, root)
        lines, sums = node_lines(lock, root, index, None, counted)
        print(f"\nrow {i}/{len(lock.roots)}: {row}"
              + ("" if root["hash"] in index else "  (not installed)"))
        print("\n".join(lines))
        results.append({"row": row, "sums": sums, "installed": root["hash"] in index})
    print_summary(results)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", type=Path, help="a concretized environment to install from "
                    "(default: a fresh copy with the kit rows, concretized --fresh)")
    ap.add_argument("--row", action="append", help="install only these rows (specs of "
                    "the environment, as written in its spack.yaml); repeatable")
    ap.add_argument("--install-tree", type=Path, help="install tree root (empty: cold "
                    "builds); default Spack's own")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="build jobs (default 2)")
    ap.add_argument("--from-times", action="store_true", help="no build: report the "
                    "times recorded in the install tree for the rows of --lock")
    ap.add_argument("--lock", type=Path, help="with --from-times: the lock (default "
                    "<--env>/spack.lock)")
    args = ap.parse_args()

    spack = find_spack()
    if spack is None:
        print("needs Spack (`mpimatrix spack get --kit DIR`)")
        return 2
    work = Path(tempfile.mkdtemp(prefix="spack-matrix-"))
    scope = (["-C", str(tree_scope(work / "scope", args.install_tree.absolute()))]
             if args.install_tree else [])
    senv = dict(os.environ, MPIMATRIX_SPACK_SITE="debian-local")
    if args.from_times:
        lock = args.lock or (args.env / "spack.lock" if args.env else None)
        if lock is None:
            ap.error("--from-times needs --lock (or --env)")
        store = store_root(spack, *scope, *spack_env_args(lock), env=senv)
        shutil.rmtree(work, ignore_errors=True)  # nothing is built: no logs to keep
        return from_times(lock, store)

    env_dir = args.env
    if env_dir is None:  # a new environment: the site's shims, the kit's sources first
        spack = prepare()
        env_dir = spack_env_copy(work / "env", list(KIT_ROWS))
        t0 = time.monotonic()
        proc = subprocess.run([spack, *scope, "-e", str(env_dir), "concretize", "--fresh"],
                              env=senv, capture_output=True, text=True)
        print(f"concretize --fresh ({len(KIT_ROWS)} rows): {time.monotonic() - t0:.0f} s "
              f"(rc {proc.returncode})")
        if proc.returncode != 0:
            print((proc.stdout + proc.stderr)[-3000:])
            return 1
    elif not (env_dir / "spack.lock").is_file():
        ap.error(f"{env_dir}: no spack.lock (concretize it first)")
    rows = args.row or env_rows(env_dir)
    store = store_root(spack, *scope, "-e", str(env_dir), env=senv)
    before = len(store_index(store))
    print(f"environment {env_dir}, {len(rows)} rows; install tree {store} ({before} "
          f"installed{', NOT empty: rows already built there are not timed' if before else ''}"
          f"); {os.cpu_count()} cores, -j{args.jobs}; logs in {work}")
    results = build_rows(spack, env_dir, rows, scope, store, work, args.jobs)
    print_summary(results)
    failed = [r["row"] for r in results if r["rc"] != 0]
    print(f"{len(results) - len(failed)} rows installed, {len(failed)} failed"
          + "".join(f"\n  failed: {r}" for r in failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
