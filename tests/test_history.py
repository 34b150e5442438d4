"""The history for the nightly (results.history): change points in each value's series,
each build's values judged against the host, a series per whole build and one for the
host. On twelve real 3-pass quick sessions of a quiet machine (the seven recorded
six-pass sessions, each split into passes 1-3 and 4-6, in the order they ran) with
steps made by a known factor from a given session on: exactly what the clock injector
does to a real run (every timed interval longer by that factor)."""

from __future__ import annotations

import copy

import pytest
from helpers import six_pass_session

from mpimatrix.results import history
from mpimatrix.results.measurements import Session, load
from mpimatrix.results.policy import DEFAULT_POLICY

VICTIM = "mpich-5.0.2-pypi"


def nights(step_from: int = 99, factor: float = 1.0, host_from: int = 99,
           host_factor: float = 1.0, n: int = 12) -> list[Session]:
    """n sessions, one a night: VICTIM's times x factor (rates /) from session step_from
    on, every build's x host_factor from session host_from on."""
    halves = [six_pass_session(i, a, a + 3) for i in range(1, 8) for a in (0, 3)]
    out = []
    for i, s in enumerate(halves[:n]):
        s = copy.deepcopy(s)
        s["session_info"]["uuid"] = f"s{i + 1:02d}"
        s["session_info"]["time_start_unix"] = 1_800_000_000 + 86400 * i
        for run in s["runs"]:
            for tc in run["testcases"]:
                f = host_factor if i + 1 >= host_from else 1.0
                if tc.get("build_name") == VICTIM and i + 1 >= step_from:
                    f *= factor
                for pv in (tc.get("perfvalues") or {}).values():
                    if pv[4] != "%":
                        pv[0] = pv[0] / f if pv[4] == "MB/s" else pv[0] * f
        out.append(load(s))
    return out


def idents(changes) -> set[tuple]:
    return {(c.series.key, c.point.session) for c in changes}


def own_steps() -> set[tuple]:
    """The steps the recorded values already have: on this VM a value can move between
    two levels within an hour (a vCPU placement of the host's: Debian MPICH's 8 B
    Sendrecv latency 0.16 us for two sessions, 0.21 us after)."""
    return idents(history.all_changes(nights()))


def found(changes) -> dict[tuple[str, bool], set[str]]:
    """{(build, whole build?): sessions of its changes}"""
    out: dict = {}
    for c in changes:
        out.setdefault((c.series.build, c.series.whole_build), set()).add(c.point.session)
    return out


def test_a_step_below_the_tolerance_is_found_at_its_session_and_nowhere_else():
    """+15 % from session 6: the whole build's series and its values name session 6 or
    7 (after three nights at the new level); the other builds' series have no step but
    those they had without it."""
    changes = history.all_changes(nights(step_from=6, factor=1.15))
    mine = [c for c in changes if c.series.build == VICTIM]
    assert found(mine).get((VICTIM, True)) in ({"s06"}, {"s07"}), [c.line() for c in changes]
    assert {c.point.session for c in mine if c.series.unit != "x"} <= {"s06", "s07"} | {
        s for _, s in own_steps()}, [c.line() for c in mine]
    assert idents(c for c in changes if c.series.build != VICTIM) <= own_steps()
    whole = next(c for c in changes if c.series.whole_build)
    # its values tested at the build's step: most moved with it, each named there
    values = [s for s in history.series_of(nights()) if s.build == VICTIM and s.unit != "%"]
    moved = [c for c in mine if not c.series.whole_build]
    assert len(moved) >= 0.75 * len(values), [c.line() for c in mine]
    for c in moved:
        assert c.point.session == whole.point.session and c.worse
        assert c.pvalue <= DEFAULT_POLICY.with_build_pvalue
        assert abs(c.change) >= DEFAULT_POLICY.min_build_step
    assert whole.worse and whole.change == pytest.approx(0.15, abs=0.03)
    assert whole.line().startswith(f"SLOWER {VICTIM} (the whole build, local:default): +")
    assert "against the host" in whole.line() and "from session s0" in whole.line()


def test_without_a_step_no_build_and_no_host_moves():
    """Twelve unchanged sessions: no whole build and no host has a step; a value's own
    steps are the machine's (each at least MIN_STEP, significant at a tenth of the
    p-value, held for three sessions): one of 78 series here."""
    changes = history.all_changes(nights())
    assert not [c for c in changes if c.series.whole_build or c.series.build == history.HOST]
    assert len(changes) <= 1, [c.line() for c in changes]
    for c in changes:
        assert abs(c.change) >= DEFAULT_POLICY.min_step
        assert c.pvalue < DEFAULT_POLICY.lone_pvalue_share * DEFAULT_POLICY.max_pvalue
        i = c.index
        assert history.MIN_SEGMENT <= i <= len(c.series.points) - history.MIN_SEGMENT


def test_a_step_of_the_whole_host_is_one_host_change():
    """Every build 20 % slower from session 6 (a kernel or fabric change, or a VM whose
    neighbours got busy): one change, the host's; the builds' series are judged against
    the host and have none. Judged as measured, they would have many."""
    sessions = nights(host_from=6, host_factor=1.2)
    changes = history.all_changes(sessions)
    host = [c for c in changes if c.series.build == history.HOST]
    assert [c.point.session for c in host] in (["s06"], ["s07"]), [c.line() for c in changes]
    assert host[0].change == pytest.approx(0.2, abs=0.03)
    assert host[0].line().startswith("SLOWER host local:default: every build +")
    assert idents(c for c in changes if c not in host) <= own_steps()
    raw = [c for s in history.series_of(sessions) for c in history.change_points(s)]
    assert len({c.series.build for c in raw}) == 3


def test_one_builds_step_is_found_while_the_host_drifts():
    changes = history.all_changes(nights(step_from=9, factor=1.15, host_from=4,
                                         host_factor=1.25))
    got = found(changes)
    assert got.get((history.HOST, False)) in ({"s04"}, {"s05"}), [c.line() for c in changes]
    assert got.get((VICTIM, True)) in ({"s09"}, {"s10"}), [c.line() for c in changes]
    assert not [b for b, whole in got if whole and b != VICTIM]


def test_changes_match_their_series_by_key():
    """all_changes and series_of build their own Series objects: a change is matched to
    its series by key (`mpimatrix validate history` once compared identities and
    counted every found step as missed)."""
    sessions = nights(step_from=6, factor=1.3)
    changes = [c for c in history.all_changes(sessions) if not c.series.whole_build]
    keys = {s.key for s in history.series_of(sessions)}
    assert changes and all(c.series.key in keys for c in changes)
    assert not any(c.series is s for c in changes for s in history.series_of(sessions))
