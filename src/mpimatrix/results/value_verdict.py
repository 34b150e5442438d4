"""The gate's verdict on one performance value of a session, and the one place its words
are written: the line `mpimatrix run` prints and the reason the report lists."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from ..units import is_share
from . import host
from .measurements import Case, PerfValue, ValueKey
from .policy import DEFAULT_POLICY, GatePolicy
from .reference_set import BlessedValue, Reference
from .statistics import best
from .status import Status
from .values import value_label


@dataclass(frozen=True)
class ValueVerdict:
    """The gate's verdict on one performance value of a session. Two tests, each with its
    own false-alarm rate: a value alone, outside its own tolerance in the session and in
    the confirmation; and, only in a build that regressed as a whole, each value again
    at its with-build tolerance (policy.with_build_*: so many blessed spreads, at least
    the floor, at most its own tolerance) on the geometric mean of its session and
    confirmation bests: a value has fast and slow states of its own, and requiring each
    outside missed 7 of 78 values of a build slowed by 25 % (docs/history.md)."""

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
    #: named with a build judged against the median build (most builds were outside);
    #: otherwise against the other builds' median
    with_median_build: bool = False
    key: ValueKey | None = None
    ref_key: str = ""  # the test case's reference key, "MPI1:PingPong@intranode"
    status: Status = Status.PASS
    reason: str = ""  # why not gated (from the statistics file), when known
    spread: float = 0.0  # blessed robust spread (CV), 0 when the statistics lack it
    #: a value alone: the earlier session where it was outside too (results/watch.py)
    outside_before: str = ""
    policy: GatePolicy = field(default=DEFAULT_POLICY, repr=False)

    @classmethod
    def of(cls, case: Case, pv: PerfValue, reference: Reference | None,
           blessed: BlessedValue | None, policy: GatePolicy) -> ValueVerdict:
        """The value as its first sample found it, against `reference`; `blessed`: what
        bless wrote about it."""
        return cls(case.build, case.environ, case.check, case.placement, case.partition,
                   pv.var, pv.quantity, pv.size, pv.unit, pv.higher_is_better,
                   reference.value if reference else None,
                   reference.lower if reference else None,
                   reference.upper if reference else None,
                   key=case.value_key(pv.var), ref_key=case.ref_key,
                   reason=blessed.reason if blessed else "",
                   spread=(blessed.spread or 0.0) if blessed else 0.0, policy=policy)

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
        return is_share(self.unit)

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
        named with its build what the build it was judged against showed."""
        if not self.with_build:
            return "against the host (host factor"
        return f"against {host.level_name(self.with_median_build)} (factor"

    def outside(self, value: float, share: float = 1.0) -> bool:
        """Beyond the tolerance (or the given share of it)."""
        if not self.reference:
            return False
        if self.upper is not None and value > self.reference * (1 + share * self.upper):
            return True
        return self.lower is not None and value < self.reference * (1 + share * self.lower)

    @property
    def what(self) -> str:
        """The value's quantity and size: "latency at 8 B"."""
        return value_label(self.quantity, self.size)

    def _against(self) -> str:
        hosts_ = [h for h in (self.host, self.confirm_host if self.confirmation else None) if h]
        return (f" {self.judged_against} {', '.join(f'{h:.2f}' for h in hosts_)})"
                if hosts_ else "")

    def _samples(self) -> str:
        return f"[{', '.join(f'{x:.3g}' for x in self.all_samples)}] {self.unit}"

    def _tail(self) -> str:
        if self.status == Status.WATCH:
            return ("; alone in its build, not outside in the session before: a REGRESSION "
                    "if outside next time")
        return f"; outside in session {self.outside_before} too" if self.outside_before else ""

    def why(self) -> str:
        """The reason the report lists beside the value, its reference and its change."""
        if self.status == Status.NOT_GATED:
            return self.reason or "the reference has no tolerance"
        where = "within" if self.status == Status.NOISE else "outside"
        return (f"{self.basis} {self._samples()}{self._against()}: {where} the tolerance "
                f"{self.tolerance_label}{self._tail()}")

    def line(self) -> str:
        """The line `mpimatrix run` prints for a regression or a value on watch."""
        word = "WATCH" if self.status == Status.WATCH else "REGRESSION"
        return (f"{word} {self.build} {self.check} {self.placement} {self.what}: "
                f"{self.change_label}{self._against()} ({self.basis} {self._samples()} vs "
                f"reference {self.reference:.3g} {self.unit}, tolerance "
                f"{self.tolerance_label}{self._tail()})")
