"""`mpimatrix changes`: steps in the history of every performance value (for cron),
each build's values judged against the host, and the host's own steps once.

Exit code 1 when a step for the worse is new (not printed by an earlier run),
0 otherwise."""

from __future__ import annotations

from dataclasses import replace

from ..paths import results_dir
from ..results.history import steps_in
from ..results.policy import DEFAULT_POLICY
from ..results.reported_changes import Reported, step_software
from ..results.sessions import SessionError
from ..results.software_store import Store
from ..run import session_index
from ..run.selectors import select_uuids, uuids_in
from .session_args import period


def cmd_changes(args) -> int:
    uuids = select_uuids(args.session) if args.session else uuids_in(period(args.since))
    # the values from the session index: no session is decoded (run/value_index.py)
    series, by_uuid = session_index.values(uuids)
    found = steps_in(series, replace(DEFAULT_POLICY, max_pvalue=args.pvalue))
    if not found.series:
        raise SessionError("no performance values in the stored sessions"
                           + ("" if args.session else f" of the last {args.since}"))
    reported = Reported(results_dir() / "history" / "reported-changes.json")
    new = reported.new(found.changes)
    store = Store()
    for c in sorted(found.changes if args.all else new,
                    key=lambda c: (not c.worse, c.series.build, c.series.check)):
        print(("NEW " if c in new else "    ") + c.line())
        print("\n".join(step_software(c, by_uuid, store)))
    for line in store.damage_lines():
        print(f"mpimatrix changes: {line}")
    points = max(len(s.points) for s in found.series)
    print(f"{len(found.series)} series over up to {points} session(s): "
          f"{len(found.changes)} step(s), {len(new)} new ({sum(c.worse for c in new)} for "
          "the worse)")
    if not args.dry_run:
        reported.remember(found.changes)
    return 1 if any(c.worse for c in new) else 0


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
