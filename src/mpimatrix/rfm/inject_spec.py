"""Injecting a known slowdown into one build's benchmark runs, for testing the
regression gate: MPIMATRIX_INJECT='<build name regex>[@<test regex>]:<spec>[;...]', where
spec is what the injector library reads (reframe_checks/src/mpimatrix_inject.c), e.g.
`clock=0.25` (every timed interval +25 %), `msg_us=1,byte_ns=0.5,coll_us=5`, or
`finalize_hang_s=600` (a hang in MPI_Finalize after the results). With `@<test regex>`
only the build's test cases whose name matches are slowed (one benchmark of a build:
`mpich-4.0.2-debian@MPI1:Allreduce:clock=0.1`); the first item that matches is used."""

from __future__ import annotations

import os
import re

INJECT_ENV = "MPIMATRIX_INJECT"
#: What `reframe --repeat N` (the confirmation) appends to each test case's name
_REPEAT = re.compile(r" %\.repeat_no=\d+$")
_KEYS = "(clock|msg_us|byte_ns|coll_us|finalize_hang_s)"
_SPEC = re.compile(rf"{_KEYS}=-?[0-9.]+(,{_KEYS}=-?[0-9.]+)*")


class InjectError(ValueError):
    pass


def injection_for(build_name: str, text: str | None = None, test: str = "") -> str:
    """The injector spec for a build's test case named `test` ('' for none), the same in
    the confirmation, whose names end in ` %.repeat_no=N` (a test regex ending in `$`
    matched no confirmation: a step seen in the session was gone in its confirmation).
    Every item is checked first: a malformed one raises InjectError with its text."""
    test = _REPEAT.sub("", test)
    for builds, tests, spec in _items(text):
        if builds.search(build_name) and (tests is None or tests.search(test)):
            return spec
    return ""


def _items(text: str | None) -> list[tuple[re.Pattern, re.Pattern | None, str]]:
    text = os.environ.get(INJECT_ENV, "") if text is None else text
    out = []
    for item in filter(None, (x.strip() for x in text.split(";"))):
        pattern, sep, spec = item.rpartition(":")
        if not sep or not _SPEC.fullmatch(spec):
            raise InjectError(f"{INJECT_ENV}: {item!r} is not <build regex>[@<test regex>]:"
                              "<spec>, e.g. 'mpich-5.0.2-pypi:clock=0.25'")
        builds, at, tests = pattern.partition("@")
        out.append((_compiled(builds), _compiled(tests) if at else None, spec))
    return out


def check_pattern(pattern: str) -> None:
    """Raises InjectError naming `pattern` when it is not a regular expression."""
    _compiled(pattern)


def _compiled(pattern: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as err:
        raise InjectError(f"{INJECT_ENV}: {pattern!r} is not a regular expression "
                          f"({err})") from None
