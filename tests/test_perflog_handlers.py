"""The site's own ReFrame perflog handlers (site settings: monitoring.perflog): every
performance value of a session reaches an httpjson endpoint as one record, and after the
gate each judged value's verdict and the night's; an endpoint that is down, answers 500 or
never answers changes neither the night's exit code nor how it ends."""

from __future__ import annotations

import http.server
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import recorded_report

from mpimatrix.results.measurements import load
from mpimatrix.results.night import judge_night
from mpimatrix.results.reference_set import NO_REFERENCES
from mpimatrix.results.status import Status
from mpimatrix.run.perflog_verdicts import post_verdicts, value_record, verdict_records
from mpimatrix.site.perflog import (
    ValueRecords,
    report_name,
    value_records,
    with_extras,
)
from mpimatrix.urls import shown_url

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
TOKEN = "ApiKey s3cret"
EXTRAS = {"facility": "mpimatrix", "data-version": "1"}
#: What each value record carries (spec and Spack hash only where the build has them).
VALUE_FIELDS = {"record", "time", "system", "partition", "build", "environ", "family",
                "fabric", "compiler", "check", "benchmark", "placement", "var", "quantity",
                "size", "value", "unit", "reference", "lower_thres", "upper_thres",
                "perf_result", "result", "report", *EXTRAS}


class Endpoint:
    """A local HTTP receiver on a free port: answers `status` (None: accepts, reads and
    never answers), keeping each JSON record with its Authorization header."""

    def __init__(self, status: int | None = 200):
        self.records: list[tuple[dict, str | None]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if status is None:
                    threading.Event().wait(120)  # never answers (within any test)
                    return
                outer.records.append((json.loads(body), self.headers.get("Authorization")))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/perf/_doc"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def of(self, kind: str) -> list[dict]:
        return [r for r, _ in self.records if r.get("record") == kind]


def closed_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/perf/_doc"


def site_file(tmp_path: Path, url: str, **handler) -> Path:
    path = tmp_path / "site.yaml"
    path.write_text(json.dumps({"monitoring": {"perflog": [
        {"type": "httpjson", "url": url, "extras": EXTRAS,
         "extra_headers": {"Authorization": "ApiKey $PERFLOG_TEST_KEY"}, **handler}]}}))
    return path


@pytest.fixture
def endpoint():
    ep = Endpoint()
    yield ep
    ep.close()


@pytest.fixture
def session():
    return load(recorded_report("compare-local-5builds"))


def log_record(tc: dict) -> logging.LogRecord:
    """A test case as ReFrame's perflog logger hands it to a handler (check_* attributes:
    the same fields its report keeps)."""
    r = logging.LogRecord("reframe", logging.INFO, __file__, 0, "sent", None, None)
    for k, v in tc.items():
        setattr(r, f"check_{k}", v)
    return r


# -- without ReFrame: the records ---------------------------------------------------------

def test_one_record_per_value_with_what_a_dashboard_groups_by(session):
    case = next(c for c in session.cases if c.values)
    records = value_records(log_record(case.tc), None, "quick-20261206T0000-abcdef")
    assert [r["var"] for r in records] == [pv.var for pv in case.values]
    sizes = {r["var"]: r.get("size") for r in records}
    assert sizes == {pv.var: pv.size for pv in case.values}
    assert sizes.get("latency_8B", 8) == 8
    for r, pv in zip(records, case.values, strict=True):
        assert (r["value"], r["unit"], r["reference"]) == (pv.value, pv.unit, pv.ref)
        assert (r["build"], r["placement"], r["benchmark"]) == (
            case.build, case.placement, case.benchmark)
        assert r["family"] == case.build_fields["family"] and r["report"].startswith("quick-")


def test_a_failed_case_without_values_is_one_record():
    tc = {"name": "MpiPlacementCheck %placement=intranode", "system": "local",
          "partition": "default", "environ": "x", "result": "fail", "fail_phase": "sanity",
          "fail_reason": "sanity error: 1 rank", "perfvalues": {}}
    [r] = value_records(log_record(tc), None)
    assert (r["result"], r["fail_phase"], r["check"]) == ("fail", "sanity", "MpiPlacement")
    assert value_records(log_record({**tc, "result": "pass"}), None) == []


def test_extras_added_and_ignored_keys_left_out():
    [r] = with_extras([{"a": 1, "b": 2}], {"facility": "m", "_hidden": 1}, ["b"])
    assert r == {"a": 1, "facility": "m"}


def test_report_name_from_the_reframe_command_line():
    assert report_name(["reframe", "--report-file", "/r/quick-1-ab.json"]) == "quick-1-ab"
    assert report_name(["reframe", "--report-file=/r/n.json"]) == "n"
    assert report_name(["reframe"]) == ""


def test_a_password_in_the_url_is_never_shown():
    assert shown_url("https://user:pw@es.example.org:9200/p/_doc") == (
        "https://user@es.example.org:9200/p/_doc")
    assert shown_url("http://127.0.0.1:9/p") == "http://127.0.0.1:9/p"


def test_formatter_posts_each_value_with_headers_and_returns_none(session, endpoint):
    fmt = ValueRecords({"url": endpoint.url, "extra_headers": {"Authorization": TOKEN}}, {})
    cases = [c for c in session.cases if c.values][:3]
    for c in cases:
        assert fmt(log_record(c.tc), EXTRAS, set()) is None
    assert len(endpoint.records) == sum(len(c.values) for c in cases)
    assert {auth for _, auth in endpoint.records} == {TOKEN}
    assert all(r["facility"] == "mpimatrix" for r, _ in endpoint.records)


@pytest.mark.parametrize("status", [500, None])
def test_formatter_stops_after_the_first_failure(session, status):
    ep = Endpoint(status)
    try:
        fmt = ValueRecords({"url": ep.url}, {})
        for c in [c for c in session.cases if c.values][:5]:
            assert fmt(log_record(c.tc), None, set()) is None
        assert len(ep.records) == (1 if status else 0)
        assert fmt.poster.stopped == ("HTTP 500 Internal Server Error" if status
                                      else "no answer within 2 s")
    finally:
        ep.close()


def test_debug_handler_returns_the_records_for_reframe_to_write(session, endpoint):
    case = next(c for c in session.cases if c.values)
    out = ValueRecords({"url": endpoint.url, "debug": True}, {})(log_record(case.tc), {}, ())
    assert len(json.loads(out)) == len(case.values) and endpoint.records == []


def test_verdict_records_night_first_then_every_judged_value(session):
    night = judge_night(session, [], NO_REFERENCES)
    first, *values = verdict_records(session, night)
    assert first["record"] == "night" and first["session"] == session.uuid
    assert (first["verdict"], first["exit_code"]) == (str(night.verdict.verdict),
                                                      night.verdict.exit_code)
    assert first["cases"] == night.verdict.counts.cases
    assert len(values) == len(night.judgement.verdicts)
    assert all(v["record"] == "value verdict" and v["session"] == session.uuid
               for v in values)
    assert {v["verdict"] for v in values} == {"no reference"}


def test_a_regression_record_says_its_line_and_what_changed(session):
    night = judge_night(session, [], NO_REFERENCES)
    v = replace(night.judgement.verdicts[0], status=Status.REGRESSION, reference=1.0,
                upper=0.1)
    r = value_record(v, None, ["changed since session 1234abcd: openmpi 5.0.8 -> 5.0.9"])
    assert r["verdict"] == "regression" and r["line"].startswith("REGRESSION ")
    assert r["changed"][0].startswith("changed since") and r["tolerance"] == 0.1


def test_verdicts_posted_and_each_failure_said(session, tmp_path, monkeypatch, endpoint):
    monkeypatch.setenv("PERFLOG_TEST_KEY", "s3cret")
    night = judge_night(session, [], NO_REFERENCES)
    n = len(night.judgement.verdicts) + 1
    monkeypatch.setenv("MPIMATRIX_SITE_FILE", str(site_file(tmp_path, endpoint.url)))
    assert post_verdicts(session, night) == [f"posted {n} verdict record(s) to {endpoint.url}"]
    assert len(endpoint.records) == n and {a for _, a in endpoint.records} == {TOKEN}
    for url, why in ((closed_url(), "cannot connect"), (None, "no answer within 2 s")):
        ep = Endpoint(None) if url is None else None
        url = url or ep.url
        monkeypatch.setenv("MPIMATRIX_SITE_FILE", str(site_file(tmp_path, url)))
        assert post_verdicts(session, night) == [
            f"{url}: {why}" + (" ([Errno 111] Connection refused)" if ep is None else "")
            + f", {n} record(s) not sent; the night's verdict stands"]
        if ep:
            ep.close()


# -- the site settings ---------------------------------------------------------------------

def site(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    path = tmp_path / "site.yaml"
    path.write_text(text)
    env = {**os.environ, "MPIMATRIX_SITE_FILE": str(path), "PERFLOG_TEST_KEY": "k"}
    return subprocess.run([MPIMATRIX, "site"], capture_output=True, text=True, env=env,
                          timeout=300)


def test_an_httpjson_handler_without_url_is_refused(tmp_path):
    proc = site(tmp_path, "monitoring:\n  perflog:\n    - type: httpjson\n")
    assert proc.returncode == 2
    assert str(tmp_path / "site.yaml") in proc.stderr and "monitoring.perflog[0]" in proc.stderr
    assert "url" in proc.stderr


def test_site_shows_the_perflog_handlers_in_force(tmp_path):
    proc = site(tmp_path, site_file(tmp_path, "https://es.example.org/p/_doc").read_text())
    assert "perflog handlers: mpimatrix's file log" in proc.stdout
    assert ("httpjson https://es.example.org/p/_doc, one record per value (mpimatrix's), "
            "extras facility, data-version, headers Authorization") in proc.stdout
    assert "s3cret" not in proc.stdout and "ApiKey" not in proc.stdout


def test_config_keeps_the_file_log_and_adds_the_sites(tmp_path, monkeypatch, buildset):
    from mpimatrix.site.config import PERFLOG_FORMAT, build_config

    monkeypatch.setenv("MPIMATRIX_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("PERFLOG_TEST_KEY", "s3cret")
    monkeypatch.setenv("MPIMATRIX_SITE_FILE", str(site_file(tmp_path, "http://h:9/p")))
    own, theirs = build_config(buildset, [])["logging"][0]["handlers_perflog"]
    assert own["type"] == "filelog" and own["format"] == PERFLOG_FORMAT
    assert set(own) == {"type", "prefix", "level", "format", "format_perfvars", "append"}
    assert theirs["extra_headers"] == {"Authorization": TOKEN}
    assert isinstance(theirs["json_formatter"], ValueRecords)


# -- for real: `mpimatrix run` ---------------------------------------------------------------

@pytest.fixture(scope="module")
def one_build(buildset):
    build = next((b for b in buildset.builds if "imb" in b.benchmarks), None)
    if build is None:
        pytest.skip("needs a build with IMB")
    return build


def run(tmp_path: Path, build, url: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPIMATRIX_RESULTS": str(tmp_path / "results"),
           "MPIMATRIX_SITE_FILE": str(site_file(tmp_path, url)), "PERFLOG_TEST_KEY": "s3cret"}
    env.pop("MPIMATRIX_INJECT", None)
    return subprocess.run(
        [MPIMATRIX, "run", "--mode", "quick", "--no-confirm", "--only",
         f"^{re.escape(build.name)}$", "--", "-n", r"ImbCheck.*intranode.*MPI1:PingPong$"],
        capture_output=True, text=True, env=env, timeout=1800)


@pytest.mark.mpi
@pytest.mark.reframe
def test_every_value_and_verdict_reaches_the_endpoint(tmp_path, one_build, endpoint):
    proc = run(tmp_path, one_build, endpoint.url)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    report = load(json.loads((tmp_path / "results/reports/latest.json").read_text()))
    values = {(c.name, pv.var, pv.value) for c in report.cases for pv in c.values}
    assert values
    got = endpoint.of("value")
    assert {(r["test"], r["var"], r["value"]) for r in got} == values
    for r in got:
        assert VALUE_FIELDS <= set(r), VALUE_FIELDS - set(r)
        assert (r["build"], r["environ"], r["family"]) == (
            one_build.name, one_build.environ_name, one_build.family)
        assert r["report"] == report_name(report.info["cmdline"].split())
    assert {a for _, a in endpoint.records} == {TOKEN}
    [night] = endpoint.of("night")
    assert (night["session"], night["exit_code"]) == (report.uuid, proc.returncode)
    assert len(endpoint.of("value verdict")) == len(values)
    assert f"posted {len(values) + 1} verdict record(s) to {endpoint.url}" in out
    perflog = tmp_path / "results/perflogs/local/default/ImbCheck.log"
    assert "|latency_8B=" in perflog.read_text()  # mpimatrix's own file log, as before


@pytest.mark.mpi
@pytest.mark.reframe
@pytest.mark.parametrize("away", ["down", "500", "hang"])
def test_an_endpoint_away_changes_nothing(tmp_path, one_build, away):
    ep = None if away == "down" else Endpoint(500 if away == "500" else None)
    url = closed_url() if ep is None else ep.url
    try:
        proc = run(tmp_path, one_build, url)
    finally:
        if ep:
            ep.close()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "VERDICT: " in out
    assert re.search(rf"mpimatrix: perflog: {re.escape(url)}: .*, \d+ record\(s\) not sent; "
                     "the night's verdict stands", out), out[-3000:]
    said = {"down": "httpjson: could not connect to server",
            "500": "HTTP 500 Internal Server Error; no more performance records go there",
            "hang": "no answer within 2 s; no more performance records go there"}[away]
    assert said in out, out[-3000:]
