"""One verdict per night, the same everywhere: on recorded nights of each outcome, the
exit code and the text table of the run's judgement (`run.session.judge_report`, what
`mpimatrix run` does once ReFrame has written its report), the text table of `mpimatrix
report`, and the HTML headline and Markdown summary of `mpimatrix report --html` say the
same, under the policy bless recorded.

The nights: passes 1-3 of the recorded six-pass quick sessions of a quiet machine
(tests/fixtures/reports), blessed from nights 1-4 and stored as ReFrame stores them;
night 6 judged, as recorded (green) and changed to each other outcome."""

from __future__ import annotations

import copy
import json
import re

import pytest
import yaml
from helpers import reported_against, six_pass_session, slow_class, slowed
from stored_db import store

from mpimatrix.cli import main
from mpimatrix.paths import references_dir, reports_dir, results_db
from mpimatrix.reference_file import stats_path
from mpimatrix.results.blessing import bless
from mpimatrix.results.night_verdict import Verdict
from mpimatrix.results.policy import POLICY_KEY
from mpimatrix.run.nights import load_record_path
from mpimatrix.run.session import judge_report

#: night i starts at i hours after this
T0 = 1_780_000_000.0
VICTIM = "mpich-4.0.2-debian"


@pytest.fixture(scope="module")
def blessed():
    return bless([six_pass_session(i, 0, 3) for i in range(1, 5)], 0.3, None, {}, {})


def night(i: int, refs: dict, uuid: str = "") -> dict:
    out = reported_against(six_pass_session(i, 0, 3), refs)
    out["session_info"].update(uuid=uuid or f"{i:08x}-0000-4000-8000-000000000000",
                               time_start_unix=T0 + 3600 * i,
                               time_end_unix=T0 + 3600 * i + 600)
    return out


def one_value_slower(session: dict, factor: float) -> dict:
    """The victim's PingPong 8 B latency `factor` times longer in every pass."""
    out = copy.deepcopy(session)
    for run in out["runs"]:
        for tc in run["testcases"]:
            if tc["build_name"] == VICTIM and tc["name"].endswith("%benchmark=MPI1:PingPong") \
                    and "intranode" in tc["name"]:
                tc["perfvalues"]["local:default:latency_8B"][0] *= factor
    return out


def with_result(session: dict, result: str) -> dict:
    out = copy.deepcopy(session)
    tc = out["runs"][-1]["testcases"][0]
    tc.update(result=result)
    if result == "fail":
        tc.update(fail_phase="sanity", fail_reason="sanity error: no result line")
    return out


def judged_everywhere(tmp_path, monkeypatch, capsys, tonight: dict, before: list[dict],
                      blessed, policy: dict | None = None, disturbed: bool = False) -> dict:
    """The night's verdict word as each rendering says it, and the run's exit code."""
    monkeypatch.setenv("MPIMATRIX_RESULTS", str(tmp_path / "results"))
    monkeypatch.delenv("MPIMATRIX_STORE", raising=False)
    monkeypatch.delenv("RFM_SQLITE_DB_FILE", raising=False)
    refs_file = references_dir() / "local.yaml"
    refs_file.parent.mkdir(parents=True)
    refs_file.write_text(yaml.safe_dump(plain(blessed.refs)))
    stats = {**blessed.stats, **({POLICY_KEY: policy} if policy else {})}
    stats_path(refs_file).write_text(yaml.safe_dump(plain(stats)))
    store(results_db(), [*before, tonight])
    uuid = tonight["session_info"]["uuid"]
    if disturbed:
        # as `mpimatrix run` records it: other programs took 40 % of 2 cores for 600 s
        load_record_path().write_text(json.dumps({uuid: {
            "seconds": 600.0, "foreign_cpu": 480.0, "cores": 2, "disturbed": True}}))
    report_file = reports_dir() / "night.json"  # where `mpimatrix run` has ReFrame write it
    report_file.parent.mkdir(parents=True)
    report_file.write_text(json.dumps(tonight))
    capsys.readouterr()
    rc = judge_report(report_file, "quick", 0, [])
    run_text = capsys.readouterr().out
    assert main(["report", "--session", uuid]) == 0
    report_text = capsys.readouterr().out
    out = tmp_path / "html"
    assert main(["report", "--html", "--session", uuid, "--output-dir", str(out),
                 "--name", "night"]) == 0
    capsys.readouterr()
    page = (out / "night.html").read_text()
    summary = (out / "night.md").read_text()
    headline = re.search(r'<div class="verdict (\w+)">([^<]*)</div>', page)
    md = re.search(r"^\*\*(\w+): .*\*\* \(exit (\d+)\)$", summary, re.M)
    return {"exit": rc, "run": verdict_line(run_text), "report": verdict_line(report_text),
            "html": headline[2].split(":")[0], "css": headline[1], "md": md[1],
            "md_exit": int(md[2]), "run_text": run_text}


def plain(tree) -> dict:
    """Plain dicts and lists (bless keeps ruamel's commented maps)."""
    return json.loads(json.dumps(tree))


def verdict_line(text: str) -> str:
    [line] = [ln for ln in text.splitlines() if ln.startswith("VERDICT: ")]
    word, code = re.match(r"VERDICT: (\w+): .* \(exit (\d+)\)$", line).groups()
    return f"{word} {code}"


OUTCOMES = {
    Verdict.GREEN: lambda s: s,
    Verdict.WATCH: lambda s: one_value_slower(s, 3.0),
    Verdict.REGRESSION: lambda s: slowed(s, VICTIM, 0.3),
    Verdict.FAILED: lambda s: with_result(s, "fail"),
    Verdict.XPASS: lambda s: with_result(s, "xpass"),
    Verdict.HOST: lambda s: slow_class(copy.deepcopy(s), 4.6),
    Verdict.DISTURBED: lambda s: slowed(s, VICTIM, 0.3),
}


@pytest.mark.parametrize("outcome", list(OUTCOMES), ids=str)
def test_each_outcome_is_said_the_same_everywhere(outcome, blessed, tmp_path, monkeypatch,
                                                 capsys):
    tonight = OUTCOMES[outcome](night(6, blessed.refs))
    before = [night(i, blessed.refs) for i in range(1, 6)]
    got = judged_everywhere(tmp_path, monkeypatch, capsys, tonight, before, blessed,
                            disturbed=outcome is Verdict.DISTURBED)
    said = f"{outcome} {outcome.exit_code}"
    assert (got["run"], got["report"]) == (said, said), got["run_text"][-3000:]
    assert (got["html"], got["md"]) == (str(outcome), str(outcome))
    assert got["exit"] == got["md_exit"] == outcome.exit_code
    assert got["css"] == outcome.css


def test_the_report_judges_under_the_policy_bless_recorded(blessed, tmp_path, monkeypatch,
                                                          capsys):
    """Small-message times 4.6x slower on every build: a HOST night under the default
    policy; references blessed with host tolerances of 10 (1000 %) see no slow machine,
    and the run and the report both say GREEN."""
    tonight = slow_class(night(6, blessed.refs), 4.6)
    before = [night(i, blessed.refs) for i in range(1, 6)]
    got = judged_everywhere(tmp_path, monkeypatch, capsys, tonight, before, blessed,
                            policy={"host_tolerance": 10.0, "host_class_tolerance": 10.0})
    assert got["run"] == got["report"] == "GREEN 0", got["run_text"][-3000:]
    assert got["html"] == got["md"] == "GREEN" and got["exit"] == 0


def test_a_night_the_machine_spoiled_is_no_night_before(blessed, tmp_path, monkeypatch,
                                                       capsys):
    """A night run again after a HOST night (the value alone outside on both): the HOST
    night was "run again", so the value is on WATCH the night it is run again, not a
    REGRESSION; outside again the night after, it is one."""
    spoiled = one_value_slower(slow_class(night(5, blessed.refs), 4.6), 3.0)
    again = one_value_slower(night(6, blessed.refs), 3.0)
    before = [night(i, blessed.refs) for i in range(1, 5)] + [spoiled]
    got = judged_everywhere(tmp_path, monkeypatch, capsys, again, before, blessed)
    assert got["run"] == got["report"] == "WATCH 0", got["run_text"][-3000:]
    # the night after: outside again, and now outside in the night before too
    nxt = one_value_slower(night(7, blessed.refs), 3.0)
    got = judged_everywhere(tmp_path / "next", monkeypatch, capsys, nxt, [*before, again],
                            blessed)
    assert got["run"] == got["report"] == "REGRESSION 1", got["run_text"][-3000:]
    assert got["html"] == got["md"] == "REGRESSION"
