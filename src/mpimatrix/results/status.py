"""The gate's word on one performance value."""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """A value's status, worst first. WATCH: a value alone outside its tolerance in this
    session and not in the previous one that measured it (results/watch.py). Each is
    its text too (a report's cell, a JSON field)."""

    REGRESSION = "regression"
    WATCH = "watch"
    NOISE = "noise"
    PASS = "pass"
    NOT_GATED = "not gated"
    NO_REFERENCE = "no reference"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)
