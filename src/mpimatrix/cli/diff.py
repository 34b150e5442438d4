"""`mpimatrix diff OLD NEW`: what changed in the software between two stored sessions,
per build, in the words of its package manager (Spack specs, Debian packages, wheels,
the build's compiler, launcher, environment and benchmarks) and the machine's."""

from __future__ import annotations

import re

from ..results.changed_since import no_comparison, session_changes
from ..results.measurements import load
from ..results.sessions import SessionError
from ..results.software_diff import MACHINE, SoftwareChange
from ..results.software_store import Store
from ..run.selectors import parse, select_one


def change_lines(changes: list[SoftwareChange], indent: str = "  ") -> list[str]:
    """The changes grouped: the machine's first, then each build's."""
    out = []
    for build in dict.fromkeys(c.build for c in changes):
        out.append(f"{indent}{'the machine (every build)' if build == MACHINE else build}:")
        out += [f"{indent}  {c.text}" for c in changes if c.build == build]
    return out


def build_pattern(text: str | None) -> re.Pattern | None:
    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as err:
        raise SessionError(f"--build {text!r} is not a regular expression ({err})") from None


def cmd_diff(args) -> int:
    parse(args.old, "OLD"), parse(args.new, "NEW")  # both checked before either is read
    pattern = build_pattern(args.build)
    old, new = load(select_one(args.old, "OLD")), load(select_one(args.new, "NEW"))
    store = Store()
    changes = session_changes(old, new, store=store)
    head = f"session {old.uuid[:8]} ({old.date} UTC) -> session {new.uuid[:8]} ({new.date} UTC)"
    if changes is None:
        raise SessionError(f"{head}: nothing compared: {no_comparison(old, new, store)}")
    if pattern is not None:
        changes = [c for c in changes if c.build == MACHINE or pattern.search(c.build)]
    print(head)
    lines = change_lines(changes) or ["  no recorded software change"]
    print("\n".join(lines + store.damage_lines()))
    if changes:
        builds = {c.build for c in changes} - {MACHINE}
        print(f"{len(changes)} change(s): {len(builds)} build(s)"
              + (", the machine" if MACHINE in {c.build for c in changes} else ""))
    return 0

def register(sub) -> None:
    s = sub.add_parser("diff", help="what changed in the software between two stored "
                       "sessions, per build")
    s.add_argument("old", metavar="OLD", help="the earlier session: its UUID, the first 8 "
                   "characters of it, `latest`, or a period holding one session")
    s.add_argument("new", metavar="NEW", help="the later session (the same forms)")
    s.add_argument("--build", metavar="REGEX", help="only the builds whose name matches "
                   "(the machine's changes are always shown)")
    s.set_defaults(func=cmd_diff)
