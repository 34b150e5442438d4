"""Which sessions a command works on: --report files, --session UUIDs or periods from
the results database, the sessions of the last --since, or the latest run's report."""

from __future__ import annotations

import re
from pathlib import Path

from ..paths import reports_dir, results_db
from ..results.sessions import SessionError, load_report
from ..run.stored import database_is_empty, sessions_in, stored_sessions

AGE = re.compile(r"\d+[mhdw]")


def period(since: str) -> str:
    """ReFrame's period for `--since AGE` (the last 14d, 12h, 2w, 90m)."""
    if not AGE.fullmatch(since):
        raise SessionError(f"--since {since!r}: give an age such as 14d, 12h, 2w or 90m")
    return f"now-{since}:now"


def sessions_from_args(args) -> list[dict]:
    """The sessions of --report and --session, plus those of the last --since where the
    command has that option; with none of them, the latest run's report."""
    since = getattr(args, "since", None)
    stored = bool(since or args.session)
    try:
        sessions = sessions_in(period(since)) if since else []
        sessions += [load_report(Path(p)) for p in args.report or []]
        sessions += stored_sessions(args.session or [])
        if not since and not args.report and not args.session:
            latest = reports_dir() / "latest.json"
            if not latest.exists():
                raise SessionError("give --session UUID or --report FILE (no "
                                   f"{latest} yet: run `mpimatrix run` first)")
            sessions = [load_report(latest)]
    except SessionError as err:
        if stored and database_is_empty():
            raise SessionError(f"{err}; the database holds no session: run `mpimatrix "
                               "run` first") from None
        raise
    if not sessions:  # a period with no session
        if database_is_empty():
            raise SessionError(f"the results database {results_db()} holds no session: "
                               "run `mpimatrix run` first")
        raise SessionError(f"no stored session started in the last {since}")
    return sessions
