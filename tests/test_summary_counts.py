"""The summary's count line: the test cases of the table, and apart the fixtures ReFrame
counts among its test cases too (the probe builds, the builds of OSU/IMB), so that the
two counts a user sees (ours and ReFrame's "Ran N/N test case(s)") are explained."""

from __future__ import annotations

import gzip
import json

from helpers import FIXTURES

from mpimatrix.results import summary
from mpimatrix.results.measurements import load


def _case(name: str, result: str = "pass", fixture: bool = False) -> dict:
    return {"name": name, "build_name": "openmpi-4.1.4-debian", "partition": "default",
            "placement": "intranode", "result": result, "fixture": fixture,
            "perfvalues": {}, **({"fail_phase": "compile", "fail_reason": "make: error"}
                                 if result == "fail" else {})}


def _last_line(session: dict) -> str:
    """The count line (the one before the night's VERDICT line)."""
    return summary.format_table(load(session)).splitlines()[-2]


def test_fixtures_reframe_counts_are_named_apart():
    session = {"session_info": {"uuid": "u"}, "runs": [{"testcases": [
        _case("MpiPlacementCheck"), _case("OsuCheck %benchmark=latency"),
        _case("ProbeBuild ~local:default+openmpi-4_1_4-debian", fixture=True),
        _case("ProbeBuild ~local:default+mpich-4_0_2-debian", fixture=True),
        _case("OsuFromSource ~local:default+openmpi-4_1_4-debian", fixture=True),
        _case("ImbFromSource ~local:default+mpich-4_0_2-debian", "fail", fixture=True)]}]}
    line = _last_line(session)
    # a failed fixture is a row of the table (its reason matters), a passed one is not
    assert line.startswith("3 test case(s) (+3 fixture(s) ReFrame counts as test cases too: "
                           "1 benchmark build(s), 2 probe build(s); 6 in all), 1 failed, "), line


def test_without_fixtures_the_line_is_as_before():
    session = {"session_info": {"uuid": "u"}, "runs": [{"testcases": [_case("X")]}]}
    assert _last_line(session).startswith("1 test case(s), 0 failed, 0 skipped, 0 known "
                                         "fault(s)")


def test_a_recorded_session_adds_up_to_reframes_count():
    with gzip.open(FIXTURES / "reports" / "quick-local-1.json.gz", "rt") as fp:
        session = json.load(fp)
    line = _last_line(session)
    total = session["session_info"]["num_cases"]  # what ReFrame said: Ran 52/52
    assert line.startswith(f"47 test case(s) (+5 fixture(s) ReFrame counts as test cases "
                           f"too: 5 probe build(s); {total} in all)"), line


def test_a_skipped_case_is_no_failure_of_the_night_and_an_unexpected_pass_is():
    """The night FAILED (`mpimatrix run` exits 1) for a test case that failed other than
    by its references, XPASS (exit 1 too) for a known fault that passed, as ReFrame
    counts it; a test case ReFrame skipped (no build to run it on) is no failure, nor is
    one that failed only its references (the gate judges that)."""
    from mpimatrix.results.night import judge_night
    from mpimatrix.results.reference_set import NO_REFERENCES

    def verdict(*results: str) -> tuple[str, int, int, int]:
        session = load({"session_info": {"uuid": "u"}, "runs": [{"testcases": [
            _case(f"Check{i}", r) for i, r in enumerate(results)]}]})
        v = judge_night(session, [], NO_REFERENCES).verdict
        return str(v.verdict), v.exit_code, v.counts.failed, v.counts.xpassed

    assert verdict("pass", "skip", "xfail") == ("GREEN", 0, 0, 0)
    assert verdict("pass", "xpass", "skip") == ("XPASS", 1, 0, 1)
    assert verdict("pass", "xpass", "fail", "skip") == ("FAILED", 1, 1, 1)
    perf = {"session_info": {"uuid": "u"}, "runs": [{"testcases": [
        {**_case("Slow"), "result": "fail", "fail_phase": "performance"}]}]}
    assert judge_night(load(perf), [], NO_REFERENCES).verdict.counts.failed == 0


def test_a_skipped_case_says_why_in_its_row_the_count_and_the_verdict():
    """A case the check skipped (NPB's Fortran kernels on a build without mpif90) shows
    the check's reason in its row; the count line and the verdict count it apart from
    the cases that passed."""
    why = "NPB CG.S on mpich-5.0.2-pypi: no Fortran MPI wrapper (mpif90 not found)"
    session = {"session_info": {"uuid": "u"}, "runs": [{"testcases": [
        _case("NpbCheck %kernel=IS"), {**_case("NpbCheck %kernel=CG", "skip"),
                                       "skip_reason": why},
        _case("NpbCheck %kernel=EP", "skip")]}]}
    lines = summary.format_table(load(session)).splitlines()
    row = next(ln for ln in lines if why in ln)
    assert " skip " in row and row.rstrip().endswith(f"[skipped] {why}"), lines
    assert lines[-2].startswith("3 test case(s), 0 failed, 2 skipped, 0 known fault(s)"), lines
    assert lines[-1] == ("VERDICT: GREEN: no regression: 1 test case(s) passed, 2 skipped "
                         "(their rows say why) (exit 0)"), lines[-1]
