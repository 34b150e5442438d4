"""`mpimatrix diff OLD NEW`: what changed in the software between two stored sessions,
per build, in the words of its package manager (Spack specs, Debian packages, wheels,
the build's compiler, launcher, environment and benchmarks) and the machine's."""

from __future__ import annotations

import re

from ..results.changed_since import NO_RECORD, session_changes
from ..results.measurements import load
from ..results.sessions import SessionError
from ..results.software_diff import MACHINE, SoftwareChange
from ..results.software_store import software_dir
from ..run.stored import stored_sessions


def change_lines(changes: list[SoftwareChange], indent: str = "  ") -> list[str]:
    """The changes grouped: the machine's first, then each build's."""
    out = []
    for build in dict.fromkeys(c.build for c in changes):
        out.append(f"{indent}{'the machine (every build)' if build == MACHINE else build}:")
        out += [f"{indent}  {c.text}" for c in changes if c.build == build]
    return out


def cmd_diff(args) -> int:
    old, new = (load(s) for s in stored_sessions([args.old, args.new]))
    changes = session_changes(old, new)
    head = f"session {old.uuid[:8]} ({old.date} UTC) -> session {new.uuid[:8]} ({new.date} UTC)"
    if changes is None:
        missing = [s.uuid for s in (old, new) if not s.software]
        raise SessionError(f"{head}: {NO_RECORD} in {software_dir()} for "
                           f"{', '.join(missing) or 'one of them'} (sessions run before "
                           "mpimatrix kept them, or by plain `reframe -r`); compare sessions "
                           "that `mpimatrix run` ran")
    if args.build:
        pattern = re.compile(args.build)
        changes = [c for c in changes if c.build == MACHINE or pattern.search(c.build)]
    print(head)
    if not changes:
        print("  no recorded software change")
        return 0
    print("\n".join(change_lines(changes)))
    builds = {c.build for c in changes} - {MACHINE}
    print(f"{len(changes)} change(s): {len(builds)} build(s)"
          + (", the machine" if MACHINE in {c.build for c in changes} else ""))
    return 0


def register(sub) -> None:
    s = sub.add_parser("diff", help="what changed in the software between two stored "
                       "sessions, per build")
    s.add_argument("old", metavar="OLD", help="the earlier session's UUID")
    s.add_argument("new", metavar="NEW", help="the later session's UUID")
    s.add_argument("--build", metavar="REGEX", help="only the builds whose name matches "
                   "(the machine's changes are always shown)")
    s.set_defaults(func=cmd_diff)
