"""What the verdicts need besides the samples: which system was measured, what this
system can measure at all (to say why a requirement was not measured), and which
sessions other programs disturbed (a verdict resting on their samples is at most
inconclusive, unless the user includes them on purpose)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..measurements import Session
from .requirements import Requirement, Requirements

SUITE_NAMES = {"osu": "OSU", "imb": "IMB"}


@dataclass(frozen=True)
class SessionLoad:
    disturbed: bool
    text: str  # what other programs used, as `mpimatrix run` recorded it


@dataclass(frozen=True)
class Scope:
    """`here`: the system of this host, when the verdicts follow a run on it (None for
    stored sessions); `placements` and `suites`: what this system's partitions host and
    some build has (None: unknown); `loads`: the machine load recorded per session UUID;
    `include_disturbed`: the user counts disturbed sessions' samples as any other."""

    here: str | None = None
    placements: frozenset[str] | None = None
    suites: frozenset[str] | None = None
    loads: dict[str, SessionLoad] = field(default_factory=dict)
    include_disturbed: bool = False

    def disturbed(self, uuid: str) -> SessionLoad | None:
        load = self.loads.get(uuid)
        return load if load is not None and load.disturbed else None


def system_reason(reqs: Requirements, sessions: list[Session], scope: Scope) -> str:
    """Why the requirements' system was not measured ('' when it was, or may be)."""
    if scope.here is not None and scope.here != reqs.system:
        return f"system {reqs.system!r} is not this system ({scope.here})"
    ran = sorted({c.system for s in sessions for c in s.cases})
    if ran and reqs.system not in ran:
        return (f"system {reqs.system!r} was not measured: the sessions ran on "
                f"{', '.join(ran)}")
    return ""


NOT_RUN = "no test case ran at placement {}: no partition of the system hosts it"


def unmeasurable(req: Requirement, scope: Scope) -> list[str]:
    """Why this system cannot measure a requirement ([] when it can, or unknown)."""
    out = []
    if scope.placements is not None and req.placement not in scope.placements:
        hosted = ", ".join(sorted(scope.placements)) or "no placement"
        what = "no internode partition: " if req.placement == "internode" else ""
        out.append(f"{NOT_RUN.format(req.placement)} ({what}{scope.here or 'the system'} "
                   f"hosts {hosted})")
    if scope.suites is not None and req.suite not in scope.suites:
        out.append(f"no {SUITE_NAMES[req.suite]} on any build (`mpimatrix run --sources` "
                   "or `mpimatrix bench-build` builds it)")
    return out


def not_run_reason(req: Requirement, scope: Scope) -> str:
    """Why no test case ran at the requirement's placement."""
    return "; ".join(unmeasurable(req, scope)) or (
        f"{NOT_RUN.format(req.placement)}, or the sessions did not select it")
