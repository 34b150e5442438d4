"""A judged night as Prometheus metrics, in the text exposition format (0.0.4) that
node-exporter's textfile collector reads: HELP and TYPE lines, every family a gauge,
no timestamps, no `# EOF` or `# UNIT` (node-exporter refuses a file with client-side
timestamps, and reads OpenMetrics-only lines as errors). docs/prometheus.md lists the
series.

Per value the gate judged: the best sample of the session as measured
(`mpimatrix_value`), its reference, what the gate compared with the reference (against
the host, the confirmation pooled in) and its status as a number (VALUE_STATUS), so that
a status change keeps one series and an alert rule is `mpimatrix_value_status == 3`.
Per build: its factor against the other builds and its status; per partition: the host
factor; per night: its verdict (one series per verdict, 1 for the night's), exit code,
counts, start and end times, and what changed since each regressed build last passed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .changed_since import ChangedSince
from .night import Night
from .night_verdict import Verdict
from .report.axes import session_axes
from .statistics import best
from .status import Status

#: mpimatrix_value_status and mpimatrix_build_status: worse is higher, ungated below 0.
VALUE_STATUS = {Status.NO_REFERENCE: -2, Status.NOT_GATED: -1, Status.PASS: 0,
                Status.NOISE: 1, Status.WATCH: 2, Status.REGRESSION: 3}
#: What changed since a regressed build last passed, at most this many characters (a
#: label value; the report has it whole).
CHANGES_LENGTH = 300


@dataclass
class Family:
    """One metric family: its name, help and samples (labels, value)."""

    name: str
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def add(self, labels: dict[str, str], value: float) -> None:
        self.samples.append((labels, value))


def escape_label(value: str) -> str:
    """A label value as the text format quotes it: backslash, double quote, newline."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def exposition(families: list[Family]) -> str:
    """The families in the text exposition format (families without samples left out;
    a repeated label set is written once, the first: node-exporter refuses a file with
    a series twice)."""
    out = []
    for fam in families:
        if not fam.samples:
            continue
        out += [f"# HELP {fam.name} {_escape_help(fam.help)}", f"# TYPE {fam.name} gauge"]
        seen = set()
        for labels, value in fam.samples:
            text = ",".join(f'{k}="{escape_label(v)}"' for k, v in labels.items())
            if text not in seen:
                seen.add(text)
                out.append(f"{fam.name}{{{text}}} {format_value(value)}")
    return "\n".join(out) + "\n"


def series_count(families: list[Family]) -> int:
    return sum(len({tuple(labels.items()) for labels, _ in fam.samples}) for fam in families)


def _split(partition: str) -> tuple[str, str]:
    """'system:partition' -> (system, partition)."""
    system, _, name = partition.partition(":")
    return system, name


def night_families(night: Night) -> list[Family]:
    """Every family of the night (see the module's docstring)."""
    session, judged = night.session, night.judgement
    axes = session_axes(session.cases)
    value = Family("mpimatrix_value", "Best sample of the night's session, as measured")
    reference = Family("mpimatrix_value_reference", "The value's reference")
    judged_value = Family("mpimatrix_value_judged", "What the gate compared with the "
                          "reference: against the host factor, the confirmation pooled in")
    status = Family("mpimatrix_value_status", "The gate's status of the value: -2 no "
                    "reference, -1 not gated, 0 pass, 1 noise, 2 watch, 3 regression")

    def build_labels(system: str, partition: str, build: str) -> dict[str, str]:
        a = axes.get(build)
        return {"system": system, "partition": partition, "build": build,
                "family": a.family if a else "", "fabric": a.fabric if a else "",
                "compiler": a.compiler if a else ""}

    for v in judged.verdicts:
        labels = {**build_labels(*_split(v.partition), v.build), "benchmark": v.check,
                  "placement": v.placement, "var": v.var, "unit": v.unit}
        value.add(labels, best(v.samples, v.higher_is_better))
        status.add(labels, VALUE_STATUS[v.status])
        if v.reference:
            reference.add(labels, v.reference)
        if v.status.gated:
            judged_value.add(labels, v.value)
    build_factor = Family("mpimatrix_build_factor", "The build's level against the other "
                          "builds' median (1: as they are)")
    build_status = Family("mpimatrix_build_status", "The gate's status of the build as a "
                          "whole: 0 pass, 1 noise, 3 regression")
    for b in judged.builds:
        labels = build_labels(*_split(b.partition), b.build)
        build_factor.add(labels, b.factor)
        build_status.add(labels, VALUE_STATUS[b.status])
    host_factor = Family("mpimatrix_host_factor", "The partition's host factor: the "
                         "median build's slowdown against its references")
    host_slow = Family("mpimatrix_host_slow", "1: every build slow at once on the "
                       "partition (the machine, not a build)")
    for h in judged.hosts:
        labels = dict(zip(("system", "partition"), _split(h.partition), strict=True))
        if h.factor is not None:
            host_factor.add(labels, h.factor)
        host_slow.add(labels, int(h.slow))
    return [value, reference, judged_value, status, build_factor, build_status,
            host_factor, host_slow, *_night(night)]


def _night(night: Night) -> list[Family]:
    """The night's own families, once per system it ran on."""
    session, verdict, n = night.session, night.verdict, night.verdict.counts
    verdicts = Family("mpimatrix_night_verdict", "1 for the night's verdict, 0 for the "
                      "others (GREEN, WATCH, HOST, REGRESSION, DISTURBED, XPASS, FAILED)")
    exit_code = Family("mpimatrix_night_exit_code", "The exit code of `mpimatrix run`")
    counts = {name: Family(f"mpimatrix_night_{name}", text) for name, text in (
        ("test_cases", "Test cases of the night"),
        ("failed_test_cases", "Test cases failed for another reason than their references"),
        ("xpassed_test_cases", "Expected failures that passed"),
        ("regressions", "Confirmed regressions (whole builds and single values)"),
        ("watched_values", "Values on watch"),
        ("slow_hosts", "Partitions whose every build ran slow at once"))}
    stamps = Family("mpimatrix_night_timestamp_seconds", "When the night's session "
                    "started and ended (edge), Unix time")
    info = Family("mpimatrix_night_info", "The night's session: UUID, mode, Spack lock")
    changed = Family("mpimatrix_build_changed_info", "What changed since a regressed "
                     "build last passed (shortened; the report has it whole)")
    for system in sorted(session.systems) or ["local"]:
        for word in Verdict:
            verdicts.add({"system": system, "verdict": str(word)},
                         int(word is verdict.verdict))
        exit_code.add({"system": system}, verdict.exit_code)
        for name, count in (("test_cases", n.cases), ("failed_test_cases", n.failed),
                            ("xpassed_test_cases", n.xpassed),
                            ("regressions", n.regressions),
                            ("watched_values", n.watched), ("slow_hosts", n.slow_hosts)):
            counts[name].add({"system": system}, count)
        stamps.add({"system": system, "edge": "start"}, session.start)
        if session.elapsed:
            stamps.add({"system": system, "edge": "end"}, session.start + session.elapsed)
        info.add({"system": system, "session": session.uuid, "mode": session.mode,
                  "lock": session.lock}, 1)
        for c in night.changed:
            changed.add({"system": system, "build": c.build,
                         "since": c.since.uuid if c.since else "",
                         "changes": _changes_text(c)}, 1)
    return [verdicts, exit_code, *counts.values(), stamps, info, changed]


def _changes_text(c: ChangedSince) -> str:
    """What changed, one line: the changes joined, or why there are none to show."""
    if c.since is None or not c.changes:
        text = c.heading()
    else:
        text = "; ".join(ch.text for ch in c.changes)
    if len(text) <= CHANGES_LENGTH:
        return text
    return text[:CHANGES_LENGTH - 1].rstrip() + "…"
