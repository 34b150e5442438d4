"""`mpimatrix run`: one ReFrame session in a mode, its report, its summary."""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

from ..builds.sources import ONLY_ENV, load_builds, only_patterns
from ..paths import references_dir, reports_dir
from ..results import summary
from ..results.sessions import load_report
from . import progress
from .reframe_cmd import reframe_cmd
from .selection import ignored_under_mode, name_patterns, osu_note, select_partitions

#: Variables naming files or directories: made absolute before ReFrame starts
#: (ReFrame loads the configuration from site_config/, not from the caller's cwd).
PATH_VARIABLES = ("MPIMATRIX_BUILDS", "MPIMATRIX_LOCK", "MPIMATRIX_RESULTS", "MPIMATRIX_HOME",
                  "MPIMATRIX_CACHE", "MPIMATRIX_SYSTEMS", "MPIMATRIX_OSU_SOURCE",
                  "RFM_SQLITE_DB_FILE")


def absolute_path_variables() -> None:
    for var in PATH_VARIABLES:
        value = os.environ.get(var)
        if value and not os.path.isabs(value):
            os.environ[var] = os.path.abspath(value)


def session_extras() -> str:
    bs = load_builds()
    extras = {"builds_source": bs.source.split(":")[0],
              "builds": "+".join(b.environ_name for b in bs.builds)}
    if bs.lock_sha256:
        extras["spack_lock"] = bs.lock_sha256
    return ",".join(f"{k}={v}" for k, v in extras.items())


def report_path(mode: str) -> Path:
    """A report name no other session takes: mode, time and a random suffix."""
    return reports_dir() / f"{mode}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}.json"


def link_latest(report: Path) -> None:
    latest = reports_dir() / "latest.json"
    tmp = reports_dir() / f".latest.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(report.name)
    tmp.replace(latest)


def run_session(mode: str, only: list[str] | None, reframe_args: list[str],
                partitions: list[str] | None = None) -> int:
    absolute_path_variables()
    os.environ.setdefault("RFM_REFERENCE_PREFIX", str(references_dir()))
    if only:
        os.environ[ONLY_ENV] = "\n".join(only)
        only_patterns()  # a bad regular expression stops here, with its name
    select_partitions(partitions)
    osu = osu_note()
    report_file = report_path(mode)
    reports_dir().mkdir(parents=True, exist_ok=True)
    cmd = reframe_cmd("--mode", mode, "-r", "--report-file", str(report_file),
                      "--session-extras", session_extras(), *name_patterns(reframe_args))
    print("+ " + " ".join(cmd), flush=True)
    for note in (ignored_under_mode(reframe_args), osu):
        if note:
            print(note, flush=True)
    rc = progress.call(cmd)
    if report_file.exists():
        print()
        print(summary.format_table(load_report(report_file)))
        if osu:
            print(osu)
        link_latest(report_file)
        print(f"report: {report_file}")
    else:
        print(f"mpimatrix: ReFrame wrote no report ({report_file}); rc={rc}", file=sys.stderr)
    return rc
