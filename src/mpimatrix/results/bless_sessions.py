"""Which stored sessions `mpimatrix bless` may take its references from, and why the
others are left out."""

from __future__ import annotations

from dataclasses import dataclass, field

from .measurements import Session


def not_a_reference(session: Session, mode: str | None) -> str:
    """Why a session cannot be blessed from ("" if it can): a confirmation re-measures
    only the values that looked slow, the injector slowed a build on purpose."""
    if session.confirms:
        return f"a confirmation of session {session.confirms} (only values that looked slow)"
    if session.injected_builds:
        return f"the regression injector slowed {', '.join(sorted(session.injected_builds))}"
    if mode and session.mode != mode:
        return f"mode {session.mode if session.mode != '?' else 'unknown'}, not {mode}"
    return ""


@dataclass
class BlessChoice:
    sessions: list[Session]
    system: str
    #: (session UUID, why it was left out), in the order the sessions were given
    left_out: list[tuple[str, str]] = field(default_factory=list)
    #: why nothing can be blessed ("" when the sessions will do)
    problem: str = ""


def choose(sessions: list[Session], mode: str | None, disturbed: dict[str, str],
           system: str | None = None) -> BlessChoice:
    """The sessions to bless from: not confirmations, not injected, of `mode` (when given),
    not among `disturbed` ({uuid: what disturbed it}; {} to take them too), all of one
    system (`system`, else the sessions' only one). `problem` says why none will do."""
    left_out, usable = [], []
    for s in sessions:
        why = not_a_reference(s, mode)
        (left_out.append((s.uuid, why)) if why else usable.append(s))
    if not usable:
        return BlessChoice([], "", left_out, f"none of the {len(sessions)} session(s) given "
                           "can be blessed from (see above); give sessions of unchanged runs")
    quiet = [s for s in usable if s.uuid not in disturbed]
    left_out += [(s.uuid, disturbed[s.uuid]) for s in usable if s.uuid in disturbed]
    if not quiet:
        return BlessChoice([], "", left_out, "every session given was disturbed by other "
                           "programs; run new ones on a quiet machine (or --include-disturbed)")
    if system is None:
        systems = set().union(*(s.systems for s in quiet))
        if len(systems) != 1:
            return BlessChoice(quiet, "", left_out, f"the sessions cover systems "
                               f"{sorted(systems) or 'none'}; choose one with --system")
        system = systems.pop()
    return BlessChoice(quiet, system, left_out)
