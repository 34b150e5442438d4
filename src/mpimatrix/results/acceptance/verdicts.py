"""A verdict per acceptance requirement, with its confidence.

The samples of a requirement are the value at its message size in each measured
repetition of its test case (one per pass of each session given), per build. The
median's confidence interval is distribution-free (Hoefler and Belli, SC'15): with n
samples sorted, [x(k), x(n-k+1)] holds the true median with probability
1 - 2 P(Binomial(n, 1/2) <= k - 1), whatever the distribution; k is the largest that
keeps that at or above the confidence asked. Against the bound the interval says:

- met: the whole interval is on the good side of the bound;
- not met: the whole interval is on the bad side;
- inconclusive: the bound is inside the interval (within the noise: measure more, or
  the figure is too close to call) -- never a coin toss on the median alone.

A requirement on several builds: every build a plain pattern matches must meet it; of
a `one_of` pattern's builds at least one must. Only the test cases of the requirements'
system count; a build's verdict that rests on samples of a session other programs
disturbed is inconclusive (unless the user includes them: Scope.include_disturbed).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from ..measurements import Session
from ..status import Word
from .requirements import Requirement, Requirements
from .scope import Scope, not_run_reason, system_reason, unmeasurable


class Verdict(Word):
    """A requirement's verdict, or one build's; each is its text too (the printed line,
    the record's cell)."""

    MET = "met"
    NOT_MET = "not met"
    INCONCLUSIVE = "inconclusive"
    UNMEASURED = "unmeasured"


#: Worst first: the requirement's verdict is the worst of its rules'.
SEVERITY = (Verdict.NOT_MET, Verdict.UNMEASURED, Verdict.INCONCLUSIVE, Verdict.MET)


def coverage(n: int, k: int) -> float:
    """P(x(k) <= median <= x(n-k+1)) for n samples of any continuous distribution."""
    below = sum(math.comb(n, i) for i in range(k)) / 2 ** n
    return 1 - 2 * below


def samples_needed(confidence: float) -> int:
    """The fewest samples for which an interval at this confidence exists (k = 1):
    1 - 2 / 2^n >= confidence; 6 at 95 %, 8 at 99 %."""
    return max(2, math.ceil(math.log2(2 / (1 - confidence)) - 1e-12))


def median_interval(samples: list[float], confidence: float
                    ) -> tuple[float, float, float] | None:
    """(low, high, its coverage) of the median, or None with too few samples."""
    xs = sorted(samples)
    n = len(xs)
    best = None
    for k in range(1, n // 2 + 1):
        cov = coverage(n, k)
        if cov >= confidence:
            best = (xs[k - 1], xs[n - k], cov)
    return best


@dataclass(frozen=True)
class BuildAcceptance:
    requirement: Requirement
    build: str
    samples: tuple[float, ...]
    verdict: Verdict
    median: float | None = None
    low: float | None = None
    high: float | None = None
    coverage: float | None = None
    reason: str = ""

    @property
    def margin(self) -> float | None:
        """How far the median is on the good side of the bound, as a share of it."""
        if self.median is None:
            return None
        r = self.requirement
        return (r.bound - self.median) / r.bound if r.op == "<=" else \
            (self.median - r.bound) / r.bound


def build_verdict(req: Requirement, build: str, samples: list[float]) -> BuildAcceptance:
    n_needed = samples_needed(req.confidence)
    if not samples:
        return BuildAcceptance(req, build, (), Verdict.UNMEASURED, reason="no sample")
    med = statistics.median(samples)
    ci = median_interval(samples, req.confidence)
    if ci is None:
        return BuildAcceptance(req, build, tuple(samples), Verdict.INCONCLUSIVE, med,
                            reason=f"{len(samples)} sample(s): an interval at "
                            f"{req.confidence:.0%} needs {n_needed}")
    lo, hi, cov = ci
    good = (hi <= req.bound) if req.op == "<=" else (lo >= req.bound)
    bad = (lo > req.bound) if req.op == "<=" else (hi < req.bound)
    verdict = Verdict.MET if good else Verdict.NOT_MET if bad else Verdict.INCONCLUSIVE
    reason = "" if verdict != Verdict.INCONCLUSIVE else "the bound is inside the interval"
    return BuildAcceptance(req, build, tuple(samples), verdict, med, lo, hi, cov, reason)


def _cases(req: Requirement, sessions: list[Session], system: str | None):
    """(session, case) of each measured repetition of the requirement's test case."""
    for s in sessions:
        for c in s.cases:
            if (c.test_class == req.check and c.benchmark == req.benchmark
                    and c.placement == req.placement and c.measured
                    and (system is None or c.system == system)):
                yield s, c


def requirement_samples(req: Requirement, sessions: list[Session],
                        system: str | None = None) -> dict[str, list[float]]:
    """{build: samples} of a requirement in the sessions (each measured repetition; of
    the test cases of `system` only, when given)."""
    out: dict[str, list[float]] = {}
    for _, c in _cases(req, sessions, system):
        value = _value_at(c.curve, req)
        slot = out.setdefault(c.build, [])
        if value is not None:
            slot.append(value)
    return out


def _disturbed_by_build(req: Requirement, sessions: list[Session], system: str | None,
                        scope: Scope) -> dict[str, list[str]]:
    """{build: UUIDs of the disturbed sessions its samples come from}."""
    out: dict[str, list[str]] = {}
    for s, c in _cases(req, sessions, system):
        if scope.disturbed(s.uuid) and s.uuid not in out.get(c.build, []):
            out.setdefault(c.build, []).append(s.uuid)
    return out


def _with_disturbance(v: BuildAcceptance, uuids: list[str], scope: Scope) -> BuildAcceptance:
    if not uuids or v.verdict == Verdict.UNMEASURED:
        return v
    names = ", ".join(u[:8] for u in uuids)
    if scope.include_disturbed:
        note = f"samples of disturbed session(s) {names} included (--include-disturbed)"
        return replace(v, reason="; ".join(filter(None, (v.reason, note))))
    if v.verdict not in (Verdict.MET, Verdict.NOT_MET):
        return replace(v, reason="; ".join(filter(None, (v.reason, f"samples of disturbed "
                                                                f"session(s) {names}"))))
    return replace(v, verdict=Verdict.INCONCLUSIVE, reason=(
        f"{v.verdict} on samples of session(s) {names}, which other programs disturbed: "
        "measure again on a quiet machine (or --include-disturbed to count them)"))


def _value_at(curve, req: Requirement) -> float | None:
    if not isinstance(curve, dict):
        return None
    for rows in curve.values():
        if not isinstance(rows, list) or not rows:
            continue
        column = next((col for col in req.columns if col in rows[0]), None)
        if column is None:
            continue
        for row in rows:
            size = row.get("size")
            if req.size is None or (size is not None and int(size) == req.size):
                v = row.get(column)
                if isinstance(v, (int, float)) and math.isfinite(v):
                    return float(v)
    return None


@dataclass(frozen=True)
class RequirementVerdict:
    requirement: Requirement
    verdict: Verdict
    builds: tuple[BuildAcceptance, ...]
    reason: str = ""


def judge_requirement(req: Requirement, sessions: list[Session], builds_ran: list[str],
                      system: str | None = None, scope: Scope | None = None
                      ) -> RequirementVerdict:
    scope = scope or Scope()
    samples = requirement_samples(req, sessions, system)
    cannot = unmeasurable(req, scope)
    if cannot and not any(samples.values()):
        return RequirementVerdict(req, Verdict.UNMEASURED, (), "; ".join(cannot))
    if not any(c.placement == req.placement and (system is None or c.system == system)
               for s in sessions for c in s.cases):
        return RequirementVerdict(req, Verdict.UNMEASURED, (), not_run_reason(req, scope))
    disturbed = _disturbed_by_build(req, sessions, system, scope)
    per_build = {b: _with_disturbance(build_verdict(req, b, samples.get(b, [])),
                                      disturbed.get(b, []), scope) for b in builds_ran}
    outcomes, reasons = [], []
    for rule in req.builds:
        mine = [v for b, v in per_build.items() if rule.matches(b)]
        if not mine:
            outcomes.append(Verdict.UNMEASURED)
            reasons.append(f"no build of the session matches {rule.text()}")
            continue
        verdicts = [v.verdict for v in mine]
        if rule.one_of:  # the best of them decides
            outcome = next(v for v in (Verdict.MET, Verdict.INCONCLUSIVE, Verdict.NOT_MET,
                                       Verdict.UNMEASURED) if v in verdicts)
        else:
            outcome = min(verdicts, key=SEVERITY.index)
        outcomes.append(outcome)
        unmeasured = [v.build for v in mine if v.verdict == Verdict.UNMEASURED]
        if unmeasured and outcome == Verdict.UNMEASURED:
            reasons.append(f"nothing measured on {', '.join(unmeasured)} (the test case did "
                           "not run: is the placement hosted by a partition?)")
    if any(v.verdict == Verdict.INCONCLUSIVE and disturbed.get(v.build)
           for v in per_build.values()) and not scope.include_disturbed:
        reasons.append("rests on samples of disturbed sessions")
    used = {b for b in per_build if any(rule.matches(b) for rule in req.builds)}
    return RequirementVerdict(req, min(outcomes, key=SEVERITY.index),
                              tuple(per_build[b] for b in sorted(used)), "; ".join(reasons))


def judge_all(reqs: Requirements, sessions: list[Session],
              scope: Scope | None = None) -> list[RequirementVerdict]:
    """A verdict per requirement from the test cases of the requirements' system; every
    requirement unmeasured, with the reason, when that system was not measured."""
    scope = scope or Scope()
    off = system_reason(reqs, sessions, scope)
    if off:
        return [RequirementVerdict(r, Verdict.UNMEASURED, (),
                                   "; ".join([off, *unmeasurable(r, scope)]))
                for r in reqs.requirements]
    builds = sorted({c.build for s in sessions for c in s.cases if c.system == reqs.system})
    return [judge_requirement(r, sessions, builds, reqs.system, scope)
            for r in reqs.requirements]


def exit_code(verdicts: list[RequirementVerdict]) -> int:
    """0 every requirement met; 1 one not met or not measured; 4 otherwise inconclusive
    (measure again: more samples, a quieter machine)."""
    found = {v.verdict for v in verdicts}
    if found & {Verdict.NOT_MET, Verdict.UNMEASURED}:
        return 1
    return 4 if Verdict.INCONCLUSIVE in found else 0
