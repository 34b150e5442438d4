"""Which sessions bless takes (results/bless_sessions.py), on recorded sessions."""

from __future__ import annotations

import copy

from helpers import six_pass_session

from mpimatrix.results.bless_sessions import choose
from mpimatrix.results.measurements import load


def _sessions():
    raw = [six_pass_session(i, 0, 3) for i in range(1, 5)]
    confirmation = copy.deepcopy(raw[3])
    confirmation["session_info"]["confirms"] = raw[0]["session_info"]["uuid"]
    return [load(r) for r in raw[:3]] + [load(confirmation)]


def test_confirmations_and_disturbed_sessions_are_left_out_with_why():
    sessions = _sessions()
    first, second = sessions[0].uuid, sessions[1].uuid
    choice = choose(sessions, None, {second: "other programs used 50 CPU-s"})
    assert not choice.problem
    assert [s.uuid for s in choice.sessions] == [first, sessions[2].uuid]
    assert choice.system == "local"
    assert choice.left_out == [
        (sessions[3].uuid, f"a confirmation of session {first} (only values that looked slow)"),
        (second, "other programs used 50 CPU-s")]


def test_nothing_left_says_why():
    sessions = _sessions()
    busy = {s.uuid: "busy" for s in sessions}
    assert choose(sessions, None, busy).problem.startswith(
        "every session given was disturbed by other programs")
    assert choose(sessions[3:], None, {}).problem == (
        "none of the 1 session(s) given can be blessed from (see above); give sessions of "
        "unchanged runs")
    mode = choose(sessions[:1], "nightly", {})
    assert mode.problem and mode.left_out[0][1].endswith(", not nightly")
