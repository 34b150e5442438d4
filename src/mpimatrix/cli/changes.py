"""`mpimatrix changes`: steps in the history of every performance value (for cron),
each build's values judged against the host, and the host's own steps once.

Exit code 1 when a step for the worse is new (not printed by an earlier run),
0 otherwise."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from ..atomic import atomic_write
from ..paths import results_dir
from ..results import history
from ..results.changed_since import no_comparison, session_changes
from ..results.measurements import Session, as_sessions
from ..results.policy import DEFAULT_POLICY
from ..results.sessions import SessionError
from ..results.software_diff import changes_for
from ..results.software_store import Store
from ..run.selectors import select, sessions_in
from .session_args import period


def cmd_changes(args) -> int:
    if args.session:
        sessions = as_sessions(select(args.session))
    else:
        sessions = as_sessions(sessions_in(period(args.since)))
    policy = replace(DEFAULT_POLICY, max_pvalue=args.pvalue)
    series = history.against_host(history.series_of(sessions), policy)
    if not series:
        raise SessionError("no performance values in the stored sessions"
                           + ("" if args.session else f" of the last {args.since}"))
    changes = history.changes_of(series, policy)
    state = results_dir() / "history" / "reported-changes.json"
    seen = reported(state)
    new = [c for c in changes if c.ident not in seen]
    shown = changes if args.all else new
    by_uuid = {s.uuid: s for s in sessions}
    store = Store()
    for c in sorted(shown, key=lambda c: (not c.worse, c.series.build, c.series.check)):
        print(("NEW " if c in new else "    ") + c.line())
        print("\n".join(step_software(c, by_uuid, store)))
    for line in store.damage_lines():
        print(f"mpimatrix changes: {line}")
    points = max(len(s.points) for s in series)
    print(f"{len(series)} series over up to {points} session(s): {len(changes)} step(s), "
          f"{len(new)} new ({sum(c.worse for c in new)} for the worse)")
    if not args.dry_run:
        record_reported(state, seen | {c.ident for c in changes})
    return 1 if any(c.worse for c in new) else 0


def step_software(c: history.Change, sessions: dict[str, Session],
                  store: Store | None = None) -> list[str]:
    """What changed in the build's software between the sessions before and after a
    step (for the host's steps: the machine's and every build's)."""
    before = sessions.get(c.series.points[c.index - 1].session)
    after = sessions.get(c.point.session)
    if before is None or after is None:
        return []
    store = store or Store()
    every = session_changes(before, after, store=store)
    at = f"session {before.uuid[:8]} -> {after.uuid[:8]}"
    if every is None:
        return [f"      software {at}: unknown ({no_comparison(before, after, store)})"]
    mine = every if c.series.build == history.HOST else changes_for(every, c.series.build)
    if not mine:
        return [f"      software {at}: no recorded software change"]
    return [f"      software {at}: changed"] + [f"        {x.line()}" for x in mine]


def reported(path: Path) -> set[str]:
    """Changes already reported by earlier runs of `mpimatrix changes`."""
    try:
        return set(json.loads(path.read_text()))
    except (OSError, ValueError):
        return set()


def record_reported(path: Path, idents: set[str]) -> None:
    atomic_write(path, json.dumps(sorted(idents), indent=1) + "\n")


def register(sub) -> None:
    s = sub.add_parser("changes", help="steps in the history of each value (exit 1 when a "
                       "step for the worse is new)")
    s.add_argument("--since", default="30d", help="period of stored sessions (default 30d)")
    s.add_argument("--session", action="append", metavar="SESSION",
                   help="these stored sessions instead: UUID, its first 8 characters, "
                   "`latest` or a period (repeatable)")
    s.add_argument("--pvalue", type=float, default=DEFAULT_POLICY.max_pvalue,
                   help=f"significance of a step of a whole build or the host (default "
                   f"{DEFAULT_POLICY.max_pvalue}; a value's own: a tenth of it)")
    s.add_argument("--all", action="store_true", help="print every step, not only new ones")
    s.add_argument("--dry-run", action="store_true",
                   help="do not remember the steps printed as reported")
    s.set_defaults(func=cmd_changes)
