"""`mpimatrix validate`: the gate and the history measured on this machine (what a site
runs at acceptance), and replays of stored sessions through the gate."""

from __future__ import annotations

import argparse

from ..validation import gate_rates, history_steps, replay, unchanged, year

#: what each experiment is, its module (whose main takes the rest of the command line)
EXPERIMENTS = {
    "gate": (gate_rates, "false alarms and detection of the gate: unchanged and injected "
             "sessions run for real in a new results store"),
    "history": (history_steps, "does `mpimatrix changes` find an injected step in a "
                "nightly series, and only it (sessions run for real)"),
    "replay": (replay, "a `validate gate` store judged again with other gate settings; "
               "no new runs"),
    "year": (year, "a year of nightlies generated from recorded sessions into a new "
             "results store (`--nights 365 --builds 40`), for measuring the commands on it"),
    "unchanged": (unchanged, "how many unchanged nights end red, on recorded sessions; "
                  "no new runs"),
}


def cmd_validate(args) -> int:
    module = EXPERIMENTS[args.experiment][0]
    return module.main(args.args, prog=f"mpimatrix validate {args.experiment}")


def register(sub) -> None:
    s = sub.add_parser("validate", help="measure the gate and the history on this machine "
                       "(`validate gate`: false alarms and detection)",
                       description="\n".join(f"  {k:10s} {v[1]}" for k, v in EXPERIMENTS.items()),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("experiment", choices=sorted(EXPERIMENTS))
    s.add_argument("args", nargs=argparse.REMAINDER,
                   help="the experiment's options (`mpimatrix validate gate --help`)")
    s.set_defaults(func=cmd_validate)
