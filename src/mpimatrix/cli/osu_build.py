"""`mpimatrix osu-build`: OSU Micro-Benchmarks for builds that have none."""

from __future__ import annotations

import sys
from pathlib import Path

from ..builds.osu_install import PROVENANCE, OsuBuildError, build_osu
from ..builds.sources import load_builds


def cmd_osu_build(args) -> int:
    src = Path(args.source)
    if not src.exists():
        print(f"mpimatrix osu-build: {src} does not exist", file=sys.stderr)
        return 2
    bs = load_builds()
    by = {b.name: b for b in bs.builds} | {b.environ_name: b for b in bs.builds}
    wanted = args.build or [b.name for b in bs.builds]
    unknown = [n for n in wanted if n not in by]
    if unknown:
        print(f"mpimatrix osu-build: unknown build(s) {unknown}; choose from "
              f"{sorted(b.name for b in bs.builds)}", file=sys.stderr)
        return 2
    if args.prefix and len(wanted) != 1:
        print("mpimatrix osu-build: --prefix needs exactly one --build", file=sys.stderr)
        return 2
    failed = []
    for name in wanted:
        b = by[name]
        osu = b.benchmarks.get("osu")
        if osu is not None and not args.force and osu.provenance != PROVENANCE:
            print(f"mpimatrix osu-build: {b.name} already has OSU from "
                  f"{osu.provenance or osu.bin_dir}; skipped (--force to build anyway)")
            continue
        try:
            build_osu(b, src, Path(args.prefix) if args.prefix else None, args.jobs, args.keep)
        except OsuBuildError as err:
            print(f"mpimatrix osu-build: {err}", file=sys.stderr)
            failed.append(b.name)
    if failed:
        print(f"mpimatrix osu-build: failed for {failed}", file=sys.stderr)
        return 1
    return 0


def register(sub) -> None:
    s = sub.add_parser("osu-build", help="build OSU Micro-Benchmarks for each build "
                       "(Debian/PyPI MPIs have no OSU package) into .cache/osu/<build>")
    s.add_argument("--source", required=True,
                   help="OSU source tree or tarball (osu-micro-benchmarks-X.Y.tar.gz)")
    s.add_argument("--build", action="append",
                   help="build name (repeatable; default: every discovered build)")
    s.add_argument("--prefix", help="install elsewhere than the cache (one --build only; "
                   "discovery then does not see it)")
    s.add_argument("-j", "--jobs", type=int, default=None, help="make -j (default: cores)")
    s.add_argument("--keep", action="store_true", help="keep the work tree")
    s.add_argument("--force", action="store_true",
                   help="build even when the build already has OSU (e.g. from Spack)")
    s.set_defaults(func=cmd_osu_build)
