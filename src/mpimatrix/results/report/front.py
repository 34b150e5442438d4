"""The front page: the verdict, what failed and why, the builds and their provenance.

The gate's verdicts (results.gate's Judgement) become the page's rows here, once; their
words are the verdicts' own (ValueVerdict.why, BuildVerdict.reason).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from ..gate import Judgement
from ..measurements import Case
from ..sessions import defined
from ..status import Status
from .model import ReportData, Session

#: The gate's statuses the page lists (pass and no reference are not).
LISTED = (Status.REGRESSION, Status.WATCH, Status.NOISE, Status.NOT_GATED)


@dataclass(frozen=True)
class VerdictRow:
    """A value (or a whole build: var "factor") the gate listed, in the page's words."""
    build: str
    partition: str
    environ: str
    ref_key: str
    var: str
    benchmark: str
    placement: str
    what: str
    value: float
    reference: float | None
    unit: str
    change: float | None
    reason: str
    status: Status


@dataclass(frozen=True)
class FailureRow:
    """A test case that failed in some run: the first reason, and how often."""
    build: str
    partition: str
    check: str
    placement: str
    phase: str
    reason: str
    failed: int
    attempts: int
    fixture: bool


@dataclass(frozen=True)
class ReasonRow:
    """A test case that failed as expected (xfail) or was skipped, with why."""
    build: str
    check: str
    placement: str
    reason: str


@dataclass(frozen=True)
class BuildRow:
    """A build of the current session: its provenance and how its test cases went."""
    build: str
    environ: str
    status: str
    results: dict[str, int] = field(default_factory=dict)
    provenance: str = ""
    modules: str = ""
    spec: str = ""
    hash: str = ""
    library: str = ""
    imb: str = ""
    osu: str = ""
    npb: str = ""


def verdict_rows(judged: Judgement) -> list[VerdictRow]:
    """One row per whole build the gate judged outside and per listed value."""
    out = [VerdictRow(build=b.build, partition=b.partition, environ=b.environ,
                      ref_key="", var="factor", benchmark="the whole build",
                      placement="all placements", what="factor", value=b.factor,
                      reference=1.0, unit="x", change=b.factor - 1,
                      reason=b.reason(), status=b.status)
           for b in judged.builds if b.status in (Status.REGRESSION, Status.NOISE)]
    out += [VerdictRow(build=v.build, partition=v.partition, environ=v.environ,
                       ref_key=v.ref_key, var=v.var, benchmark=v.check,
                       placement=v.placement, what=v.what, value=v.value,
                       reference=v.reference, unit=v.unit, change=v.change,
                       reason=v.why(), status=v.status)
            for v in judged.verdicts if v.status in LISTED]
    return out


def unreferenced(s: Session) -> int:
    """Performance values of the session that have no reference (not blessed)."""
    return sum(1 for c in s.cases if c.passed for pv in c.values if not pv.ref)


def failures(s: Session) -> list[FailureRow]:
    """Test cases that failed in some run, with the first reason, and how often; a
    failure of the performance stage alone is a regression, listed with those."""
    attempts: dict[tuple, list[Case]] = defaultdict(list)
    for c in s.cases:
        attempts[c.key].append(c)
    out = []
    for cases in attempts.values():
        bad = [c for c in cases if c.failed_in_sanity]
        if not bad:
            continue
        c = bad[0]
        reason = " ".join((c.fail_reason or "").split())
        out.append(FailureRow(build=c.line.build, partition=c.line.partition,
                              check=c.check, placement=c.placement,
                              phase=c.fail_phase or "",
                              reason=reason[:400] + ("…" if len(reason) > 400 else ""),
                              failed=len(bad), attempts=len(cases), fixture=c.is_fixture))
    return sorted(out, key=lambda r: (r.build, r.check, r.placement))


def _with_reason(s: Session, result: str, reason: Callable[[Case], str | None]
                 ) -> list[ReasonRow]:
    """One row per test case of the session with `result`, and `reason(case)`."""
    seen: dict[tuple[str, str, str], str] = {}
    for c in s.cases:
        if c.result == result:
            seen.setdefault((c.line.build, c.check, c.placement),
                            " ".join(str(reason(c) or "").split())[:300])
    return [ReasonRow(build=b, check=ch, placement=p, reason=r)
            for (b, ch, p), r in sorted(seen.items())]


def expected_failures(s: Session) -> list[ReasonRow]:
    return _with_reason(s, "xfail", lambda c: c.fail_reason or c.expected_failure)


def skipped_cases(s: Session) -> list[ReasonRow]:
    """What the checks skipped and why (what a build lacks); a skip without a reason is
    ReFrame's (a fixture the case needs failed: its row is among the failures)."""
    return _with_reason(s, "skip", lambda c: c.skip_reason or "skipped by ReFrame (a "
                        "fixture it needs failed: see the failed test cases)")


def first_defined(cases: list[Case], var: str) -> str:
    return next((str(c.recorded(var)) for c in cases if defined(c.recorded(var))), "")


def builds(data: ReportData) -> list[BuildRow]:
    """One row per build of the current session: provenance and how its cases went."""
    s = data.current
    per: dict[str, list[Case]] = defaultdict(list)
    for c in s.cases:
        per[c.environ].append(c)
    out = []
    for env, cases in sorted(per.items()):
        results: defaultdict[str, int] = defaultdict(int)
        for c in cases:
            # ReFrame fails a pass outside its reference; the gate (Regressions) judges those
            results["outside in a pass" if c.outside_in_performance else c.result] += 1
        real = [c for c in cases if not c.is_fixture]
        bad_fixture = any(c.is_fixture for c in cases)
        status = ("failed" if bad_fixture
                  or (real and all(not c.passed and not c.outside_in_performance
                                   for c in real))
                  else "partly failed" if results.get("fail") or results.get("abort")
                  else "ok")
        out.append(BuildRow(build=cases[0].line.build, environ=env, status=status,
                            results=dict(results),
                            provenance=first_defined(cases, "build_provenance"),
                            modules=first_defined(cases, "build_modules"),
                            spec=first_defined(cases, "build_spec"),
                            hash=first_defined(cases, "build_hash"),
                            library=first_defined(cases, "library"),
                            imb=first_defined(cases, "imb_version"),
                            osu=first_defined(cases, "osu_version"),
                            npb=first_defined(cases, "npb_version")))
    ran = set(per)
    out += [BuildRow(build=env, environ=env, status="no test case ran")
            for env in s.listed_builds if env not in ran]
    return out


def nodes(s: Session) -> list[str]:
    names = set()
    for c in s.cases:
        for key in ("hosts", "job_nodelist"):
            v = c.recorded(key)
            if isinstance(v, list):
                names |= {h for h in v if defined(h) and h != "None"}
    return sorted(names)
