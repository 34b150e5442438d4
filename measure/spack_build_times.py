#!/usr/bin/env python3
"""How long Spack takes to build the kit's part of the matrix, and CI from a fresh clone.

    .venv/bin/python measure/spack_build_times.py [--warm N]     # cold install, then N warm runs
    .venv/bin/python measure/spack_build_times.py --ci            # .ci/run on a fresh clone

Install: the kit environment (spack.yaml with debian-local, specs = the rows the kit's
sources serve: OSU and IMB on Debian's Open MPI and MPICH, MVAPICH2 built from source
with them) is concretized and installed into an EMPTY install tree of its own
(`spack -c config:install_tree:root:<tmp>`), so every package is built: that is the
cold figure. Then `spack install` again, N times: the warm figure (nothing to build).
Prints each step's wall time, the per-package build times Spack reports, and the
spread of the warm runs. Goals: cold <= 30 min, warm <= 1 min on 2 cores.

CI: a fresh `git clone` of HEAD beside this checkout (so ../shared/offline is its kit
too) with an empty user cache (MPIMATRIX_USER_CACHE: no Spack, no installs), then
`.ci/run` with CI=true, timed. Goal <= 60 min on 2 cores. Apt packages already on the
machine are not removed, so on a used machine this is a lower bound of a fresh one.

Runs are serial; anything else running on the machine inflates the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mpimatrix.paths import offline_kit, project_root
from mpimatrix.validation.api import (
    KIT_ROWS,
    add_kit_sources,
    find_spack,
    spack_env_copy,
    write_activation,
    write_shims,
)


def timed(cmd: list[str], env: dict, log: Path) -> tuple[float, int, str]:
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    out = proc.stdout + proc.stderr
    log.write_text(out)
    return seconds, proc.returncode, out


def package_times(out: str) -> list[tuple[str, str]]:
    """(package, Spack's 'Total: ...') of every package built in an install log."""
    times, name = [], ""
    for line in out.splitlines():
        m = re.match(r"==> (\S+): Successfully installed (\S+)", line)
        if m:
            name = m.group(2)
        m = re.search(r"Total: (.+)$", line)
        if m and name:
            times.append((name.rsplit("-", 1)[0], m.group(1).strip()))
            name = ""
    return times


def bench_install(warm: int, cold: bool = True) -> int:
    spack = find_spack()
    kit = offline_kit()
    if spack is None or kit is None:
        print("needs Spack (`mpimatrix spack get --kit DIR`) and the offline kit")
        return 2
    with open(os.devnull, "w") as quiet:
        write_shims("debian-local", out=quiet)
    add_kit_sources(kit)
    write_activation()
    work = Path(tempfile.mkdtemp(prefix="spack-times-"))
    env_dir = spack_env_copy(work / "env", list(KIT_ROWS))
    tree = ["-c", f"config:install_tree:root:{work / 'opt'}"] if cold else []
    env = dict(os.environ, MPIMATRIX_SPACK_SITE="debian-local")
    where = f"empty install tree {work / 'opt'}" if cold else "Spack's own install tree"
    print(f"kit environment {env_dir}, {where}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    s, rc, _ = timed([spack, *tree, "-e", str(env_dir), "concretize"], env,
                     work / "concretize.log")
    print(f"concretize ({len(KIT_ROWS)} roots): {s:.0f} s (rc {rc})")
    s, rc, out = timed([spack, *tree, "-e", str(env_dir), "install", "--fail-fast"], env,
                       work / "install-first.log")
    print(f"{'cold' if cold else 'first'} install: {s / 60:.1f} min (rc {rc}); "
          "Spack's per-package totals:")
    for name, total in package_times(out):
        print(f"  {name:40s} {total}")
    warm_s = []
    for i in range(warm):
        s, rc, _ = timed([spack, *tree, "-e", str(env_dir), "install"], env,
                         work / f"install-warm{i}.log")
        warm_s.append(s)
        print(f"warm install {i + 1}: {s:.1f} s (rc {rc})")
    if warm_s:
        print(f"warm: median {statistics.median(warm_s):.1f} s, "
              f"min {min(warm_s):.1f} s, max {max(warm_s):.1f} s over {len(warm_s)} runs")
    shutil.rmtree(work, ignore_errors=True)
    return 0


def bench_ci(keep: bool) -> int:
    root = project_root()
    clone = root.parent / f"mpimatrix-ci-{int(time.time())}"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    cache = Path(tempfile.mkdtemp(prefix="mpimatrix-user-cache-"))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MPIMATRIX_", "SPACK_", "RFM_"))}
    env.update(CI="true", MPIMATRIX_USER_CACHE=str(cache))
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    print(f"fresh clone {clone} (HEAD {head}), empty user cache {cache}")
    t0 = time.monotonic()
    with open(clone.parent / f"{clone.name}.log", "w") as log:
        rc = subprocess.call([str(clone / ".ci" / "run")], cwd=clone, env=env,
                             stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    minutes = (time.monotonic() - t0) / 60
    tail = (clone.parent / f"{clone.name}.log").read_text().strip().splitlines()[-3:]
    print(f".ci/run: rc {rc}, {minutes:.1f} min\n  " + "\n  ".join(tail))
    if not keep:
        shutil.rmtree(clone, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    return rc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warm", type=int, default=3, help="warm re-runs (default 3)")
    ap.add_argument("--ci", action="store_true", help="time .ci/run on a fresh clone")
    ap.add_argument("--no-cold", action="store_true", help="install into Spack's own tree "
                    "(what is installed there already is not built): warm figures only")
    ap.add_argument("--keep", action="store_true", help="keep the clone and its cache")
    args = ap.parse_args()
    return bench_ci(args.keep) if args.ci else bench_install(args.warm, not args.no_cold)


if __name__ == "__main__":
    sys.exit(main())
