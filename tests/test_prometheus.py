"""Each night's values and verdicts in Prometheus (results/prometheus_text.py, `mpimatrix
metrics`, run/metrics_textfile.py) and the alert rules (site_config/monitoring).

The nights are those of tests/test_night_verdict.py: recorded quick sessions of a quiet
machine, blessed from nights 1-4 and stored; night 6 as recorded (GREEN) and changed to
each other outcome. The end-to-end test starts the real node-exporter, Prometheus and
Alertmanager (tests/prometheus_stack.py) on free ports of 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import test_night_verdict
import yaml
from helpers import ROOT, require_programs
from prometheus_stack import PACKAGES, Stack
from stored_db import store
from test_night_verdict import OUTCOMES, VICTIM, night, plain

from mpimatrix.cli import main
from mpimatrix.paths import references_dir, results_db
from mpimatrix.reference_file import stats_path
from mpimatrix.results.measurements import load
from mpimatrix.results.night_verdict import Verdict
from mpimatrix.results.prometheus_text import VALUE_STATUS, Family, escape_label, exposition
from mpimatrix.results.statistics import best
from mpimatrix.results.status import Status
from mpimatrix.run.metrics_textfile import ENV, write_night
from mpimatrix.run.nights import load_record_path

#: the references blessed from nights 1-4 (a fixture of test_night_verdict.py)
blessed = test_night_verdict.blessed
MONITORING = ROOT / "site_config" / "monitoring"
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parsed(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """{metric: [(labels, value)]} of a text exposition; asserts each family's HELP and
    TYPE come first and no series is written twice."""
    out: dict[str, list] = {}
    typed = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if line.startswith("#"):
            continue
        name, labels, value = SAMPLE.match(line).groups()
        assert name in typed, line
        unescaped = {k: re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], v)
                     for k, v in LABEL.findall(labels)}
        out.setdefault(name, []).append((unescaped, float(value)))
    for name, samples in out.items():
        keys = [tuple(sorted(labels.items())) for labels, _ in samples]
        assert len(keys) == len(set(keys)), name
    return out


def stored_nights(results: Path, monkeypatch, tonight: dict, before: list[dict], blessed,
                  disturbed: bool = False) -> str:
    """A results store with the blessed references and the nights, as `mpimatrix run`
    leaves it; tonight's UUID."""
    monkeypatch.setenv("MPIMATRIX_RESULTS", str(results))
    monkeypatch.delenv("MPIMATRIX_STORE", raising=False)
    monkeypatch.delenv("RFM_SQLITE_DB_FILE", raising=False)
    refs_file = references_dir() / "local.yaml"
    refs_file.parent.mkdir(parents=True)
    refs_file.write_text(yaml.safe_dump(plain(blessed.refs)))
    stats_path(refs_file).write_text(yaml.safe_dump(plain(blessed.stats)))
    store(results_db(), [*before, tonight])
    uuid = tonight["session_info"]["uuid"]
    if disturbed:  # as `mpimatrix run` records it (test_night_verdict.py)
        load_record_path().write_text(json.dumps({uuid: {
            "seconds": 600.0, "foreign_cpu": 480.0, "cores": 2, "disturbed": True}}))
    return uuid


def outcome_night(outcome: Verdict, blessed) -> tuple[dict, list[dict]]:
    """Night 6 changed to `outcome`, and nights 1-5 before it."""
    return (OUTCOMES[outcome](night(6, blessed.refs)),
            [night(i, blessed.refs) for i in range(1, 6)])


def metrics_of(outcome: Verdict, blessed, tmp_path, monkeypatch, capsys) -> dict:
    tonight, before = outcome_night(outcome, blessed)
    stored_nights(tmp_path / outcome.value, monkeypatch, tonight, before, blessed,
                  disturbed=outcome is Verdict.DISTURBED)
    capsys.readouterr()
    assert main(["metrics"]) == 0
    return parsed(capsys.readouterr().out)


def measured_best(session: dict) -> dict[tuple, float]:
    """Each value's best sample in the stored session, read from its test cases:
    {(build, check, placement, var): best}."""
    samples: dict[tuple, list] = {}
    hib = {}
    for case in load(session).cases:
        for pv in case.values:
            if pv.value is not None:
                key = (case.build, case.check, case.placement, pv.var)
                samples.setdefault(key, []).append(pv.value)
                hib[key] = pv.higher_is_better
    return {k: best(xs, hib[k]) for k, xs in samples.items()}


def value_key(labels: dict) -> tuple:
    return labels["build"], labels["benchmark"], labels["placement"], labels["var"]


def test_a_night_is_every_value_with_its_build_and_reference(blessed, tmp_path, monkeypatch,
                                                            capsys):
    got = metrics_of(Verdict.GREEN, blessed, tmp_path, monkeypatch, capsys)
    tonight, _ = outcome_night(Verdict.GREEN, blessed)
    want = measured_best(tonight)
    values = {value_key(labels): v for labels, v in got["mpimatrix_value"]}
    assert values == pytest.approx(want) and len(values) == 84
    labels = next(lb for lb, _ in got["mpimatrix_value"] if lb["build"] == "impi-2021.18.1-pypi")
    assert (labels["system"], labels["partition"], labels["family"], labels["fabric"]) == (
        "local", "default", "impi", "ofi")
    assert {"benchmark", "placement", "var", "unit"} <= labels.keys()
    # every value blessed: a reference and a status each; a judged value where gated
    for name in ("mpimatrix_value_reference", "mpimatrix_value_status"):
        assert {value_key(lb) for lb, _ in got[name]} == set(want), name
    gated = {value_key(lb) for lb, v in got["mpimatrix_value_status"] if v >= 0}
    assert {value_key(lb) for lb, _ in got["mpimatrix_value_judged"]} == gated
    assert {v for _, v in got["mpimatrix_value_status"]} <= {VALUE_STATUS[Status.PASS],
                                                            VALUE_STATUS[Status.NOISE],
                                                            VALUE_STATUS[Status.NOT_GATED]}
    [(_, start)] = [s for s in got["mpimatrix_night_timestamp_seconds"]
                    if s[0]["edge"] == "start"]
    assert start == tonight["session_info"]["time_start_unix"]
    [(info, _)] = got["mpimatrix_night_info"]
    assert info["session"] == tonight["session_info"]["uuid"]
    assert got["mpimatrix_night_test_cases"][0][1] == 42
    # cardinality: at most 4 series per value, 2 per build and per partition, 17 a night
    series = sum(len(samples) for samples in got.values())
    assert series <= 4 * len(want) + 2 * 3 + 2 + 17


def test_metrics_serves_the_latest_night(blessed, tmp_path, monkeypatch, capsys):
    """`mpimatrix metrics --serve` as a user starts it: /metrics is what stdout says."""
    tonight, before = outcome_night(Verdict.GREEN, blessed)
    stored_nights(tmp_path / "results", monkeypatch, tonight, before, blessed)
    assert main(["metrics"]) == 0
    want = capsys.readouterr().out
    mpimatrix = str(Path(sys.executable).parent / "mpimatrix")
    proc = subprocess.Popen([mpimatrix, "metrics", "--serve", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        address = re.fullmatch(r"serving (http://\S+)\n", proc.stdout.readline())[1]
        with urllib.request.urlopen(address, timeout=60) as resp:
            assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert resp.read().decode() == want
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.parametrize("outcome", list(OUTCOMES), ids=str)
def test_each_outcome_is_one_night_verdict(outcome, blessed, tmp_path, monkeypatch, capsys):
    got = metrics_of(outcome, blessed, tmp_path, monkeypatch, capsys)
    verdicts = {lb["verdict"]: v for lb, v in got["mpimatrix_night_verdict"]}
    assert verdicts == {str(w): float(w is outcome) for w in Verdict}
    assert got["mpimatrix_night_exit_code"][0][1] == outcome.exit_code
    regressions = got["mpimatrix_night_regressions"][0][1]
    assert (regressions > 0) == (outcome in (Verdict.REGRESSION, Verdict.DISTURBED))
    if outcome is Verdict.REGRESSION:  # the victim regressed, named with its values
        statuses = got["mpimatrix_build_status"]
        assert [lb["build"] for lb, v in statuses if v == 3] == [VICTIM]
        named = {lb["build"] for lb, v in got["mpimatrix_value_status"] if v == 3}
        assert named == {VICTIM}
        [(changed, _)] = got["mpimatrix_build_changed_info"]
        assert changed["build"] == VICTIM and changed["changes"]
    if outcome is Verdict.HOST:
        assert [v for _, v in got["mpimatrix_host_slow"]] == [1]


def test_label_values_and_help_are_escaped():
    fam = Family("m", "a \\ help\nline")
    fam.add({"build": 'a"b\\c\nd'}, float("inf"))
    fam.add({"build": 'a"b\\c\nd'}, 2.0)  # the same series again: written once
    text = exposition([fam])
    assert text == ('# HELP m a \\\\ help\\nline\n# TYPE m gauge\n'
                    'm{build="a\\"b\\\\c\\nd"} +Inf\n')
    assert escape_label("plain") == "plain"
    assert parsed(text)["m"] == [({"build": 'a"b\\c\nd'}, float("inf"))]


def test_the_run_writes_the_textfile_atomically_or_says_why_not(blessed, tmp_path,
                                                               monkeypatch):
    from mpimatrix.results.reference_set import ReferenceSet
    from mpimatrix.run.nights import confirmations_of, judge_stored

    tonight, before = outcome_night(Verdict.GREEN, blessed)
    stored_nights(tmp_path / "results", monkeypatch, tonight, before, blessed)
    session = load(tonight)
    judged = judge_stored(session, confirmations_of([session]),
                          ReferenceSet.load(references_dir() / "local.yaml"))
    monkeypatch.delenv(ENV, raising=False)
    assert write_night(session, judged) == []
    folder = tmp_path / "textfile"
    monkeypatch.setenv(ENV, str(folder / "mpimatrix.prom"))
    [line] = write_night(session, judged)
    count = int(re.fullmatch(rf"wrote (\d+) series to {folder}/mpimatrix.prom", line)[1])
    text = (folder / "mpimatrix.prom").read_text()
    assert count == sum(len(s) for s in parsed(text).values())
    assert [p.name for p in folder.iterdir()] == ["mpimatrix.prom"]  # no temporary left
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv(ENV, str(tmp_path / "a-file" / "mpimatrix.prom"))
    [line] = write_night(session, judged)
    assert line.startswith(f"could not write {tmp_path}/a-file/mpimatrix.prom")
    monkeypatch.setenv(ENV, str(folder / "mpimatrix.txt"))
    [line] = write_night(session, judged)
    assert "reads only *.prom" in line


def test_metrics_says_what_is_wrong_with_exit_2(blessed, tmp_path, monkeypatch, capsys):
    tonight, before = outcome_night(Verdict.GREEN, blessed)
    stored_nights(tmp_path / "results", monkeypatch, tonight, before, blessed)
    (tmp_path / "a-file").write_text("")
    assert main(["metrics", "--textfile", str(tmp_path / "a-file" / "x.prom")]) == 2
    assert f"--textfile {tmp_path}/a-file/x.prom: cannot write" in capsys.readouterr().err
    assert main(["metrics", "--session", "not-a-session"]) == 2
    assert "--session" in capsys.readouterr().err
    confirmation = night(7, blessed.refs, "77777777-0000-4000-8000-000000000000")
    confirmation["session_info"]["confirms"] = tonight["session_info"]["uuid"]
    store(results_db(), [confirmation])
    assert main(["metrics", "--session", "77777777"]) == 2
    assert "is a confirmation of session" in capsys.readouterr().err
    assert main(["metrics", "--serve", "nowhere"]) == 2
    assert "HOST:PORT" in capsys.readouterr().err


@pytest.mark.prometheus
def test_the_rules_pass_promtool():
    promtool = require_programs("promtool", package=PACKAGES)["promtool"]
    for args in (["check", "rules", "mpimatrix-rules.yml"],
                 ["test", "rules", "mpimatrix-rules.test.yml"]):
        proc = subprocess.run([promtool, *args], cwd=MONITORING, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with Stack(tmp_path_factory.mktemp("prom"), MONITORING / "mpimatrix-rules.yml") as s:
        yield s


@pytest.mark.prometheus
def test_values_reach_prometheus_as_stored(stack, blessed, tmp_path, monkeypatch, capsys):
    tonight, before = outcome_night(Verdict.GREEN, blessed)
    stored_nights(tmp_path / "results", monkeypatch, tonight, before, blessed)
    assert main(["metrics", "--textfile", str(stack.textfile)]) == 0
    want = measured_best(tonight)
    uuid = tonight["session_info"]["uuid"]
    stack.wait_for(f'mpimatrix_night_info{{session="{uuid}"}}')
    got = {value_key(r["metric"]): float(r["value"][1])
           for r in stack.query("mpimatrix_value")}
    assert got == pytest.approx(want, rel=1e-12)
    assert stack.query("node_textfile_scrape_error")[0]["value"][1] == "0"
    [green] = stack.query('mpimatrix_night_verdict{verdict="GREEN"}')
    assert green["value"][1] == "1"
    # the recording rule: one ratio per value the gate judged against a reference
    ratios = stack.wait_for("mpimatrix:value_judged_over_reference:ratio")
    assert len(ratios) == len(stack.query("mpimatrix_value_judged")) > 0


@pytest.mark.prometheus
def test_a_regression_night_alerts_critical_and_a_host_night_warns(stack, blessed, tmp_path,
                                                                   monkeypatch):
    tonight, before = outcome_night(Verdict.REGRESSION, blessed)
    stored_nights(tmp_path / "regression", monkeypatch, tonight, before, blessed)
    written = time.monotonic()
    assert main(["metrics", "--textfile", str(stack.textfile)]) == 0
    alerts = stack.wait_for_alert("MpimatrixRegression")
    took = time.monotonic() - written
    assert {a["labels"]["build"] for a in alerts} == {VICTIM}
    first = alerts[0]
    assert first["labels"]["severity"] == "critical"
    assert first["labels"]["benchmark"].startswith("Imb ")
    assert {"placement", "var"} <= first["labels"].keys()
    assert first["annotations"]["changed_since"] != "not recorded"
    assert "x its reference" in first["annotations"]["summary"]
    stack.wait_for_alert("MpimatrixBuildRegression")

    tonight, before = outcome_night(Verdict.HOST, blessed)
    stored_nights(tmp_path / "host", monkeypatch, tonight, before, blessed)
    assert main(["metrics", "--textfile", str(stack.textfile)]) == 0
    [host] = stack.wait_for_alert("MpimatrixHostSlow")
    assert host["labels"]["severity"] == "warning"
    assert "partitions: default" in host["annotations"]["summary"]
    print(f"from the text file written to the alert in Alertmanager: {took:.1f} s")
