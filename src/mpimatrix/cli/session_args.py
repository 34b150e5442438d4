"""Which sessions a command works on: --report files, --session selectors (a UUID, a
prefix of one, `latest` or a period: run/selectors.py), the sessions of the last
--since, or the latest run's report."""

from __future__ import annotations

import re
from pathlib import Path

from ..paths import reports_dir, results_db
from ..results.sessions import SessionError, load_report
from ..run.selectors import parse, select, select_uuids, sessions_in, uuids_in
from ..run.stored import database_is_empty

AGE = re.compile(r"\d+[mhdw]")


def period(since: str) -> str:
    """ReFrame's period for `--since AGE` (the last 14d, 12h, 2w, 90m)."""
    if not AGE.fullmatch(since or ""):
        raise SessionError(f"--since {since!r}: give an age such as 14d, 12h, 2w or 90m")
    return f"now-{since}:now"


def stored_uuids_from_args(args) -> list[str] | None:
    """The UUIDs of the stored sessions --session and --since select (the same errors as
    sessions_from_args); None when report files or the latest run's report are given."""
    since = getattr(args, "since", None)
    selectors = args.session or []
    if args.report or (since is None and not selectors):
        return None
    for text in selectors:
        parse(text)
    uuids = uuids_in(period(since)) if since is not None else []
    uuids += [u for u in select_uuids(selectors) if u not in uuids]
    if not uuids:
        _nothing_in(since)
    return uuids


def _nothing_in(since: str | None) -> None:
    if database_is_empty():
        raise SessionError(f"the results database {results_db()} holds no session: "
                           "run `mpimatrix run` first")
    raise SessionError(f"no stored session started in the last {since}")


def sessions_from_args(args) -> list[dict]:
    """The sessions of --report and --session, plus those of the last --since where the
    command has that option; with none of them, the latest run's report. Every
    selector is checked before anything is read."""
    since = getattr(args, "since", None)
    selectors = args.session or []
    for text in selectors:
        parse(text)
    window = period(since) if since is not None else None
    sessions = sessions_in(window) if window else []
    sessions += [load_report(Path(p)) for p in args.report or []]
    sessions += select(selectors)
    if window is None and not args.report and not selectors:
        latest = reports_dir() / "latest.json"
        if not latest.exists():
            raise SessionError("give --session UUID or --report FILE (no "
                               f"{latest} yet: run `mpimatrix run` first)")
        sessions = [load_report(latest)]
    if not sessions:  # a period with no session
        _nothing_in(since)
    return sessions
