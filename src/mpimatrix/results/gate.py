"""The regression gate: which performance values of a session are regressions.

ReFrame checks each value against its reference as it runs. A value outside its
tolerance is then measured again (`mpimatrix run` re-runs its test case on every
build, a few times: a confirmation session stored with `confirms=<uuid>`), and
the value is a regression only if the median of all its samples is still
outside the tolerance. One slow sample is noise; the database keeps every sample.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from ..units import human_size
from .sessions import build_label, case_name, check_label, perf_values, testcases

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
    samples: list[float] = field(default_factory=list)
    first_failed: bool = False  # the session's own sample was outside the tolerance
    status: str = PASS
    reason: str = ""  # why not gated (from the statistics file), when known

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def change(self) -> float | None:
        return self.median / self.reference - 1 if self.reference else None

    @property
    def tolerance(self) -> float | None:
        return self.lower if self.higher_is_better else self.upper

    def outside(self, value: float) -> bool:
        if not self.reference:
            return False
        if self.upper is not None and value > self.reference * (1 + self.upper):
            return True
        return self.lower is not None and value < self.reference * (1 + self.lower)

    def line(self) -> str:
        size = f" at {human_size(self.size, ' ')}" if self.size is not None else ""
        what = (f"{self.build} {self.check} {self.placement} {self.quantity}{size}")
        samples = ", ".join(f"{x:.3g}" for x in self.samples)
        tol = f"{self.tolerance:+.0%}" if self.tolerance is not None else "none"
        change = f"{self.change:+.0%}" if self.change is not None else "n/a"
        return (f"REGRESSION {what}: {change} (median of {len(self.samples)} sample(s) "
                f"[{samples}] {self.unit} vs reference {self.reference:.3g} {self.unit}, "
                f"tolerance {tol})")


def _key(tc: dict, var: str) -> tuple:
    return tc.get("system"), tc.get("partition"), tc.get("environ"), case_name(tc), var


def verdicts(session: dict, confirmations: list[dict] | None = None,
             stats: dict | None = None) -> list[Verdict]:
    """One verdict per performance value of the session (its repetitions pooled),
    with the samples of the confirmation sessions added."""
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
                    pv.lower, pv.upper)
                v.reason = _not_gated_reason(stats, tc, pv.var)
            v.samples.append(float(pv.value))
            v.first_failed = v.first_failed or pv.result == "fail"
    for conf in confirmations or []:
        for tc in testcases([conf]):
            for pv in perf_values(tc):
                k = _key(tc, pv.var)
                if k in out and pv.value is not None and out[k].first_failed:
                    out[k].samples.append(float(pv.value))
    for v in out.values():
        v.status = _decide(v)
    return sorted(out.values(), key=lambda v: (v.build, v.check, v.placement, v.var))


def _decide(v: Verdict) -> str:
    if not v.reference:
        return NO_REFERENCE
    if v.lower is None and v.upper is None:
        return NOT_GATED
    if not v.first_failed:
        return PASS
    return REGRESSION if v.outside(v.median) else NOISE


def _not_gated_reason(stats: dict | None, tc: dict, var: str) -> str:
    cls = tc["name"].split()[0]
    part = f"{tc.get('system')}:{tc.get('partition')}"
    entry = ((((stats or {}).get(cls) or {}).get(part) or {}).get(tc.get("environ")) or {})
    rec = (entry.get(tc.get("ref_key")) or {}).get(var) or {}
    return rec.get("reason", "") if isinstance(rec, dict) else ""


def failed_first(session: dict) -> list[dict]:
    """The test cases of a session with a value outside its tolerance."""
    return [tc for tc in testcases([session])
            if any(pv.result == "fail" for pv in perf_values(tc))]
