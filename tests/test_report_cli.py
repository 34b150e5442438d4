"""`mpimatrix report --html` as a user runs it: from recorded reports, from the results
database of a real run, and on bad input (a clear message, exit 2, no traceback)."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from helpers import FIXTURES, ROOT

from mpimatrix.validation.derived_session import derive

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")


def mpimatrix(results: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPIMATRIX_RESULTS": str(results)}
    return subprocess.run([MPIMATRIX, *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


def report_file(tmp_path: Path, name: str, data: dict | None = None) -> Path:
    """A recorded report, unpacked where the command can read it."""
    if data is None:
        with gzip.open(FIXTURES / "reports" / f"{name}.json.gz", "rt") as fp:
            data = json.load(fp)
    out = tmp_path / f"{name}.json"
    out.write_text(json.dumps(data))
    return out


def refused(proc: subprocess.CompletedProcess, pattern: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert re.search(pattern, proc.stderr), proc.stderr


def test_html_report_from_recorded_sessions(tmp_path):
    reports = [report_file(tmp_path, f"quick-local-{i}") for i in range(1, 6)]
    args = [a for r in reports for a in ("--report", str(r))]
    proc = mpimatrix(tmp_path, "report", "--html", "--name", "nightly", *args,
                     "--references", str(FIXTURES / "reports" / "local-references.yaml"))
    assert proc.returncode == 0, proc.stderr
    html, md = tmp_path / "reports" / "nightly.html", tmp_path / "reports" / "nightly.md"
    assert f"report: {html} (" in proc.stdout and f"summary: {md}" in proc.stdout
    assert proc.stdout.startswith(md.read_text().rstrip("\n")[:200])
    page = html.read_text()
    assert "http://" not in page and "https://" not in page  # opens without a network
    assert page.count('class="plot"') == int(re.search(r"\((\d+) plots\)", proc.stdout)[1])
    assert "Regressions (" in md.read_text()


def test_two_systems_are_refused(tmp_path):
    local = report_file(tmp_path, "compare-local-5builds")
    with gzip.open(FIXTURES / "reports" / "compare-local-5builds.json.gz", "rt") as fp:
        other = report_file(tmp_path, "derived", derive(json.load(fp)))
    proc = mpimatrix(tmp_path, "report", "--html", "--report", str(local), "--report",
                     str(other))
    refused(proc, r"^mpimatrix: the sessions come from 2 systems \(derived: \w+; local: \w+\); "
                  r"a report covers one system")


def test_empty_database_is_refused(tmp_path):
    for args in (["--since", "14d"], ["--session", str(uuid.uuid4())]):
        proc = mpimatrix(tmp_path, "report", "--html", *args)
        refused(proc, r"results database .*results\.db.* holds no session: run "
                      r"`mpimatrix run` first")


def test_bad_arguments_are_refused(tmp_path):
    refused(mpimatrix(tmp_path, "report", "--html", "--since", "two weeks"),
            r"--since 'two weeks': give an age such as 14d")
    prices = tmp_path / "prices.yaml"
    prices.write_text("local:default: {price_per_node_hour: cheap}\n")
    local = report_file(tmp_path, "compare-local-5builds")
    refused(mpimatrix(tmp_path, "report", "--html", "--report", str(local), "--prices",
                      str(prices)), r"prices\.yaml: local:default: expected "
                                    r"\{price_per_node_hour: <number >= 0>")
    refused(mpimatrix(tmp_path, "report", "--html", "--report", str(local), "--name", "../x"),
            r"--name '\.\./x': letters, digits")
    refused(mpimatrix(tmp_path, "report", "--html"), r"no .*latest\.json yet: run "
                                                     r"`mpimatrix run` first")


@pytest.mark.mpi
@pytest.mark.reframe
def test_real_run_then_report_by_session_id(buildset, tmp_path):
    """The README's path: a real run stores a session; the report names it by id."""
    build = next(b for b in buildset.builds if "imb" in b.benchmarks)
    run = mpimatrix(tmp_path, "run", "--mode", "quick", "--only", re.escape(build.name))
    report = tmp_path / "reports" / "latest.json"
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    sid = json.loads(report.read_text())["session_info"]["uuid"]
    proc = mpimatrix(tmp_path, "report", "--html", "--session", sid, "--name", "quick")
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "reports" / "quick.html").read_text()
    assert sid in page and build.name in page
    unknown = str(uuid.uuid4())
    refused(mpimatrix(tmp_path, "report", "--html", "--session", unknown),
            rf"^mpimatrix: no stored session '{unknown}' in the results database \S+results\.db; "
            r"list them with: reframe")


def test_prices_come_from_the_site_partitions(tmp_path, monkeypatch):
    from mpimatrix.builds.record import BuildError
    from mpimatrix.site.systems import partition_prices

    example = ROOT / "site_config" / "systems" / "slurm-cluster.yaml.example"
    (tmp_path / "mycluster.yaml").write_text(example.read_text())
    monkeypatch.setenv("MPIMATRIX_SYSTEMS", str(tmp_path))
    assert partition_prices() == {
        "mycluster:compute": {"price_per_node_hour": 0.975, "currency": "USD",
                              "fabric": "infiniband"},
        "mycluster:compute_mpirun": {"price_per_node_hour": 0.975, "currency": "USD",
                                     "fabric": "infiniband"}}
    (tmp_path / "mycluster.yaml").write_text(example.read_text().replace(
        "price_per_node_hour: 0.975      # EDIT", "price_per_node_hour: free"))
    with pytest.raises(BuildError, match=r"partition compute: price_per_node_hour 'free' "
                                         r"must be a number >= 0"):
        partition_prices()
