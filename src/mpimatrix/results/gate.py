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
that regressed as a whole: WITH_BUILD_*). The database keeps every sample.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace

from ..units import human_size
from . import host
from .gate_builds import BuildVerdict, Host, build_verdicts, hosts, slowdowns
from .sessions import build_label, case_name, check_label, perf_values, testcases
from .statistics import best

#: Two tests, each with its own false-alarm rate. A value alone: outside its own
#: tolerance (at least bless's floor, 30 %) in the session and in the confirmation. A
#: build as a whole (gate_builds.py) first; only in a build that regressed as a whole
#: each value again, at its with-build tolerance (these many blessed spreads, at least
#: this floor, at most its own tolerance), on the geometric mean of its session and
#: confirmation bests: a value has fast and slow states of its own, and requiring each
#: outside missed 7 of 78 values of a build slowed by 25 % (docs/noise.md).
WITH_BUILD_FLOOR = 0.1
WITH_BUILD_SIGMAS = 2.0

#: Statuses, worst first.
REGRESSION, NOISE, PASS, NOT_GATED, NO_REFERENCE = (
    "regression", "noise", "pass", "not gated", "no reference")


@dataclass
class Verdict:
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
    samples: list[float] = field(default_factory=list)  # the session's own passes
    confirmation: list[float] = field(default_factory=list)  # samples measured again
    host: float | None = None  # the session's host factor (None: judged as measured)
    confirm_host: float | None = None  # the confirmation's host factor
    first_failed: bool = False  # the best of the session's own samples was outside
    with_build: bool = False  # a regression at the with-build tolerance
    key: tuple = ()
    status: str = PASS
    reason: str = ""  # why not gated (from the statistics file), when known
    spread: float = 0.0  # blessed robust spread (CV), 0 when the statistics lack it

    @property
    def all_samples(self) -> list[float]:
        return self.samples + self.confirmation

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
        geometric mean (WITH_BUILD_*)."""
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
    def host_judged(self) -> bool:
        """A gated time or rate: judged against the host (a percentage is neither)."""
        return bool(self.reference) and self.unit != "%" and self.tolerance is not None

    @property
    def with_build_share(self) -> float:
        """The with-build tolerance as a share of the value's own tolerance."""
        own = abs(self.tolerance or 0.0)
        if not own:
            return 1.0
        return min(1.0, max(WITH_BUILD_FLOOR, WITH_BUILD_SIGMAS * self.spread) / own)

    @property
    def tolerance_label(self) -> str:
        """The tolerance the value was judged at: "+30%", or "+12% with the whole
        build, +30% alone"."""
        if self.tolerance is None:
            return "none"
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
        change = f"{self.change:+.0%}" if self.change is not None else "n/a"
        hosts = [h for h in (self.host, self.confirm_host if self.confirmation else None) if h]
        against = (f" {self.judged_against} {', '.join(f'{h:.2f}' for h in hosts)})"
                   if hosts else "")
        return (f"REGRESSION {what}: {change}{against} ({self.basis} "
                f"[{samples}] {self.unit} vs reference {self.reference:.3g} "
                f"{self.unit}, tolerance {tol})")


@dataclass
class Judgement:
    verdicts: list[Verdict]
    hosts: list[Host]
    builds: list[BuildVerdict]

    @property
    def regressions(self) -> list[str]:
        """One line per confirmed regression: whole builds first, then single values."""
        return ([b.line() for b in self.builds if b.status == REGRESSION]
                + [v.line() for v in self.verdicts if v.status == REGRESSION])


def _key(tc: dict, var: str) -> tuple:
    return tc.get("system"), tc.get("partition"), tc.get("environ"), case_name(tc), var


def judge(session: dict, confirmations: list[dict] | None = None,
          stats: dict | None = None) -> Judgement:
    """One verdict per performance value of the session (its passes pooled), the host
    factor of each partition and a verdict per build; the samples of the confirmation
    sessions decide the values and builds whose session best failed."""
    out: dict[tuple, Verdict] = {}
    for tc in testcases([session]):
        for pv in perf_values(tc):
            if pv.value is None:
                continue
            k = _key(tc, pv.var)
            v = out.get(k)
            if v is None:
                v = out[k] = Verdict(
                    build_label(tc), tc.get("environ", "?"), check_label(tc),
                    str(tc.get("placement", "")), f"{tc.get('system')}:{tc.get('partition')}",
                    pv.var, pv.quantity, pv.size, pv.unit, pv.higher_is_better, pv.ref,
                    pv.lower, pv.upper, key=k)
                rec = _stats_record(stats, tc, pv.var)
                v.reason = str(rec.get("reason", ""))
                v.spread = float(rec.get("spread") or 0.0)
            v.samples.append(float(pv.value))
    confirmed: dict[tuple, list[float]] = {}
    for conf in confirmations or []:
        for tc in testcases([conf]):
            for pv in perf_values(tc):
                if _key(tc, pv.var) in out and pv.value is not None:
                    confirmed.setdefault(_key(tc, pv.var), []).append(float(pv.value))
    slow = slowdowns(out.values(), lambda v: v.samples)
    first_hosts = hosts(slow)
    builds = build_verdicts(slow, first_hosts, stats)
    for v in out.values():
        v.host = host.judging(first_hosts[v.partition].factor) if v.host_judged else None
        v.first_failed = bool(v.samples) and v.outside(v.first)
    # the confirmation: its own host factors and build factors, from what it measured
    again = slowdowns(out.values(), lambda v: confirmed.get(v.key, []))
    conf_hosts = hosts(again)
    conf_builds = {(b.partition, b.build): b.factor
                   for b in build_verdicts(again, conf_hosts, stats)}
    for v in out.values():
        if v.first_failed and v.key in confirmed:
            v.confirmation = confirmed[v.key]
            v.confirm_host = host.judging(conf_hosts[v.partition].factor)
        v.status = _decide(v)
    for part, h in first_hosts.items():
        h.confirm_factor = conf_hosts[part].factor
    for b in builds:
        b.confirm_factor = conf_builds.get((b.partition, b.build))
        b.status = (PASS if not b.first_failed else REGRESSION
                    if b.confirm_factor is None or b.confirm_factor > 1 + b.tolerance
                    else NOISE)
    regressed = {(b.partition, b.build) for b in builds if b.status == REGRESSION}
    for v in out.values():
        if (v.partition, v.build) in regressed:
            _with_build(v, confirmed.get(v.key, []),
                        host.judging(first_hosts[v.partition].least),
                        host.judging(conf_hosts[v.partition].least))
    for b in builds:
        b.regressed_values = sum(v.status == REGRESSION for v in out.values()
                                 if (v.partition, v.build) == (b.partition, b.build))
    verdicts = sorted(out.values(), key=lambda v: (v.build, v.check, v.placement, v.var))
    return Judgement(verdicts, [first_hosts[p] for p in sorted(first_hosts)], builds)


def verdicts(session: dict, confirmations: list[dict] | None = None,
             stats: dict | None = None) -> list[Verdict]:
    return judge(session, confirmations, stats).verdicts


def _decide(v: Verdict) -> str:
    if not v.reference:
        return NO_REFERENCE
    if v.lower is None and v.upper is None:
        return NOT_GATED
    if not v.first_failed:
        return PASS
    return REGRESSION if v.outside(v.value) else NOISE


def _with_build(v: Verdict, confirmation: list[float], least: float | None,
                confirm_least: float | None) -> None:
    """A value of a build that regressed as a whole: a regression when, divided by the
    least-slowed build's factor as the build was (never below 1), the geometric mean
    of its session best and its confirmation best is outside its with-build tolerance."""
    if v.status not in (PASS, NOISE) or not v.host_judged:
        return
    trial = replace(v, host=least, confirmation=confirmation, with_build=True,
                    confirm_host=confirm_least if confirmation else None)
    if trial.outside(trial.value, trial.with_build_share):
        v.host, v.confirmation, v.confirm_host = trial.host, confirmation, trial.confirm_host
        v.status, v.with_build = REGRESSION, True


def _stats_record(stats: dict | None, tc: dict, var: str) -> dict:
    """What bless wrote about the value in the statistics file ({} when nothing)."""
    cls = tc["name"].split()[0]
    part = f"{tc.get('system')}:{tc.get('partition')}"
    entry = ((((stats or {}).get(cls) or {}).get(part) or {}).get(tc.get("environ")) or {})
    rec = (entry.get(tc.get("ref_key")) or {}).get(var) or {}
    return rec if isinstance(rec, dict) else {}


def failed_first(session: dict, stats: dict | None = None) -> list[dict]:
    """The test cases of a session with a value whose best sample, against the host,
    is outside its tolerance, and every test case of a build outside its build
    tolerance (those get measured again)."""
    j = judge(session, None, stats)
    failed = {v.key for v in j.verdicts if v.first_failed}
    builds = {(b.partition, b.build) for b in j.builds if b.first_failed}
    return [tc for tc in testcases([session])
            if any(_key(tc, pv.var) in failed for pv in perf_values(tc))
            or (f"{tc.get('system')}:{tc.get('partition')}", build_label(tc)) in builds]
