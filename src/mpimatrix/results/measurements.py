"""A ReFrame session as typed records, read once: the session, its test cases (one per
run: the repetitions), and each case's performance values. Bless, the gate, the
history, the summary and the report all read these instead of the raw JSON.

`load` takes a ReFrame JSON report or a session from the results database (the same
shape); `as_session` also lets an already loaded Session through. A case's ReFrame
record (`Case.tc`) is read here only: everything else reads the typed properties.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..placement import Placement, placement_named
from .sessions import defined, session_info, session_mode
from .values import Line, PerfValue, ValueKey, case_name, perf_values


def _text(value) -> str:
    return str(value) if defined(value) else ""


@dataclass(frozen=True, eq=False)
class Case:
    """One test case of one run of a session (`tc`: ReFrame's record, which only this
    module reads)."""

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
    def partition_name(self) -> str:
        """The partition without its system, as recorded ('' if none is)."""
        return str(self.tc.get("partition", ""))

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
        return self.passed or self.fail_phase == "performance"

    @property
    def fail_phase(self) -> str | None:
        """The phase it failed in (sanity, performance, ...), None if it did not fail."""
        return self.tc.get("fail_phase")

    @property
    def fail_reason(self) -> str | None:
        return self.tc.get("fail_reason")

    @property
    def expected_failure(self) -> str | None:
        """Why it was expected to fail: the check's reason (ReFrame keeps none)."""
        return self.tc.get("expected_failure")

    @property
    def skip_reason(self) -> str:
        """Why it was skipped, as the check said ('' when it was not, or said nothing)."""
        return _text(self.tc.get("skip_reason")) if self.result == "skip" else ""

    @property
    def failed_in_sanity(self) -> bool:
        """It failed, aborted or erred for another reason than its references."""
        return self.result in ("fail", "abort", "error") and self.fail_phase != "performance"

    @property
    def outside_in_performance(self) -> bool:
        """It ran, and failed only ReFrame's performance check against its references."""
        return self.result == "fail" and self.fail_phase == "performance"

    @property
    def is_fixture(self) -> bool:
        return bool(self.tc.get("fixture"))

    @property
    def time_run(self) -> float:
        """Seconds its run phase took (0.0 if not recorded)."""
        return float(self.tc.get("time_run") or 0)

    @property
    def hosts(self) -> list:
        """The nodes it ran on: ReFrame's hosts, else the job's node list ([] if neither)."""
        hosts = self.tc.get("hosts") or self.tc.get("job_nodelist") or []
        return [hosts] if isinstance(hosts, str) else hosts

    @property
    def node_load(self) -> dict | None:
        """What the node meter read on its job's nodes (rfm.slurm_job.node_load)."""
        return self.tc.get("node_load")

    @property
    def curve(self) -> dict | None:
        """The size curves the check recorded ({table: rows}), None without."""
        curve = self.tc.get("curve")
        return curve if isinstance(curve, dict) else None

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
    def build_spec(self) -> str | None:
        """The build's spec as recorded (None if it is not)."""
        return self.tc.get("build_spec")

    @property
    def build_fields(self) -> dict[str, str]:
        """The build's axes the check recorded (build_family, ...), '' where it did not."""
        return {k: self.tc.get(f"build_{k}") or "" for k in
                ("family", "version", "fabric", "compiler", "provenance")}

    @property
    def library(self) -> str:
        """MPI_Get_library_version, as the check recorded it ('' if not)."""
        return _text(self.tc.get("library"))

    def recorded(self, name: str) -> Any:
        """A field of the record ReFrame wrote (for fields chosen by name at run time),
        None if it has none."""
        return self.tc.get(name)

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
        """As ReFrame reported them (the gate takes each reference from its
        ReferenceSet)."""
        return perf_values(self.tc)

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
    def elapsed(self) -> float:
        """Seconds ReFrame ran, from its start to its end (0 where not recorded)."""
        start, end = self.info.get("time_start_unix"), self.info.get("time_end_unix")
        if isinstance(start, int | float) and isinstance(end, int | float) and end > start:
            return float(end - start)
        return 0.0

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
    """What a fixture test case did: 'probe' (ProbeBuild, MpiioBenchBuild: the project's
    own programs), else 'bench' (a build of OSU or IMB for a build without one)."""
    own = ("ProbeBuild", "MpiioBenchBuild")
    return "probe" if str(tc.get("name", "")).startswith(own) else "bench"


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


def as_session(session: Session | dict) -> Session:
    return session if isinstance(session, Session) else load(session)


def as_sessions(sessions) -> list[Session]:
    return [as_session(s) for s in sessions]
