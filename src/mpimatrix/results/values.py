"""The performance values of a test case (measurements.py's Case.values) and the keys
they are found by: the value in every run and session, the line of every plot."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from ..units import SHARE_UNIT, human_size, is_share


class Kind(str, Enum):
    """What a value measures decides how it is judged: times and rates relative to their
    level, shares in percentage points."""

    TIME = "time"
    RATE = "rate"
    SHARE = "share"

    def __str__(self) -> str:
        return self.value


def kind_of(unit: str, higher_is_better: bool) -> Kind:
    if is_share(unit):
        return Kind.SHARE
    return Kind.RATE if higher_is_better else Kind.TIME


def value_label(quantity: str, size: int | None) -> str:
    """A value as people read it: "latency at 8 B", "t_avg" (no size)."""
    return f"{quantity} at {human_size(size, ' ')}" if size is not None else quantity


#: Units of rates and shares, for values recorded without perf_info.
HIGHER_IS_BETTER_UNITS = {"MB/s", "GB/s", "Mbytes/sec", SHARE_UNIT, "msg/s", "Msg/sec",
                          "Mop/s"}


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

    @property
    def kind(self) -> Kind:
        return kind_of(self.unit, self.higher_is_better)

    @property
    def is_share(self) -> bool:
        return is_share(self.unit)


def perf_values(tc: dict) -> tuple[PerfValue, ...]:
    """The performance values of a test case's record (ReFrame's perfvalues, with what
    the check recorded about each in perf_info), as ReFrame reported them."""
    perf_info = tc.get("perf_info")
    info = perf_info if isinstance(perf_info, dict) else {}
    out = []
    for fullvar, pv in (tc.get("perfvalues") or {}).items():
        var = fullvar.rsplit(":", 1)[-1]
        meta = info.get(var) or {}
        size = meta.get("size")
        ref = pv[1:4]
        out.append(PerfValue(
            var, pv[0], ref[0], ref[1], ref[2], pv[4], pv[5],
            meta.get("quantity", var), int(size) if size not in (None, "") else None,
            meta.get("better") == "higher" or (not meta and pv[4] in HIGHER_IS_BETTER_UNITS)))
    return tuple(out)


def case_name(name: str) -> str:
    """A test case's name without ReFrame's `%.repeat_no=N` (the repetitions of one case
    are samples of the same values)."""
    return re.sub(r"\s*%\.repeat_no=\d+", "", name)
