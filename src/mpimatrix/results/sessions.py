"""ReFrame session reports (the JSON of a run, or a session from the results
database): loading them and walking their test cases and performance values."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


class SessionError(Exception):
    """A report or session that cannot be used; the message names it and the fix."""


def load_report(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise SessionError(f"{path}: cannot read ReFrame report: {err.strerror}") from None
    except ValueError as err:
        raise SessionError(f"{path}: not a ReFrame JSON report ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise SessionError(f"{path}: not a ReFrame JSON report (no 'runs' list)")
    return data


def testcases(sessions: list[dict]) -> Iterator[dict]:
    """The test cases of the sessions; fixtures (e.g. a probe compiled once per build)
    only when they did not pass."""
    for s in sessions:
        for run in s.get("runs", []):
            for tc in run.get("testcases", []):
                if not tc.get("fixture") or tc.get("result") != "pass":
                    yield tc


def session_info(session: dict) -> dict:
    """The session's info with the extras `mpimatrix run` gave (--session-extras: mode,
    confirms, builds, ...), which ReFrame stores beside the info or under 'extras'."""
    info = session.get("session_info") or {}
    return {**info, **(info.get("extras") or {})}


def session_mode(info: dict) -> str:
    """The ReFrame mode a session ran in ("" if none): the extra `mpimatrix run` adds,
    else --mode on ReFrame's command line (plain `reframe -r --mode nightly`)."""
    if info.get("mode"):
        return str(info["mode"])
    m = re.search(r"--mode[= ](\S+)", info.get("cmdline") or "")
    return m.group(1) if m else ""


def defined(value) -> bool:
    """ReFrame writes '<undefined>' for variables a test case never set."""
    return value not in (None, "", "<undefined>")


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


def perf_values(tc: dict) -> list[PerfValue]:
    info = tc.get("perf_info") if isinstance(tc.get("perf_info"), dict) else {}
    out = []
    for fullvar, pv in (tc.get("perfvalues") or {}).items():
        var = fullvar.rsplit(":", 1)[-1]
        meta = info.get(var) or {}
        size = meta.get("size")
        out.append(PerfValue(
            var, pv[0], pv[1], pv[2], pv[3], pv[4], pv[5],
            meta.get("quantity", var), int(size) if size not in (None, "") else None,
            meta.get("better") == "higher" or (not meta and pv[4] in HIGHER_IS_BETTER_UNITS)))
    return out


#: Units of rates and shares, for values recorded without perf_info.
HIGHER_IS_BETTER_UNITS = {"MB/s", "GB/s", "Mbytes/sec", "%", "msg/s", "Msg/sec"}


def case_name(tc: dict) -> str:
    """The test case's name without ReFrame's `%.repeat_no=N` (the repetitions of one
    case are samples of the same values)."""
    return re.sub(r"\s*%\.repeat_no=\d+", "", tc["name"])


def build_label(tc: dict) -> str:
    build = tc.get("build_name")
    return build if defined(build) else tc.get("environ", "?")


def check_label(tc: dict) -> str:
    cls = tc["name"].split()[0]
    if defined(tc.get("benchmark")):
        return f"{cls.removesuffix('Check')} {tc['benchmark']}"
    return cls.removesuffix("Check")
