#!/usr/bin/env python3
"""What measuring again costs a night with other gate settings, on a stored experiment's
own nights.

Reads a results store of `mpimatrix validate gate`, blesses from its first B unchanged
sessions once per setting (as `measure/gate_nights.py` does) and asks, for every later
session, which test cases each setting would measure again (`results/night.py`
`to_confirm`: the gate's own choice). A confirmation runs each chosen test on every build,
so its cost is its number of distinct tests times what one took that night: the stored
first confirmation's minutes over its distinct tests (the night's median over the nights
that confirmed, where a night confirmed nothing). Prints per setting the mean minutes a
night of session and of measuring again, the nights that measure anything, and the total
against the default gate's on the same nights: the machine time a setting costs, measured
on one set of nights, not on two runs at different hours.

    .venv/bin/python measure/confirm_cost.py /tmp/gate-store \
        --vary build_against_others=1,build_floor=0.06,build_sigmas=2,build_confirm_pooled=1
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path

from mpimatrix.results import references
from mpimatrix.results.measurements import load
from mpimatrix.results.night import to_confirm
from mpimatrix.results.policy import DEFAULT_POLICY, variation
from mpimatrix.validation.replay import injected_of, read_store


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store", type=Path)
    p.add_argument("--bless", type=int, default=5)
    p.add_argument("--vary", action="append", default=[],
                   help="GatePolicy fields, FIELD=VALUE[,...]; repeatable (the default gate "
                        "is always the first)")
    args = p.parse_args(argv)
    reports, first_rounds = read_store(args.store)
    if not reports:
        sys.exit(f"{args.store}: no stored sessions (reports/*.json)")
    unchanged = [i for i, r in enumerate(reports) if not injected_of(r)][:args.bless]
    raw = [r for i, r in enumerate(reports) if i not in unchanged]
    nights = [load(r) for r in raw]
    per_test = {}
    for s in nights:
        if (conf := first_rounds.get(s.uuid)) is None:
            continue
        measured = load(conf)
        # a test measured again is one name (ReFrame's --repeat makes a case per sample)
        if (tests := len({c.name for c in measured.cases})) and measured.elapsed:
            per_test[s.uuid] = measured.elapsed / 60 / tests
    if not per_test:
        sys.exit(f"{args.store}: no stored confirmation with its start and end times")
    usual = statistics.median(per_test.values())
    session_min = statistics.fmean(s.elapsed / 60 for s in nights)
    print(f"{args.store}: {len(nights)} nights after {len(unchanged)} blessed; session "
          f"{session_min:.2f} min a night; one test measured again on every build "
          f"{usual:.3f} min (median over {len(per_test)} confirmations)")
    base = None
    for vary in ["", *args.vary]:
        policy = dataclasses.replace(DEFAULT_POLICY, **variation(vary))
        refset = references.bless_in_memory([reports[i] for i in unchanged], policy)
        minutes, measured = [], 0
        for s, report in zip(nights, raw, strict=True):
            tests = {c.name for c in to_confirm(refset.applied(report), refset)}
            measured += bool(tests)
            minutes.append(len(tests) * per_test.get(s.uuid, usual))
        again = statistics.fmean(minutes)
        total = session_min + again
        base = base or total
        print(f"  {vary or 'the default gate'}: measured again {again:.2f} min a night "
              f"(on {measured} of {len(nights)} nights); session and measuring again "
              f"{total:.2f} min, {total / base - 1:+.0%} against the default gate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
