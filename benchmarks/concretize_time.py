#!/usr/bin/env python3
"""Concretization time of the project's spack.yaml (a performance figure).

Copies the environment (spack.yaml, links to packages/, site_config/, .cache/)
into a scratch directory and runs `spack -e <copy> concretize -f` there, so the
project's own spack.lock is never touched; prints wall time, peak memory of the
concretizer, the number of roots and the load average before and after.

    python benchmarks/concretize_time.py                 # whole matrix, caches as they are
    python benchmarks/concretize_time.py --cold          # fresh user cache: no concretization cache
    python benchmarks/concretize_time.py --spec 'intel-mpi-benchmarks %%c,cxx=gcc ^openmpi@4.1.4'

Needs Spack 1.x (SPACK_ROOT or PATH) and MPIMATRIX_SPACK_SITE (default debian-local,
whose shims `mpimatrix spack shims` makes first).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from mpimatrix.builds.spack import site_overlay
from mpimatrix.builds.spack import tool as spack_tool


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", action="append", help="concretize these specs instead")
    ap.add_argument("--cold", action="store_true", help="fresh SPACK_USER_CACHE_PATH")
    ap.add_argument("--keep", metavar="DIR", help="environment copy here (kept)")
    args = ap.parse_args()
    spack = spack_tool.find_spack()
    if spack is None:
        print("Spack not found (SPACK_ROOT or PATH); `mpimatrix spack locate` says how to get "
              "it", file=sys.stderr)
        return 2
    env = dict(os.environ)
    env.setdefault(spack_tool.SITE_ENV, "debian-local")
    if env[spack_tool.SITE_ENV] == "debian-local":
        site_overlay.write_shims("debian-local", out=open(os.devnull, "w"))
    scratch = Path(args.keep or tempfile.mkdtemp(prefix="mpimatrix-concretize-"))
    if args.cold:
        env["SPACK_USER_CACHE_PATH"] = str(scratch / "user-cache")
    env_dir = spack_tool.env_copy(scratch / "env", args.spec)
    load0 = os.getloadavg()
    t0 = time.monotonic()
    proc = subprocess.run([spack, "-e", str(env_dir), "concretize", "-f"], env=env,
                          capture_output=True, text=True)
    wall = time.monotonic() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if proc.returncode != 0:
        print(proc.stdout[-2000:] + proc.stderr[-3000:], file=sys.stderr)
        return proc.returncode
    lock = json.loads((env_dir / "spack.lock").read_text())
    print(f"spack:             {spack_tool.spack_version(spack)[0]} ({spack})")
    print(f"site:              {env[spack_tool.SITE_ENV]}")
    print(f"roots:             {len(lock['roots'])}")
    print(f"concrete specs:    {len(lock['concrete_specs'])}")
    print(f"caches:            {'cold (fresh user cache)' if args.cold else 'as they are'}")
    print(f"wall time:         {wall:.0f} s ({wall / 60:.1f} min)")
    print(f"peak RSS:          {rss_mb:.0f} MB (largest child process)")
    print(f"cores:             {os.cpu_count()}")
    print(f"load average:      {load0[0]:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"lock:              {env_dir / 'spack.lock'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
