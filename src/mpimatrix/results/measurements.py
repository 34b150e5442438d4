"""A ReFrame session as typed records, read once: the session, its test cases (one per
run: the repetitions), and each case's performance values. Bless, the gate, the
history, the summary and the report all read these instead of the raw JSON.

`load` takes a ReFrame JSON report or a session from the results database (the same
shape); `as_session` also lets an already loaded Session through.
"""

from __future__ import annotations

import copy
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from ..placement import Placement, placement_named
from .sessions import defined, session_info, session_mode

#: Units of rates and shares, for values recorded without perf_info.
HIGHER_IS_BETTER_UNITS = {"MB/s", "GB/s", "Mbytes/sec", "%", "msg/s", "Msg/sec"}


class ValueKey(NamedTuple):
    """One performance value of one test case, the same in every run and session."""

    partition: str  # system:partition
    environ: str
    case: str  # the test case's name without ReFrame's %.repeat_no
    var: str


@dataclass(frozen=True, order=True)
class Line:
    """A build on a partition (one line of every plot)."""

    build: str
    partition: str  # system:partition

    def label(self, many_partitions: bool) -> str:
        return f"{self.build} ({self.partition.split(':', 1)[-1]})" if many_partitions \
            else self.build


@dataclass(frozen=True)
class PerfValue:
    """One performance value of a test case, with what it measures."""

    var: str  # e.g. latency_8B
    value: float | None
    ref: float | None
    lower: float | None
    upper: float | None
    unit: str
    result: str  # pass, fail, xfail, ...
    quantity: str  # e.g. latency (the variable name without size when not recorded)
    size: int | None  # message size in bytes, when the value is for one size
    higher_is_better: bool

    @property
    def measured(self) -> bool:
        return self.value is not None


def _perf_values(tc: dict) -> tuple[PerfValue, ...]:
    perf_info = tc.get("perf_info")
    info = perf_info if isinstance(perf_info, dict) else {}
    out = []
    for fullvar, pv in (tc.get("perfvalues") or {}).items():
        var = fullvar.rsplit(":", 1)[-1]
        meta = info.get(var) or {}
        size = meta.get("size")
        out.append(PerfValue(
            var, pv[0], pv[1], pv[2], pv[3], pv[4], pv[5],
            meta.get("quantity", var), int(size) if size not in (None, "") else None,
            meta.get("better") == "higher" or (not meta and pv[4] in HIGHER_IS_BETTER_UNITS)))
    return tuple(out)


def case_name(name: str) -> str:
    """A test case's name without ReFrame's `%.repeat_no=N` (the repetitions of one case
    are samples of the same values)."""
    return re.sub(r"\s*%\.repeat_no=\d+", "", name)


def _text(value) -> str:
    return str(value) if defined(value) else ""


@dataclass(frozen=True, eq=False)
class Case:
    """One test case of one run of a session (`tc`: ReFrame's record, for what only the
    report's views read: curves, job nodes, failure reasons)."""

    tc: dict = field(repr=False)
    session: str  # the session's UUID
    run: int  # the run of the session: the repetition

    @cached_property
    def name(self) -> str:
        return case_name(self.tc["name"])

    @property
    def test_class(self) -> str:
        return self.tc["name"].split()[0]

    @property
    def system(self) -> str:
        return str(self.tc.get("system"))

    @property
    def partition(self) -> str:
        """system:partition"""
        return f"{self.tc.get('system')}:{self.tc.get('partition')}"

    @property
    def environ(self) -> str:
        return self.tc.get("environ", "?")

    @property
    def build(self) -> str:
        build = self.tc.get("build_name")
        return build if defined(build) else self.environ

    @property
    def check(self) -> str:
        """The check and what it measures: 'Imb MPI1:PingPong', 'PlacementSanity'."""
        cls = self.test_class.removesuffix("Check")
        return f"{cls} {self.tc['benchmark']}" if defined(self.tc.get("benchmark")) else cls

    @property
    def benchmark(self) -> str:
        """What the test case measures, without the check's suite: 'MPI1:PingPong'."""
        b = self.tc.get("benchmark")
        return b if defined(b) else self.check

    @property
    def placement(self) -> str:
        """The placement's name (intranode, internode, 2x4), '' for none."""
        return _text(self.tc.get("placement"))

    @cached_property
    def shape(self) -> Placement | None:
        """The placement as nodes x ranks per node (None without one, or another name)."""
        return placement_named(self.placement)

    @property
    def nodes(self) -> int:
        tasks, ppn = self.tc.get("num_tasks") or 0, self.tc.get("num_tasks_per_node") or 0
        if tasks and ppn:
            return max(1, -(-int(tasks) // int(ppn)))
        nodes = self.tc.get("job_nodelist")
        return len(nodes) if isinstance(nodes, list) and nodes else 1

    @property
    def line(self) -> Line:
        return Line(self.build, self.partition)

    @property
    def ref_key(self) -> str:
        return _text(self.tc.get("ref_key"))

    @property
    def result(self) -> str:
        return self.tc.get("result", "?")

    @property
    def passed(self) -> bool:
        return self.result == "pass"

    @property
    def measured(self) -> bool:
        """Its values are measurements: passed, or failed only their references."""
        return self.passed or self.tc.get("fail_phase") == "performance"

    @property
    def oversubscribed(self) -> bool:
        return self.tc.get("oversubscribed") is True

    @property
    def injected(self) -> str:
        """What the regression injector did to this build ('' for nothing)."""
        return _text(self.tc.get("injected"))

    @property
    def lock_sha256(self) -> str:
        return _text(self.tc.get("lock_sha256"))

    @property
    def build_hash(self) -> str:
        return _text(self.tc.get("build_hash"))

    @property
    def hashcode(self) -> str:
        """ReFrame's hash of the test case (`reframe -n /HASH` selects it)."""
        return self.tc["hashcode"]

    @property
    def key(self) -> tuple:
        """The same test case in every run and session."""
        return (self.tc["name"], self.tc["system"], self.tc["partition"], self.environ)

    @cached_property
    def values(self) -> tuple[PerfValue, ...]:
        return _perf_values(self.tc)

    def value_key(self, var: str) -> ValueKey:
        return ValueKey(self.partition, self.environ, self.name, var)


@dataclass(frozen=True, eq=False)
class Session:
    """A stored session: its info (with `mpimatrix run`'s extras) and its test cases
    (fixtures only when they did not pass: a probe compiled once per build that worked
    says nothing about performance)."""

    info: dict = field(repr=False)
    cases: tuple[Case, ...] = field(repr=False)
    runs: int
    raw: dict = field(repr=False)  # the session as stored

    @property
    def uuid(self) -> str:
        return str(self.info.get("uuid") or "?")

    @property
    def start(self) -> float:
        return float(self.info.get("time_start_unix") or 0)

    @property
    def date(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M", time.gmtime(self.start))

    @property
    def confirms(self) -> str:
        """The session this one re-measured (a gate confirmation session), if any."""
        return _text(self.info.get("confirms"))

    @property
    def mode(self) -> str:
        """The ReFrame mode it ran in, '?' if none is recorded."""
        return session_mode(self.info) or "?"

    @property
    def spack_lock(self) -> str:
        """The Spack lock's sha256 `mpimatrix run` recorded for the session ('' if none)."""
        return _text(self.info.get("spack_lock"))

    @property
    def software(self) -> str:
        """The id of the software record `mpimatrix run` kept for the session ('' if none)."""
        return _text(self.info.get("software"))

    @property
    def lock(self) -> str:
        """The Spack lock's sha256 the builds came from ('' for none or several)."""
        lock = self.spack_lock
        if not lock:
            locks = {c.lock_sha256 for c in self.cases} - {""}
            lock = locks.pop() if len(locks) == 1 else ""
        return lock

    @property
    def systems(self) -> set[str]:
        return {c.tc["system"] for c in self.cases if c.tc.get("system")}

    @property
    def injected_builds(self) -> set[str]:
        return {c.build for c in self.cases if c.injected}

    @property
    def listed_builds(self) -> list[str]:
        """The environments `mpimatrix run` said it would run (session extras)."""
        return [b for b in (self.info.get("builds") or "").split("+") if b]

    @property
    def skipped_builds(self) -> list[tuple[str, str]]:
        """(build, reason) of the builds `mpimatrix run` skipped (session extras)."""
        out = []
        for item in (self.info.get("skipped_builds") or "").split(" | "):
            if item.strip():
                name, _, reason = item.partition(": ")
                out.append((name.strip(), reason.strip()))
        return out

    def counts(self) -> dict[str, int]:
        return dict(Counter(c.result for c in self.cases))

    @property
    def passed_fixtures(self) -> Counter:
        """The fixtures left out of `cases` (those that passed), per kind: ReFrame counts
        them as test cases too ("Ran 109/109 test case(s)" for 98 cases and 11 of these)."""
        return Counter(fixture_kind(tc) for run in self.raw.get("runs") or []
                       for tc in run.get("testcases") or []
                       if tc.get("fixture") and tc.get("result") == "pass")


def fixture_kind(tc: dict) -> str:
    """What a fixture test case did: 'probe' (ProbeBuild), else 'bench' (a build of OSU or
    IMB for a build without one)."""
    return "probe" if str(tc.get("name", "")).startswith("ProbeBuild") else "bench"


def load(data: dict) -> Session:
    """The typed records of a ReFrame session report."""
    uuid = (data.get("session_info") or {}).get("uuid", "?")
    cases = []
    for i, run in enumerate(data.get("runs") or []):
        for tc in run.get("testcases") or []:
            if tc.get("fixture") and tc.get("result") == "pass":
                continue
            cases.append(Case(tc, uuid, int(tc.get("run_index", i) or i)))
    return Session(session_info(data), tuple(cases), len(data.get("runs") or []), data)


def with_references(report: dict, refs: dict) -> dict:
    """The session as ReFrame would have reported it against these references."""
    out = copy.deepcopy(report)
    for case in load(out).cases:
        entry = (((refs.get(case.test_class) or {}).get(case.partition) or {}).get(
            case.environ) or {}).get(case.tc.get("ref_key")) or {}
        for fullvar, pv in (case.tc.get("perfvalues") or {}).items():
            ref = entry.get(fullvar.rsplit(":", 1)[-1])
            pv[1:4] = [ref[0], ref[1], ref[2]] if ref else [0, None, None]
    return out


def as_session(session: Session | dict) -> Session:
    return session if isinstance(session, Session) else load(session)


def as_sessions(sessions) -> list[Session]:
    return [as_session(s) for s in sessions]
