#!/usr/bin/env python3
"""Build once, install anywhere: the installed matrix rows through Spack's binary cache.

    .venv/bin/python measure/spack_buildcache.py --env /tmp/kitenv/env        # the rows built there
    .venv/bin/python measure/spack_buildcache.py --env DIR --mirror /srv/spack-cache --force
    .venv/bin/python measure/spack_buildcache.py                              # fresh kit env copy

1. push: every row of the environment's lock that is installed (in Spack's own tree, or
   `--from-tree`) goes to the binary mirror with its dependencies,
   `spack -e ENV buildcache push --unsigned --update-index MIRROR /<root hash>...`
   (default mirror: the project's cache .cache/spack/buildcache; `--force` re-packs what is
   there already, for a full push time). Time, and the cache's size.
2. install: a copy of the environment with the same lock (another login node with the same
   checkout) installs those rows into an EMPTY install tree from the mirror alone:
   `spack -C SCOPE -e COPY install --use-buildcache only <rows>`, SCOPE naming the tree
   (`config: install_tree: root:`) and the mirror (binary, unsigned). Time (goal: <= 5 min
   for the whole built matrix), and the check that nothing was compiled: the log has an
   "Extracting ... from binary cache" per package and no "Executing phase", every
   install_times.json of the new tree says `"cache": true`.
3. run: each row's osu_latency from the new tree, 2 ranks through the row's own MPI
   launcher (relocation works), and `ldd` of it names no library of the source tree.

Spack relocates by rewriting the old install root in binaries in place, so the new
tree's root must not be longer than the source tree's (default: a short /tmp directory).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from spack_matrix_build import busiest, cpu_busy, prepare

from mpimatrix.validation.api import (
    KIT_ROWS,
    Lock,
    cache_size,
    default_cache,
    env_with_lock,
    find_spack,
    install_times,
    osu_latency_command,
    read_install_log,
    read_lock,
    row_label,
    spack_env_copy,
    store_index,
    store_root,
    tree_scope,
)


def timed(cmd: list[str], env: dict, log: Path) -> tuple[float, int, str, float]:
    """(seconds, rc, output, CPU-s other processes took meanwhile)."""
    cpu0, t0 = cpu_busy(), time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    out = proc.stdout + proc.stderr
    log.write_text(out)
    return seconds, proc.returncode, out, cpu_busy() - cpu0


def mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def run_osu(lock: Lock, root: dict, index: dict, source: Path) -> str:
    """One line: the row's osu_latency from the new tree, and what ldd resolves."""
    try:
        cmd, extra = osu_latency_command(lock, root["hash"], index)
    except KeyError as err:
        return f"not run: {err}"
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=dict(os.environ, **extra), capture_output=True,
                          text=True, timeout=300)
    ldd = subprocess.run(["ldd", cmd[3]], capture_output=True, text=True).stdout
    stale = [ln.split()[0] for ln in ldd.splitlines() if str(source) in ln]
    lines = [ln for ln in proc.stdout.splitlines() if ln[:1].isdigit()]
    ok = proc.returncode == 0 and lines and not stale
    return (f"{'ok' if ok else 'FAILED'}: rc {proc.returncode}, {time.monotonic() - t0:.1f} s"
            + (f", latency {lines[0].split()[1]} us at {lines[0].split()[0]} B" if lines else "")
            + (f"; ldd names the source tree for {', '.join(stale)}" if stale else "")
            + ("" if proc.returncode == 0 else f"\n      {proc.stderr.strip()[-600:]}"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", type=Path, help="an environment whose lock's installed rows "
                    "are pushed (default: a fresh copy with the kit rows, concretized "
                    "--fresh: the rows installed in the source tree with those hashes)")
    ap.add_argument("--from-tree", type=Path, help="the install tree the rows are in "
                    "(default Spack's own)")
    ap.add_argument("--mirror", default=str(default_cache()), help="binary "
                    "mirror: a directory or a URL (default the project's %(default)s)")
    ap.add_argument("--force", action="store_true", help="re-pack what the mirror has "
                    "already (a full push time)")
    ap.add_argument("--tree", type=Path, help="the EMPTY install tree to install into "
                    "(default a new directory under /tmp, removed at the end)")
    ap.add_argument("--keep", action="store_true", help="keep the new install tree")
    args = ap.parse_args()

    spack = find_spack()
    if spack is None:
        print("needs Spack (`mpimatrix spack get --kit DIR`)")
        return 2
    senv = dict(os.environ, MPIMATRIX_SPACK_SITE="debian-local")
    work = Path(tempfile.mkdtemp(prefix="mmbc-", dir="/tmp"))
    env_dir = args.env
    if env_dir is None:  # a new environment: the site's shims, the kit's sources first
        spack = prepare()
        env_dir = spack_env_copy(work / "env", list(KIT_ROWS))
        proc = subprocess.run([spack, "-e", str(env_dir), "concretize", "--fresh"], env=senv,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print((proc.stdout + proc.stderr)[-3000:])
            return 1
    lock = read_lock(env_dir / "spack.lock")
    src_scope = (["-C", str(tree_scope(work / "src-scope",
                                                   args.from_tree.absolute()))]
                 if args.from_tree else [])
    source = store_root(spack, *src_scope, "-e", str(env_dir), env=senv)
    index = store_index(source)
    rows = [r for r in lock.roots if r["hash"] in index]
    print(f"environment {env_dir}: {len(rows)} of {len(lock.roots)} rows installed in "
          f"{source}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; busiest: "
          f"{busiest()}")
    for r in lock.roots:
        print(f"  {'installed ' if r in rows else 'not built '} /{r['hash'][:7]} "
              f"{row_label(lock, r)}")
    if not rows:
        return 1

    # 1. push
    hashes = [f"/{r['hash']}" for r in rows]
    mirror = args.mirror
    if "://" not in mirror:
        Path(mirror).mkdir(parents=True, exist_ok=True)
    s, rc, out, other = timed(
        [spack, *src_scope, "-e", str(env_dir), "buildcache", "push", "--unsigned",
         "--update-index", *(["--force"] if args.force else []), mirror, *hashes],
        senv, work / "push.log")
    skipped = "already in the buildcache" in out or "already exist in the buildcache" in out
    size = (f", cache {mib(cache_size(Path(mirror))[0])} in "
            f"{cache_size(Path(mirror))[1]} files" if "://" not in mirror else "")
    print(f"\npush to {mirror}: {s:.0f} s (rc {rc}){size}; other processes {other:.0f} CPU-s"
          + ("; some specs were in the mirror already (--force re-packs them)"
             if skipped else ""))
    if rc != 0:
        print(out[-3000:])
        return 1

    # 2. install into an empty tree, from the mirror only
    tree = (args.tree or work / "t").absolute()
    if tree.exists() and any(tree.iterdir()):
        ap.error(f"{tree} is not empty")
    if len(str(tree)) > len(str(source)):
        print(f"WARNING: {tree} is longer than {source}: Spack cannot relocate binaries "
              "into a longer prefix (CannotGrowString); give a shorter --tree")
    copy = env_with_lock(env_dir, work / "copy")
    scope = tree_scope(work / "scope", tree, mirror)
    load0 = os.getloadavg()[0]
    s, rc, out, other = timed(
        [spack, "-C", str(scope), "-e", str(copy), "install", "--use-buildcache", "only",
         *hashes], senv, work / "install.log")
    new = store_index(tree)
    log = read_install_log(out)
    built = [h for h, rec in new.items()
             if not (install_times(rec["path"]) or {}).get("cache", False)]
    print(f"install from the cache into {tree}: {s:.0f} s = {s / 60:.1f} min (rc {rc}; "
          f"goal <= 5 min); load {load0:.2f} -> {os.getloadavg()[0]:.2f}, other processes "
          f"{other:.0f} CPU-s\n  {len(log.extracted)} packages extracted from the cache, "
          f"{len(new)} in the new tree; compiled: {', '.join(log.compiled) or 'nothing'}; "
          f"'installing from source': {len(log.from_source)}; install_times.json without "
          f"\"cache\": true: {len(built)}; log {work / 'install.log'}")
    for e in log.errors:
        print(f"  {e}")

    # 3. run each row's osu_latency from the new tree
    print("osu_latency, 2 ranks, from the new tree:")
    results = []
    for r in rows:
        line = run_osu(lock, r, new, source)
        results.append(line.startswith("ok"))
        print(f"  {row_label(lock, r).removeprefix('mpimatrix-benchmarks ')}: "
              f"{line}")
    if args.keep:
        print(f"kept {tree} and {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    good = rc == 0 and not log.compiled and not log.from_source and not built and all(results)
    print("all rows installed from the cache without compiling, and run" if good
          else "FAILED (see above)")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
