"""`mpimatrix prune`: the store's retention rule run by hand (`mpimatrix run` runs it after
every session): full sessions older than --keep-full leave ReFrame's database and the
reports folder; their values stay in the session index."""

from __future__ import annotations

from ..paths import results_dir
from ..run.lock import store_lock
from ..run.prune import DEFAULT_KEEP, KEEP_ENV, compact, keep_seconds, prune, retention


def cmd_prune(args) -> int:
    keep = keep_seconds(args.keep_full, "--keep-full") if args.keep_full else retention()
    if keep is None:
        print(f"mpimatrix prune: {'--keep-full' if args.keep_full else KEEP_ENV} is `all`: "
              "every full session is kept")
        return 0
    with store_lock(results_dir(), wait=not args.no_wait):
        done = prune(keep, dry_run=args.dry_run)
        if args.compact and not args.dry_run and done.sessions:
            done.compacted = compact()
    print(("would drop " if args.dry_run else "") + done.line())
    return 0


def register(sub) -> None:
    s = sub.add_parser("prune", help="drop full sessions older than --keep-full from "
                       "ReFrame's database and the reports (their values are kept)")
    s.add_argument("--keep-full", metavar="AGE",
                   help=f"keep full sessions this long: 30d, 12w, or `all` (default "
                   f"{KEEP_ENV}, else {DEFAULT_KEEP})")
    s.add_argument("--dry-run", action="store_true", help="say what would be dropped")
    s.add_argument("--compact", action="store_true",
                   help="then rebuild ReFrame's database file to its new size (SQLite "
                   "VACUUM; needs as much free disk as the file); once, after dropping "
                   "months: nightly pruning reuses the freed pages")
    s.add_argument("--no-wait", action="store_true",
                   help="if `mpimatrix run` uses the store, stop (exit 3) instead of waiting")
    s.set_defaults(func=cmd_prune)
