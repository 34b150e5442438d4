"""A site's monitoring, set up as a new user would in one place (the `monitoring:` section
of its site settings file), tried with real nights and the real servers: an httpjson
endpoint gets every value and the verdicts, Prometheus (scraping node-exporter's textfile
collector) answers the night's verdict and values, the night is in the shared PostgreSQL
store under its system, and a second system's night (another checkout) is compared with it
in one report."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from postgres_server import PASSWORD, new_database, postgres_server
from prometheus_stack import Stack
from test_perflog_handlers import Endpoint

from mpimatrix.results.measurements import load

pytestmark = [pytest.mark.mpi, pytest.mark.reframe]

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
RULES = Path(__file__).resolve().parents[1] / "site_config" / "monitoring" / "mpimatrix-rules.yml"
SELECT = ["--", "-n", r"ImbCheck.*intranode.*MPI1:PingPong$"]


def night(checkout: Path, site: Path, build: str) -> subprocess.CompletedProcess:
    """One night of the build's IMB PingPong in this checkout's store, the site's file
    in force (as a scheduled nightly has it)."""
    env = {**os.environ, "MPIMATRIX_RESULTS": str(checkout), "MPIMATRIX_SITE_FILE": str(site),
           "PGPASSWORD": PASSWORD}
    env.pop("MPIMATRIX_INJECT", None)
    return subprocess.run([MPIMATRIX, "run", "--mode", "quick", "--no-confirm", "--only",
                           f"^{re.escape(build)}$", *SELECT],
                          capture_output=True, text=True, env=env, timeout=1800)


def site_file(path: Path, system: str, endpoint: str, textfile: Path, database: str) -> Path:
    path.write_text(json.dumps({"monitoring": {
        "perflog": [{"type": "httpjson", "url": endpoint, "extras": {"site": "test"}}],
        "metrics_textfile": str(textfile), "store_url": database, "system_name": system}}))
    return path


def test_a_night_reaches_the_dashboards_prometheus_and_the_shared_store(
        tmp_path, buildset):
    build = next((b.name for b in buildset.builds if "imb" in b.benchmarks), None)
    if build is None:
        pytest.skip("needs a build with IMB")
    endpoint = Endpoint()
    with postgres_server() as server, Stack(tmp_path / "prom", RULES) as prom:
        database = new_database(server, "site_monitoring")
        sites = {s: site_file(tmp_path / f"{s}.yaml", s, endpoint.url, prom.textfile,
                              database) for s in ("clusterA", "clusterB")}
        first = night(tmp_path / "a", sites["clusterA"], build)
        out = first.stdout + first.stderr
        assert first.returncode == 0, out[-3000:]
        report = load(json.loads((tmp_path / "a/reports/latest.json").read_text()))
        values = {(c.name, pv.var): pv.value for c in report.cases for pv in c.values}
        # the dashboards: every value, then the night's verdict
        assert {(r["test"], r["var"]): r["value"] for r in endpoint.of("value")} == values
        [record] = endpoint.of("night")
        assert (record["session"], record["verdict"], record["site"]) == (
            report.uuid, "GREEN", "test")
        # Prometheus: the night's verdict and its values, through its HTTP API
        [green] = prom.wait_for('mpimatrix_night_verdict{verdict="GREEN"} == 1')
        assert green["metric"]["system"] == "local", green
        got = prom.wait_for(f'mpimatrix_value{{build="{build}"}}')
        assert sorted(float(v["value"][1]) for v in got) == pytest.approx(
            sorted(values.values()), rel=1e-6)
        # the shared store: the night under its system
        assert re.search(r"mpimatrix: store: uploaded 1 session\(s\) to postgresql://"
                         r"mpimatrix@127\.0\.0\.1:\d+/\S+ \(system clusterA\)", out), out[-3000:]
        # another system's night, from another checkout, then both side by side
        second = night(tmp_path / "b", sites["clusterB"], build)
        assert second.returncode == 0, (second.stdout + second.stderr)[-3000:]
        env = {**os.environ, "MPIMATRIX_RESULTS": str(tmp_path / "b"), "PGPASSWORD": PASSWORD,
               "MPIMATRIX_SITE_FILE": str(sites["clusterB"])}
        status = subprocess.run([MPIMATRIX, "store", "status"], capture_output=True,
                                text=True, env=env, timeout=300)
        assert "clusterA: 1 session(s)" in status.stdout, status.stdout + status.stderr
        assert "clusterB: 1 session(s)" in status.stdout, status.stdout
        side = subprocess.run([MPIMATRIX, "report", "--systems", "clusterA,clusterB",
                               "--since", "1d"], capture_output=True, text=True, env=env,
                              timeout=300)
        assert side.returncode == 0, side.stdout + side.stderr
        rows = [ln for ln in side.stdout.splitlines() if ln.startswith(build)]
        assert len(rows) == len(values), side.stdout
    endpoint.close()
