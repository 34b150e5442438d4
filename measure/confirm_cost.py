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
on one set of nights, not on two runs at different hours. The same for unchanged and for
injected nights apart (a site's usual night is unchanged; an injected night's measuring
again is what detecting its step costs), and, given several stores, for them together.

    .venv/bin/python measure/confirm_cost.py /tmp/gate-store [/tmp/other-store ...] \
        --vary confirm_rounds=3 [--baseline FIELD=VALUE,...]

`--baseline` prices against another setting than the default gate's, e.g. the whole-build
tolerances before 2026-12-02 (`--baseline build_floor=0.15,build_sigmas=4`; the modes of
that gate are no longer settings).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from pathlib import Path

from mpimatrix.validation.api import (
    Experiment,
    Store,
    load,
    require_at_least_one,
    split,
    to_confirm,
    variation,
    varied_policy,
)

NightMinutes = tuple[float, float]  # minutes of session, of measuring again


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store", type=Path, nargs="+")
    p.add_argument("--bless", type=int, default=5)
    p.add_argument("--vary", action="append", default=[],
                   help="GatePolicy fields, FIELD=VALUE[,...]; repeatable (the baseline "
                        "is always the first)")
    p.add_argument("--baseline", default="", metavar="FIELDS",
                   help="the setting the others are priced against, FIELD=VALUE[,...] "
                        "(default: the default gate)")
    p.add_argument("--confirm-samples", type=int, metavar="K",
                   help="price the --vary settings' measuring again at K samples of each "
                        "test (`mpimatrix run --confirm-repeats K`) instead of the stored "
                        "confirmations' own; the baseline keeps them")
    args = p.parse_args(argv)
    require_at_least_one(p, args, "confirm_samples")
    baseline = args.baseline
    if baseline == "pre-2026-12":
        p.error("--baseline pre-2026-12: the whole-build modes of the gate before 2026-12-02 "
                "are no longer settings; --baseline build_floor=0.15,build_sigmas=4 prices "
                "its tolerances")
    try:
        for vary in (baseline, *args.vary):
            variation(vary)
    except ValueError as e:
        p.error(str(e))
    settings = list(dict.fromkeys([baseline, *args.vary]))
    # per setting, by injected: every store's nights, (session, measuring again) minutes
    pooled: dict[str, dict[bool, list[NightMinutes]]] = {v: {False: [], True: []} for v in settings}
    for store in args.store:
        for vary, nights in store_costs(store, args.bless, settings,
                                        args.confirm_samples).items():
            for injected, minutes in nights.items():
                pooled[vary][injected] += minutes
    if len(args.store) > 1:
        print(f"the {len(args.store)} stores together:")
        print_costs(pooled)
    return 0


def store_costs(store: Path, bless: int, settings: list[str], samples: int | None = None
                ) -> dict[str, dict[bool, list[NightMinutes]]]:
    """Per setting, by injected: each night's minutes of session and of measuring
    again; printed. `samples`: the settings after the first (the baseline) measure each test
    again that many times (its minutes scale with them: a confirmation's fixed part, a
    ReFrame start, is under 0.1 min here)."""
    stored = Store(store).nights(rounds=1)  # each with its first round of measuring again
    if not stored:
        sys.exit(f"{store}: no stored sessions (reports/*.json)")
    bless_from, later = split(stored, bless)
    nights = [load(n.report) for n in later]
    first_rounds = {n.uuid: n.confirmations[0] for n in later if n.confirmations}
    per_test, repeats = {}, []
    for s in nights:
        if (conf := first_rounds.get(s.uuid)) is None:
            continue
        measured = load(conf)
        # a test measured again is one name (ReFrame's --repeat makes a case per sample)
        if (tests := len({c.name for c in measured.cases})) and measured.elapsed:
            per_test[s.uuid] = measured.elapsed / 60 / tests
            repeats.append(max(Counter((c.name, c.environ) for c in measured.cases).values()))
    if not per_test:
        sys.exit(f"{store}: no stored confirmation with its start and end times")
    usual = statistics.median(per_test.values())
    session = statistics.fmean(s.elapsed / 60 for s in nights)
    print(f"{store}: {len(nights)} nights after {len(bless_from)} blessed; session "
          f"{session:.2f} min a night; one test measured again on every build {usual:.3f} "
          f"min (median over {len(per_test)} confirmations) at {max(repeats)} samples of "
          f"each test" + (f"; other settings priced at {samples}" if samples else ""))
    out: dict[str, dict[bool, list[NightMinutes]]] = {}
    for vary in settings:
        refset = Experiment.bless([n.report for n in bless_from], varied_policy(vary)).references
        out[vary] = {False: [], True: []}
        scale = samples / max(repeats) if samples and vary != settings[0] else 1.0
        for s, night in zip(nights, later, strict=True):
            tests = {c.name for c in to_confirm(load(night.report), refset)}
            out[vary][bool(night.injected)].append(
                (s.elapsed / 60, scale * len(tests) * per_test.get(s.uuid, usual)))
    print_costs(out)
    return out


def print_costs(costs: dict[str, dict[bool, list[NightMinutes]]]) -> None:
    """Per setting: the minutes a night against the first setting's (the baseline),
    over every night, then unchanged and injected nights apart. A site's nights are
    mostly unchanged: theirs is the usual night's price, while an injected night's
    measuring again is what detecting its step costs."""
    name, base = next(iter(costs.items()))
    name = name or "the default gate"
    for vary, minutes in costs.items():
        every = minutes[False] + minutes[True]
        print(f"  {vary or 'the default gate'}: measured again "
              f"{statistics.fmean(a for _, a in every):.2f} min a night (on "
              f"{sum(a > 0 for _, a in every)} of {len(every)} nights); session and "
              f"measuring again {_total(every):.2f} min, "
              f"{_total(every) / _total(base[False] + base[True]) - 1:+.0%} against "
              f"{name}")
        for injected, what in ((False, "unchanged"), (True, "injected")):
            if minutes[injected]:
                print(f"    {what} nights ({len(minutes[injected])}): "
                      f"{_total(minutes[injected]):.2f} min, "
                      f"{_total(minutes[injected]) / _total(base[injected]) - 1:+.0%}")


def _total(nights: list[NightMinutes]) -> float:
    """Mean minutes a night, session and measuring again."""
    return statistics.fmean(s + a for s, a in nights)


if __name__ == "__main__":
    sys.exit(main())
