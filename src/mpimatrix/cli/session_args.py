"""Which sessions a command works on: --session UUIDs from the results database,
--report files, or the latest run's report."""

from __future__ import annotations

from pathlib import Path

from ..paths import reports_dir
from ..results.sessions import SessionError, load_report
from ..run.stored import stored_sessions


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
