"""`mpimatrix run --requirements FILE`: measure what the acceptance requirements need on
this system, then a verdict on each and the record, whatever could run: a requirement
this system cannot measure (its placement hosted by no partition, its suite on no build,
the file's system not this one) is UNMEASURED with the reason, in the record too."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

from ..builds.bench_sources import SOURCE_ENVS
from ..builds.sources import load_builds
from ..paths import reports_dir
from ..placement import can_host, generate_placements
from ..results.acceptance.requirements import Requirements
from ..results.acceptance.scope import Scope
from ..results.measurements import load
from ..results.sessions import SessionError, load_report
from ..rfm.placements import partition_shape
from ..run.session import NOT_RUN, run_session
from ..site.config import build_config
from ..site.partitions import current_system
from . import accept
from .outputs import output_dir, output_name


def _shape(part: dict):
    """(nodes, cores) of a partition of the generated configuration."""
    proc = part.get("processor") or {}
    return partition_shape(SimpleNamespace(
        extras=part.get("extras") or {}, features=part.get("features") or [],
        processor=SimpleNamespace(num_cpus=proc.get("num_cpus")) if proc else None,
        scheduler=SimpleNamespace(registered_name=part.get("scheduler", ""))))


def here(include_disturbed: bool = False) -> Scope:
    """What this host's system can measure: its name, the placements its (chosen)
    partitions host, the suites some build has (or gets built from sources)."""
    system = current_system(build_config()["systems"]) or {"name": "?", "partitions": []}
    shapes = [_shape(p) for p in system["partitions"]]
    hosted = {p.name for p in generate_placements(shapes)
              if any(can_host(s, p) for s in shapes)}
    suites = {s for b in load_builds().builds for s in b.benchmarks}
    suites |= {s for s, env in SOURCE_ENVS.items() if os.environ.get(env)}
    return Scope(here=system["name"], placements=frozenset(hosted),
                 suites=frozenset(suites), loads=accept.session_loads(),
                 include_disturbed=include_disturbed)


def _system_forced(reframe_args: list[str]) -> bool:
    """Whether ReFrame is told which system to take (then it is not the host's)."""
    return bool(os.environ.get("RFM_SYSTEM")) or any(
        a == "--system" or a.startswith("--system=") for a in reframe_args)


def _latest() -> str:
    try:
        return os.readlink(reports_dir() / "latest.json")
    except OSError:
        return ""


def run_with_requirements(args, reqs: Requirements) -> int:
    out = output_dir(None)
    name = output_name(accept.record_name(reqs), "the record name")
    if not _system_forced(args.reframe_args):
        scope = here(args.include_disturbed)
        if scope.here != reqs.system:
            print(f"mpimatrix: the requirements {reqs.path} are for system {reqs.system!r}; "
                  f"this host's system is {scope.here!r}: nothing to run here, every "
                  "requirement is unmeasured")
            return accept.evaluate(reqs, [], out, name, scope=scope)
    before = _latest()
    rc = run_session(args.mode, args.only, [*args.reframe_args, *accept.run_options(reqs)],
                     confirm_repeats=0, wait=not args.no_wait, partitions=args.partition,
                     sources=args.sources)
    if rc not in (0, 1, 4, NOT_RUN):
        return rc
    session = None
    if _latest() not in ("", before):
        try:
            session = load(load_report(reports_dir() / "latest.json"))
        except SessionError:
            session = None
    if rc == NOT_RUN and session is not None and session.cases:
        return rc  # measured, but not stored: said above
    sessions = [session] if session is not None and session.cases else []
    if not sessions:
        print("mpimatrix: nothing measured the requirements: each is unmeasured, with the "
              "reason")
    print(f"\nmpimatrix: acceptance requirements {Path(reqs.path)}:")
    scope = here(args.include_disturbed)
    if _system_forced(args.reframe_args):
        scope = Scope(loads=scope.loads, include_disturbed=args.include_disturbed)
    return accept.evaluate(reqs, sessions, out, name, scope=scope)
