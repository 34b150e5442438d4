"""The regression gate: which performance values of a session are regressions.

A session's value is the best of its samples (the smallest time, the largest
rate): on a shared node, noise only ever adds time, so the best of a few
interleaved passes (`--mode nightly` and `compare` run 3) moves far less between
sessions than any one sample does, while a real slowdown moves every sample,
the best included. On this 2-core VM the robust spread between sessions of
the quick catalogue's values (median over the values) was 17.8 % for one pass
and 4.9 % for the best of 3 (docs/noise.md). Values are blessed the same way (references.py).

ReFrame checks each sample against its reference as it runs. When a session's
best is outside its tolerance, `mpimatrix run` measures the test case again on
every build (a confirmation session stored with `confirms=<uuid>`), and the
value is a regression only if the best of all its samples is still outside.
The database keeps every sample.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..units import human_size
from .sessions import build_label, case_name, check_label, perf_values, testcases
from .statistics import best

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
    first_failed: bool = False  # the best of the session's own samples was outside
    key: tuple = ()
    status: str = PASS
    reason: str = ""  # why not gated (from the statistics file), when known

    @property
    def value(self) -> float:
        """The best of the samples: what the gate judges."""
        return best(self.samples, self.higher_is_better)

    @property
    def change(self) -> float | None:
        return self.value / self.reference - 1 if self.reference else None

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
        return (f"REGRESSION {what}: {change} (best of {len(self.samples)} sample(s) "
                f"[{samples}] {self.unit} vs reference {self.reference:.3g} {self.unit}, "
                f"tolerance {tol})")


def _key(tc: dict, var: str) -> tuple:
    return tc.get("system"), tc.get("partition"), tc.get("environ"), case_name(tc), var


def verdicts(session: dict, confirmations: list[dict] | None = None,
             stats: dict | None = None) -> list[Verdict]:
    """One verdict per performance value of the session (its passes pooled), with
    the samples of the confirmation sessions added when the session's best failed."""
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
                v.reason = _not_gated_reason(stats, tc, pv.var)
            v.samples.append(float(pv.value))
    for v in out.values():
        v.first_failed = bool(v.samples) and v.outside(v.value)
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
    return REGRESSION if v.outside(v.value) else NOISE


def _not_gated_reason(stats: dict | None, tc: dict, var: str) -> str:
    cls = tc["name"].split()[0]
    part = f"{tc.get('system')}:{tc.get('partition')}"
    entry = ((((stats or {}).get(cls) or {}).get(part) or {}).get(tc.get("environ")) or {})
    rec = (entry.get(tc.get("ref_key")) or {}).get(var) or {}
    return rec.get("reason", "") if isinstance(rec, dict) else ""


def failed_first(session: dict) -> list[dict]:
    """The test cases of a session with a value whose best sample is outside its
    tolerance (those get measured again)."""
    failed = {v.key for v in verdicts(session) if v.first_failed}
    return [tc for tc in testcases([session])
            if any(_key(tc, pv.var) in failed for pv in perf_values(tc))]
