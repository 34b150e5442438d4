"""`mpimatrix bless`: performance references from several stored sessions."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from ..paths import references_dir
from ..results import bless_sessions, blessing, floors
from ..results.measurements import as_sessions
from ..results.policy import DEFAULT_POLICY, POLICY_KEY, from_record, variation
from ..results.reference_set import ReferenceSet
from ..results.sessions import SessionError
from ..run import machine
from ..run.nights import load_record_path
from .session_args import sessions_from_args


def cmd_bless(args) -> int:
    sessions = as_sessions(sessions_from_args(args))
    disturbed = {} if args.include_disturbed else {
        uuid: machine.Load.from_record(rec).text()
        for uuid, rec in machine.loads(load_record_path()).items()
        if isinstance(rec, dict) and rec.get("disturbed")}
    choice = bless_sessions.choose(sessions, args.mode, disturbed, args.system)
    for uuid, why in choice.left_out:
        print(f"mpimatrix bless: left out session {uuid}: {why}")
    if choice.problem:
        raise SessionError(choice.problem)
    sessions, system = choice.sessions, choice.system
    runs = sum(s.runs for s in sessions)
    if runs < 5:
        print(f"mpimatrix bless: WARNING: {runs} session run(s); with fewer than 5 the "
              "spread of a value is a guess and values with under 3 samples are not gated")
    out = Path(args.output) if args.output else references_dir() / f"{system}.yaml"
    refs, stats = ({}, {}) if args.replace else blessing.read(out)
    # the settings the file was blessed with, changed by --vary (--replace: the defaults)
    policy = replace(from_record(stats.get(POLICY_KEY)), **args.vary)
    blessed = blessing.bless(sessions, args.tolerance, system,
                               refs or blessing.CommentedMap(), stats, policy)
    blessing.write(blessed, out)
    total = blessed.gated + len(blessed.not_gated)
    print(f"wrote {out}: {total} value(s) from {runs} run(s), {blessed.gated} gated "
          f"(tolerance from the spread, floor {args.tolerance:.0%}), "
          f"{len(blessed.not_gated)} reported but not gated")
    if changed := policy.changed():
        print(f"  gate settings other than the defaults: {changed}")
    judged = ReferenceSet.of(blessed.refs, blessed.stats)
    if line := floors.summary(floors.value_floors(judged), floors.build_floors(judged)):
        print(f"  {line}")
    for part, factors in sorted(blessed.hosts.items()):
        print(f"  {part}: samples against the host; host factor of each session "
              + " ".join(f"{f:.3f}" for f in factors.values()))
    for line in blessed.not_gated:
        print(f"  not gated: {line}")
    for line in blessed.kept_by_hand:
        print(f"  kept: {line}")
    return 0


def register(sub) -> None:
    s = sub.add_parser("bless", help="write references from stored runs (a value needs 3 "
                       "samples, 5 or more recommended)")
    s.add_argument("--session", action="append", metavar="SESSION", help="stored session: "
                   "UUID, its first 8 characters, `latest` or a period (repeatable)")
    s.add_argument("--report", action="append", help="ReFrame JSON report (repeatable)")
    s.add_argument("--since", metavar="AGE", help="the stored sessions of the last AGE (7d, "
                   "2w): a week of nightlies holds the night-to-night noise the tolerances "
                   "must cover, which back-to-back sessions miss")
    s.add_argument("--mode", help="only sessions of this mpimatrix run mode (e.g. nightly)")
    s.add_argument("--system", help="system to bless (default: the sessions' one)")
    s.add_argument("--tolerance", type=float, default=DEFAULT_POLICY.value_floor,
                   help="the smallest tolerance a value gets (default 0.3 = 30%%; a quiet "
                   "dedicated node allows 0.1); noisier values get a wider one from their "
                   "spread, up to 30%% or this floor")
    s.add_argument("--output", help="reference file (default results/references/<system>.yaml)")
    s.add_argument("--replace", action="store_true",
                   help="start from scratch instead of updating the file")
    s.add_argument("--include-disturbed", action="store_true",
                   help="also use sessions during which other programs loaded the machine")
    s.add_argument("--vary", type=_variation, default={}, metavar="FIELD=VALUE[,...]",
                   help="gate settings other than the defaults (GatePolicy fields, e.g. "
                   "build_floor=0.1), over those the file was blessed with; written beside "
                   "the references, and the gate judges with them")
    s.set_defaults(func=cmd_bless)


def _variation(text: str) -> dict:
    try:
        return variation(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
