"""`mpimatrix store sync|status`: the shared store on PostgreSQL (`monitoring: store_url:`
in the site settings, MPIMATRIX_STORE_URL): upload what of the local session index it
lacks (a night the database was down), and say what it holds per system."""

from __future__ import annotations

from ..results.sessions import SessionError
from ..run import central_store, session_index
from ..run.store_db import StoreDown, url
from ..run.stored import reframe_index
from ..urls import shown_url


def _reframe_only() -> list[str]:
    """The sessions only ReFrame's database holds (not read by any command yet)."""
    have = central_store.local_uuids()
    return [u for u, _ in reframe_index() if u not in have]


def cmd_store(args) -> int:
    try:
        if args.action == "status":
            print("\n".join(central_store.status()))
            print(f"ReFrame's database: {len(_reframe_only())} session(s) not in the local "
                  "index (`mpimatrix store sync` indexes and uploads them)")
            return 0
        for uuid in _reframe_only():  # one at a time: a night of 40 builds is 0.3 GB
            full = session_index.from_reframe(uuid)
            if full is not None:
                session_index.add([full])
        where, sent = central_store.sync()
    except StoreDown as err:
        raise SessionError(f"the shared store {shown_url(url())} does not answer ({err}); the "
                           "sessions stay in the local store: run `mpimatrix store sync` "
                           "again when it is up") from None
    print(f"uploaded {len(sent)} session(s) to {where}")
    return 0


def register(sub) -> None:
    s = sub.add_parser("store", help="the shared PostgreSQL store: sync (upload what the "
                       "local store has and it lacks), status")
    s.add_argument("action", choices=("sync", "status"),
                   help="sync: upload the sessions of this checkout the shared store lacks "
                   "(exit 2 when it does not answer: they stay local); status: sessions per "
                   "system, and how many of this checkout's are not up yet")
    s.set_defaults(func=cmd_store)
