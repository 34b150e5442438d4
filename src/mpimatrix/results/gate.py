"""The regression gate: which performance values of a session are regressions.

A session's value is the best of its samples (the smallest time, the largest rate):
noise on a shared node only adds time, so the best of 3 interleaved passes moved 4.9 %
between sessions here against 17.8 % for one pass (docs/noise.md). Bless does the same.

Where a partition ran three or more builds, each value is judged against the host
(host.py): divided by the session's host factor of its class of values (small- or
large-message times or rates), so that a host running 20 % slow for an hour, or
running its small messages 4.6x slower, moves no verdict, while one build's slowdown
stays its own. A slow host is reported on its own line (the machine, not a build), and
each build as a whole gets a verdict too (gate_builds.py), against the median of the
other builds (the median build where most builds were outside together), as are the
values of a build that regressed as a whole.

ReFrame checks each sample against its reference as it runs. When a session's best is
outside its tolerance, `mpimatrix run` measures the test case again on every build (a
confirmation session stored with `confirms=<uuid>`), and the value is a regression only
if the confirmation's best, against its own host factor, is still outside (in a build
that regressed as a whole: at its with-build tolerance, GatePolicy.with_build_*). A whole
build is a regression when the geometric mean of its session factor and each round's
confirmation factor is outside. The database keeps every sample.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from functools import partial

from .gate_builds import BuildVerdict, Host, build_verdicts, hosts, slowdown_table
from .measurements import Case, Session, ValueKey
from .reference_set import NO_REFERENCES, ReferenceSet
from .status import Status
from .value_verdict import ValueVerdict

REGRESSION = Status.REGRESSION
WATCH = Status.WATCH
NOISE = Status.NOISE
PASS = Status.PASS
NOT_GATED = Status.NOT_GATED
NO_REFERENCE = Status.NO_REFERENCE


@dataclass
class Judgement:
    verdicts: list[ValueVerdict]
    hosts: list[Host]
    builds: list[BuildVerdict]

    @property
    def regressions(self) -> list[str]:
        """One line per confirmed regression: whole builds first, then single values."""
        return ([b.line() for b in self.builds if b.status == REGRESSION]
                + [v.line() for v in self.verdicts if v.status == REGRESSION])

    @property
    def watched(self) -> list[str]:
        """One line per value on watch (results/watch.py): not a regression yet."""
        return [v.line() for v in self.verdicts if v.status == WATCH]


def judge(session: Session, confirmations: list[Session] | None = None,
          references: ReferenceSet = NO_REFERENCES) -> Judgement:
    """One verdict per performance value of the session (its passes pooled), the host
    factor of each partition and a verdict per build; the samples of the confirmation
    sessions decide the values and builds whose session best failed. Each step below
    returns new verdicts. `references`: the blessed spreads and build tolerances, and
    the policy."""
    policy = references.policy
    measured = _measured(session, references)
    confirmed = _confirmed(confirmations or [], measured)
    names = {v.environ: v.build for v in measured.values()}
    first_rows = slowdown_table(measured.values(), lambda v: v.samples, policy)
    first_hosts = hosts(first_rows, names, references)
    builds = build_verdicts(first_hosts, names, references)
    values = [_first(v, first_hosts[v.partition]) for v in measured.values()]
    # the confirmation: its own host factors and build factors, from what it measured
    again_rows = slowdown_table(values, lambda v: confirmed.get(v.key, ()), policy)
    conf_hosts = hosts(again_rows, names, references)
    conf_builds = {(b.partition, b.build): b.factor
                   for b in build_verdicts(conf_hosts, names, references)}
    values = [_confirmed_verdict(v, confirmed.get(v.key), conf_hosts[v.partition])
              for v in values]
    # each round's own build factors, pooled with the session's; with one round they are
    # the confirmation's, computed above
    rounds = ({k: (f,) for k, f in conf_builds.items()} if len(confirmations or []) < 2
              else _round_factors(confirmations or [], measured, values, names, references))
    builds = [_build_decided(b, conf_builds.get((b.partition, b.build)),
                             rounds.get((b.partition, b.build), ())) for b in builds]
    regressed = {(b.partition, b.build): b for b in builds if b.status == REGRESSION}
    values = [_with_build(v, confirmed.get(v.key, ()),
                          first_hosts[v.partition].with_build_divisor(
                              v.size, v.higher_is_better, v.environ),
                          conf_hosts[v.partition].with_build_divisor(
                              v.size, v.higher_is_better, v.environ),
                          regressed[v.partition, v.build].together)
              if (v.partition, v.build) in regressed else v for v in values]
    builds = [replace(b, regressed_values=sum(
        v.status == REGRESSION for v in values if (v.partition, v.build) == (b.partition, b.build)))
        for b in builds]
    hosts_ = [replace(first_hosts[p], confirm_factor=conf_hosts[p].factor)
              for p in sorted(first_hosts)]
    return Judgement(sorted(values, key=lambda v: (v.build, v.check, v.placement, v.var)),
                     hosts_, builds)


def _measured(session: Session, references: ReferenceSet) -> dict[ValueKey, ValueVerdict]:
    """Each value with the session's samples of it (every run pooled)."""
    samples: dict[ValueKey, list[float]] = {}
    out: dict[ValueKey, ValueVerdict] = {}
    for case in session.cases:
        for pv in case.values:
            if pv.value is None:
                continue
            k = case.value_key(pv.var)
            if k not in out:
                out[k] = ValueVerdict.of(case, pv, references.reference_of(case, pv),
                                         references.blessed_of(case, pv.var), references.policy)
            samples.setdefault(k, []).append(float(pv.value))
    return {k: replace(v, samples=tuple(samples[k])) for k, v in out.items()}


def _confirmed(confirmations: list[Session], measured: dict
               ) -> dict[ValueKey | None, tuple]:
    """The confirmation sessions' samples of the session's values (looked up by a
    verdict's key, which may be None)."""
    out: dict[ValueKey, list[float]] = {}
    for conf in confirmations:
        for case in conf.cases:
            for pv in case.values:
                k = case.value_key(pv.var)
                if k in measured and pv.value is not None:
                    out.setdefault(k, []).append(float(pv.value))
    return {k: tuple(v) for k, v in out.items()}


def _first(v: ValueVerdict, h: Host) -> ValueVerdict:
    """Against the session's host factor of the value's class; whether the best sample
    was outside."""
    v = replace(v, host=h.divisor(v.size, v.higher_is_better) if v.host_judged else None)
    return replace(v, first_failed=bool(v.samples) and v.outside(v.first))


def _confirmed_verdict(v: ValueVerdict, confirmation: tuple | None, h: Host) -> ValueVerdict:
    """With the confirmation's samples where the first best failed, and its status."""
    if v.first_failed and confirmation is not None:
        v = replace(v, confirmation=confirmation,
                    confirm_host=h.divisor(v.size, v.higher_is_better))
    return replace(v, status=_decide(v))


def _decide(v: ValueVerdict) -> Status:
    if not v.reference:
        return NO_REFERENCE
    if v.lower is None and v.upper is None:
        return NOT_GATED
    if not v.first_failed:
        return PASS
    return REGRESSION if v.outside(v.value) else NOISE


def _round_factors(confirmations: list[Session], measured: dict, values: list[ValueVerdict],
                   names: dict[str, str], references: ReferenceSet
                   ) -> dict[tuple[str, str], tuple[float, ...]]:
    """Each build's factor in each confirmation session on its own, in order: the draws
    a build verdict pools (one per round of measuring again)."""
    out: dict[tuple[str, str], list[float]] = {}
    for conf in confirmations:
        samples = _confirmed([conf], measured)
        rows = slowdown_table(values, partial(_samples_of, samples), references.policy)
        for b in build_verdicts(hosts(rows, names, references), names, references):
            out.setdefault((b.partition, b.build), []).append(b.factor)
    return {k: tuple(v) for k, v in out.items()}


def _samples_of(samples: dict, v: ValueVerdict) -> tuple:
    return samples.get(v.key, ())


def _build_decided(b: BuildVerdict, confirm_factor: float | None,
                   rounds: tuple[float, ...] = ()) -> BuildVerdict:
    """A build outside in the session is a regression when the geometric mean of its
    session factor and each round's (one draw each; with no rounds given, the
    confirmation's) is outside too, or when nothing was measured again."""
    pooled = (statistics.geometric_mean([b.factor, *(rounds or (confirm_factor,))])
              if rounds or confirm_factor is not None else None)
    status = (PASS if not b.first_failed else REGRESSION
              if pooled is None or pooled > 1 + b.tolerance else NOISE)
    return replace(b, confirm_factor=confirm_factor, status=status, confirm_rounds=rounds,
                   pooled=pooled)


def _with_build(v: ValueVerdict, confirmation: tuple, divisor: float | None,
                confirm_divisor: float | None, median_build: bool = False) -> ValueVerdict:
    """A value of a build that regressed as a whole: a regression when, divided by what
    the build it was judged against showed in the value's class (Host.with_build_divisor,
    in the session and in the confirmation), the geometric mean of its session best and
    its confirmation best is outside its with-build tolerance."""
    if v.status not in (PASS, NOISE) or not v.host_judged:
        return v
    trial = replace(v, host=divisor, confirmation=confirmation, with_build=True,
                    with_median_build=median_build,
                    confirm_host=confirm_divisor if confirmation else None)
    if trial.outside(trial.value, trial.with_build_share):
        return replace(trial, status=REGRESSION)
    return v


def failed_first(session: Session, references: ReferenceSet = NO_REFERENCES) -> list[Case]:
    """The test cases of a session with a value whose best sample, against the host,
    is outside its tolerance, and every test case of a build outside its build
    tolerance (those get measured again)."""
    j = judge(session, None, references)
    failed = {v.key for v in j.verdicts if v.first_failed}
    builds = {(b.partition, b.build) for b in j.builds if b.first_failed}
    return [c for c in session.cases
            if any(c.value_key(pv.var) in failed for pv in c.values)
            or (c.partition, c.build) in builds]
