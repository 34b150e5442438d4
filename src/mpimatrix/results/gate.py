"""The regression gate: which performance values of a session are regressions.

A session's value is the best of its samples (the smallest time, the largest rate):
noise on a shared node only adds time, so the best of 3 interleaved passes moved 4.9 %
between sessions here against 17.8 % for one pass (docs/noise.md). Bless does the same.

Where a partition ran three or more builds, each value is judged against the host
(host.py): divided by the session's host factor, so that a host running 20 %
slow for an hour moves no verdict, while one build's slowdown stays its own. A
slow host is reported on its own line (the machine, not a build), and each build
as a whole gets a verdict too (gate_builds.py), against the least-slowed build, as
are the values of a build that regressed as a whole.

ReFrame checks each sample against its reference as it runs. When a session's best is
outside its tolerance, `mpimatrix run` measures the test case again on every build (a
confirmation session stored with `confirms=<uuid>`), and the value is a regression only
if the confirmation's best, against its own host factor, is still outside (in a build
that regressed as a whole: at its with-build tolerance, GatePolicy.with_build_*). The
database keeps every sample.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace

from ..units import human_size
from . import host
from .gate_builds import BuildVerdict, Host, build_verdicts, hosts, slowdown_table
from .measurements import Case, PerfValue, Session, ValueKey
from .policy import DEFAULT_POLICY, GatePolicy
from .reference_set import blessed_record
from .statistics import best
from .status import Status

REGRESSION, WATCH, NOISE, PASS, NOT_GATED, NO_REFERENCE = Status


@dataclass(frozen=True)
class ValueVerdict:
    """The gate's verdict on one performance value of a session. Two tests, each with its
    own false-alarm rate: a value alone, outside its own tolerance in the session and in
    the confirmation; and, only in a build that regressed as a whole, each value again
    at its with-build tolerance (policy.with_build_*: so many blessed spreads, at least
    the floor, at most its own tolerance) on the geometric mean of its session and
    confirmation bests: a value has fast and slow states of its own, and requiring each
    outside missed 7 of 78 values of a build slowed by 25 % (docs/validation.md)."""

    build: str
    environ: str
    check: str
    placement: str
    partition: str  # system:partition
    var: str
    quantity: str
    size: int | None
    unit: str
    higher_is_better: bool
    reference: float | None
    lower: float | None
    upper: float | None
    samples: tuple[float, ...] = ()  # the session's own passes
    confirmation: tuple[float, ...] = ()  # samples measured again
    host: float | None = None  # the session's host factor (None: judged as measured)
    confirm_host: float | None = None  # the confirmation's host factor
    first_failed: bool = False  # the best of the session's own samples was outside
    with_build: bool = False  # a regression at the with-build tolerance
    key: ValueKey | None = None
    status: Status = PASS
    reason: str = ""  # why not gated (from the statistics file), when known
    spread: float = 0.0  # blessed robust spread (CV), 0 when the statistics lack it
    #: a value alone: the earlier session where it was outside too (results/watch.py)
    outside_before: str = ""
    policy: GatePolicy = field(default=DEFAULT_POLICY, repr=False)

    @classmethod
    def of(cls, case: Case, pv: PerfValue, rec: dict, policy: GatePolicy) -> ValueVerdict:
        """The value as its first sample found it; rec: what bless wrote about it."""
        return cls(case.build, case.environ, case.check, case.placement, case.partition,
                   pv.var, pv.quantity, pv.size, pv.unit, pv.higher_is_better, pv.ref,
                   pv.lower, pv.upper, key=case.value_key(pv.var),
                   reason=str(rec.get("reason", "")), spread=float(rec.get("spread") or 0.0),
                   policy=policy)

    @property
    def all_samples(self) -> list[float]:
        return [*self.samples, *self.confirmation]

    @property
    def first(self) -> float:
        """The best of the session's own samples, against the host."""
        return host.against(best(self.samples, self.higher_is_better), self.host,
                            self.higher_is_better)

    @property
    def judged(self) -> list[float]:
        """The best of the session's samples and, if measured again, of the
        confirmation's, each against its own factor."""
        out = [self.first]
        if self.confirmation:
            out.append(host.against(best(self.confirmation, self.higher_is_better),
                                    self.confirm_host, self.higher_is_better))
        return out

    @property
    def value(self) -> float:
        """What the gate judges. A value alone: the better of the session's best and
        the confirmation's (both must be outside). A value named with its build: their
        geometric mean."""
        if self.with_build:
            return statistics.geometric_mean(self.judged)
        return best(self.judged, self.higher_is_better)

    @property
    def change(self) -> float | None:
        return self.value / self.reference - 1 if self.reference else None

    @property
    def tolerance(self) -> float | None:
        return self.lower if self.higher_is_better else self.upper

    @property
    def is_share(self) -> bool:
        """A percentage (an overlap): judged in percentage points (bless's tolerance)."""
        return self.unit == "%"

    @property
    def change_label(self) -> str:
        """The change against the reference: "+31%", or for a share "-12.5 points"."""
        if self.change is None:
            return "n/a"
        if self.is_share:
            assert self.reference is not None  # a change is against a reference
            return f"{self.value - self.reference:+.1f} points"
        return f"{self.change:+.0%}"

    @property
    def host_judged(self) -> bool:
        """A gated time or rate: judged against the host (a percentage is neither)."""
        return bool(self.reference) and not self.is_share and self.tolerance is not None

    @property
    def with_build_share(self) -> float:
        """The with-build tolerance as a share of the value's own tolerance."""
        own = abs(self.tolerance or 0.0)
        if not own:
            return 1.0
        wanted = max(self.policy.with_build_floor, self.policy.with_build_sigmas * self.spread)
        return min(1.0, wanted / own)

    @property
    def tolerance_label(self) -> str:
        """The tolerance the value was judged at: "+30%", or "+12% with the whole
        build, +30% alone"."""
        if self.tolerance is None:
            return "none"
        if self.is_share and self.reference:
            return f"{self.tolerance * self.reference:+.0f} points"
        if self.with_build:
            return (f"{self.with_build_share * self.tolerance:+.0%} with the whole build, "
                    f"{self.tolerance:+.0%} alone")
        return f"{self.tolerance:+.0%}"

    @property
    def basis(self) -> str:
        """What the judged value is made of, for its line."""
        n = len(self.all_samples)
        if self.with_build and self.confirmation:
            return f"geometric mean of the session's and the confirmation's best, {n} sample(s)"
        return f"best of {n} sample(s)"

    @property
    def judged_against(self) -> str:
        """What the value was divided by, for its line: the host factor, or for a value
        named with its build the least-slowed build's factor."""
        return ("against the least-slowed build (factor" if self.with_build
                else "against the host (host factor")

    def outside(self, value: float, share: float = 1.0) -> bool:
        """Beyond the tolerance (or the given share of it)."""
        if not self.reference:
            return False
        if self.upper is not None and value > self.reference * (1 + share * self.upper):
            return True
        return self.lower is not None and value < self.reference * (1 + share * self.lower)

    def line(self) -> str:
        size = f" at {human_size(self.size, ' ')}" if self.size is not None else ""
        what = (f"{self.build} {self.check} {self.placement} {self.quantity}{size}")
        samples = ", ".join(f"{x:.3g}" for x in self.all_samples)
        tol = self.tolerance_label
        change = self.change_label
        hosts_ = [h for h in (self.host, self.confirm_host if self.confirmation else None) if h]
        against = (f" {self.judged_against} {', '.join(f'{h:.2f}' for h in hosts_)})"
                   if hosts_ else "")
        word = "WATCH" if self.status == WATCH else "REGRESSION"
        tail = ""
        if self.status == WATCH:
            tail = ("; alone in its build, not outside in the session before: a REGRESSION if "
                    "outside next time")
        elif self.outside_before:
            tail = f"; outside in session {self.outside_before} too"
        return (f"{word} {what}: {change}{against} ({self.basis} "
                f"[{samples}] {self.unit} vs reference {self.reference:.3g} "
                f"{self.unit}, tolerance {tol}{tail})")


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
          stats: dict | None = None, policy: GatePolicy = DEFAULT_POLICY) -> Judgement:
    """One verdict per performance value of the session (its passes pooled), the host
    factor of each partition and a verdict per build; the samples of the confirmation
    sessions decide the values and builds whose session best failed. Each step below
    returns new verdicts."""
    measured = _measured(session, stats, policy)
    confirmed = _confirmed(confirmations or [], measured)
    names = {v.environ: v.build for v in measured.values()}
    first_rows = slowdown_table(measured.values(), lambda v: v.samples, policy)
    first_hosts = hosts(first_rows, names, policy)
    builds = build_verdicts(first_rows, names, stats, policy)
    values = [_first(v, first_hosts[v.partition]) for v in measured.values()]
    # the confirmation: its own host factors and build factors, from what it measured
    again_rows = slowdown_table(values, lambda v: confirmed.get(v.key, ()), policy)
    conf_hosts = hosts(again_rows, names, policy)
    conf_builds = {(b.partition, b.build): b.factor
                   for b in build_verdicts(again_rows, names, stats, policy)}
    values = [_confirmed_verdict(v, confirmed.get(v.key), conf_hosts[v.partition])
              for v in values]
    builds = [_build_decided(b, conf_builds.get((b.partition, b.build))) for b in builds]
    regressed = {(b.partition, b.build) for b in builds if b.status == REGRESSION}
    values = [_with_build(v, confirmed.get(v.key, ()),
                          host.judging(first_hosts[v.partition].least),
                          host.judging(conf_hosts[v.partition].least))
              if (v.partition, v.build) in regressed else v for v in values]
    builds = [replace(b, regressed_values=sum(
        v.status == REGRESSION for v in values if (v.partition, v.build) == (b.partition, b.build)))
        for b in builds]
    hosts_ = [replace(first_hosts[p], confirm_factor=conf_hosts[p].factor)
              for p in sorted(first_hosts)]
    return Judgement(sorted(values, key=lambda v: (v.build, v.check, v.placement, v.var)),
                     hosts_, builds)


def _measured(session: Session, stats: dict | None, policy: GatePolicy
              ) -> dict[ValueKey, ValueVerdict]:
    """Each value with the session's samples of it (every run pooled)."""
    samples: dict[ValueKey, list[float]] = {}
    out: dict[ValueKey, ValueVerdict] = {}
    for case in session.cases:
        for pv in case.values:
            if pv.value is None:
                continue
            k = case.value_key(pv.var)
            if k not in out:
                out[k] = ValueVerdict.of(case, pv, blessed_record(stats, case, pv.var), policy)
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
    """Against the session's host factor; whether the best sample was outside."""
    v = replace(v, host=host.judging(h.factor) if v.host_judged else None)
    return replace(v, first_failed=bool(v.samples) and v.outside(v.first))


def _confirmed_verdict(v: ValueVerdict, confirmation: tuple | None, h: Host) -> ValueVerdict:
    """With the confirmation's samples where the first best failed, and its status."""
    if v.first_failed and confirmation is not None:
        v = replace(v, confirmation=confirmation, confirm_host=host.judging(h.factor))
    return replace(v, status=_decide(v))


def _decide(v: ValueVerdict) -> Status:
    if not v.reference:
        return NO_REFERENCE
    if v.lower is None and v.upper is None:
        return NOT_GATED
    if not v.first_failed:
        return PASS
    return REGRESSION if v.outside(v.value) else NOISE


def _build_decided(b: BuildVerdict, confirm_factor: float | None) -> BuildVerdict:
    status = (PASS if not b.first_failed else REGRESSION
              if confirm_factor is None or confirm_factor > 1 + b.tolerance else NOISE)
    return replace(b, confirm_factor=confirm_factor, status=status)


def _with_build(v: ValueVerdict, confirmation: tuple, least: float | None,
                confirm_least: float | None) -> ValueVerdict:
    """A value of a build that regressed as a whole: a regression when, divided by the
    least-slowed build's factor as the build was (never below 1), the geometric mean
    of its session best and its confirmation best is outside its with-build tolerance."""
    if v.status not in (PASS, NOISE) or not v.host_judged:
        return v
    trial = replace(v, host=least, confirmation=confirmation, with_build=True,
                    confirm_host=confirm_least if confirmation else None)
    if trial.outside(trial.value, trial.with_build_share):
        return replace(trial, status=REGRESSION)
    return v


def failed_first(session: Session, stats: dict | None = None,
                 policy: GatePolicy = DEFAULT_POLICY) -> list[Case]:
    """The test cases of a session with a value whose best sample, against the host,
    is outside its tolerance, and every test case of a build outside its build
    tolerance (those get measured again)."""
    j = judge(session, None, stats, policy)
    failed = {v.key for v in j.verdicts if v.first_failed}
    builds = {(b.partition, b.build) for b in j.builds if b.first_failed}
    return [c for c in session.cases
            if any(c.value_key(pv.var) in failed for pv in c.values)
            or (c.partition, c.build) in builds]
