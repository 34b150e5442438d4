"""`mpimatrix bench-build`: OSU, IMB and NPB for the builds that have none, ahead of a
session (the session's fixtures build the same into the same cache). `mpimatrix
osu-build` is `bench-build --suite osu`."""

from __future__ import annotations

import sys
from pathlib import Path

from ..builds.bench_download import downloads_enabled, fetch
from ..builds.bench_install import PROVENANCE, BenchBuildError, current_record, run_build
from ..builds.bench_sources import SourceError, add_given, configured_sources, scan
from ..builds.bench_suites import SUITES
from ..builds.sources import load_builds


def _source(name: str, sources: dict[str, Path], prog: str) -> Path | None:
    """The suite's configured source, else its release downloaded (checked)."""
    if name in sources:
        return sources[name]
    suite = SUITES[name]
    if not downloads_enabled():
        print(f"{prog}: no {suite.label} source given (--source) and downloads are off",
              file=sys.stderr)
        return None
    try:
        return fetch(suite)
    except SourceError as err:
        print(f"{prog}: {err}; give a source: --source PATH", file=sys.stderr)
        return None


def cmd_bench_build(args) -> int:
    prog = f"mpimatrix {args.cmd}"
    bs = load_builds()
    by = {b.name: b for b in bs.builds} | {b.environ_name: b for b in bs.builds}
    wanted = args.build or [b.name for b in bs.builds]
    unknown = [n for n in wanted if n not in by]
    if unknown:
        print(f"{prog}: unknown build(s) {unknown}; choose from "
              f"{sorted(b.name for b in bs.builds)}", file=sys.stderr)
        return 2
    suites = args.suite
    if args.prefix and (len(wanted) != 1 or len(suites or ()) != 1):
        print(f"{prog}: --prefix needs exactly one --build and one --suite", file=sys.stderr)
        return 2
    add_given(args.source or [])
    sources = configured_sources()
    if not suites:  # the suites the --source paths hold, else all
        given = {n for p in args.source or [] for n in scan(Path(p).absolute())}
        suites = [n for n in SUITES if n in given] or list(SUITES)
    failed = []
    for name in dict.fromkeys(suites):
        suite = SUITES[name]
        source = None
        for b in (by[n] for n in wanted):
            have = b.benchmarks.get(name)
            if have is not None and have.provenance != PROVENANCE and not args.force:
                print(f"{prog}: {b.name} already has {suite.label} from "
                      f"{have.provenance or have.bin_dir}; skipped (--force to build anyway)")
                continue
            source = source or _source(name, sources, prog)
            if source is None:
                failed.append(f"{b.name} ({suite.label})")
                continue
            if not (args.force or args.prefix) and current_record(suite, b.name, source):
                print(f"{prog}: {b.name}: {suite.label} from {source} is built already")
                continue
            try:
                run_build(suite, b, source, Path(args.prefix) if args.prefix else None,
                          args.jobs, args.keep)
            except (BenchBuildError, OSError) as err:
                print(f"{prog}: {err}", file=sys.stderr)
                failed.append(f"{b.name} ({suite.label})")
    if failed:
        print(f"{prog}: failed for {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _parser(sub, name: str, suites: list[str], help_: str):
    s = sub.add_parser(name, help=help_)
    if len(suites) > 1:
        s.add_argument("--suite", action="append", choices=sorted(SUITES),
                       help="osu, imb or npb (repeatable; default: those the --source "
                       "paths hold, else all)")
    s.add_argument("--source", action="append", metavar="PATH",
                   help="an offline kit or mirror folder, a release tarball or a source tree "
                   "(repeatable; default: MPIMATRIX_SOURCES, else the release downloaded "
                   "and checked against Spack's sha256)")
    s.add_argument("--build", action="append",
                   help="build name (repeatable; default: every build)")
    s.add_argument("--prefix", help="install elsewhere than the cache (one --build and one "
                   "suite only; discovery then does not see it)")
    s.add_argument("-j", "--jobs", type=int, default=None,
                   help="make -j; NPB: kernels built at once (default: cores)")
    s.add_argument("--keep", action="store_true", help="keep the work tree")
    s.add_argument("--force", action="store_true", help="build even when the build has the "
                   "suite already (e.g. from Spack), or has it from this source")
    s.set_defaults(func=cmd_bench_build)
    if len(suites) == 1:
        s.set_defaults(suite=suites)
    return s


def register(sub) -> None:
    _parser(sub, "bench-build", list(SUITES), "build OSU, IMB and NPB for each build without "
            "them into .cache/<suite>/<build> (what `mpimatrix run --sources` does in the "
            "session)")
    _parser(sub, "osu-build", ["osu"], "bench-build --suite osu")
