"""The gate's word on one performance value, and the base of the enums whose members
are their own words."""

from __future__ import annotations

from enum import Enum


class Word(str, Enum):
    """An enum whose members print as their values (a line, a report's cell, a JSON
    field)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Status(Word):
    """A value's status, worst first. WATCH: a value alone outside its tolerance in this
    session and not in the previous one that measured it (results/watch.py). Each is
    its text too (a report's cell, a JSON field)."""

    REGRESSION = "regression"
    WATCH = "watch"
    NOISE = "noise"
    PASS = "pass"
    NOT_GATED = "not gated"
    NO_REFERENCE = "no reference"

    @property
    def gated(self) -> bool:
        """The value has a reference and a tolerance: the gate judged it."""
        return self not in (Status.NOT_GATED, Status.NO_REFERENCE)
