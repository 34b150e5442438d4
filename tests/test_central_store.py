"""The shared store on a real PostgreSQL this module starts (its own cluster directory,
socket folder and free port: modules run side by side): the same recorded sessions give
the same `changes`, `bless` and `report` from the shared store as from the local SQLite
files; two systems write at once; systems side by side; a wrong password, and a database
that is down during a night, which then goes up with `mpimatrix store sync`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from postgres_server import PASSWORD, free_port, new_database, postgres_server
from stored_db import store
from test_session_index import MPIMATRIX, _env, _mpimatrix, _stored_nights

from mpimatrix.results.measurements import load
from mpimatrix.run import central_store, store_db
from mpimatrix.urls import shown_url


@pytest.fixture(scope="module")
def server():
    """A PostgreSQL cluster with password authentication over TCP: (host, port)."""
    with postgres_server() as address:
        yield address


@pytest.fixture
def database(server, request, monkeypatch):
    """A new database of the cluster for the test: its URL (the password in PGPASSWORD)."""
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    return new_database(server, request.node.name)


def test_the_index_statements_in_postgresql_words():
    assert store_db.pg_sql("SELECT id FROM value_sessions WHERE uuid = ?") == \
        "SELECT id FROM value_sessions WHERE uuid = %s"
    assert store_db.pg_sql("INSERT OR REPLACE INTO value_summaries VALUES(?, ?)") == (
        "INSERT INTO value_summaries VALUES(%s, %s) ON CONFLICT(session) DO UPDATE SET "
        "summary = EXCLUDED.summary")
    assert store_db.pg_sql("INSERT OR IGNORE INTO value_names(key) VALUES(?)") == \
        "INSERT INTO value_names(key) VALUES(%s) ON CONFLICT DO NOTHING"
    assert shown_url("postgresql://u:pw@db:5433/m") == "postgresql://u@db:5433/m"
    assert shown_url("postgresql://u:pw@[::1]:5433/m") == "postgresql://u@[::1]:5433/m"


def test_without_the_driver_the_package_runs_and_a_url_says_to_install_it():
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from mpimatrix.run import store_db\n"
            "from mpimatrix.results.sessions import SessionError\n"
            "try:\n    store_db.connect('postgresql://u@h/d')\n"
            "except SessionError as err:\n    print(err)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert "psycopg is not installed" in out.stdout, out.stderr


def _page(results: Path, tmp_path: Path, env: dict) -> str:
    """The page and summary `report --html` writes, as test_session_index._report
    compares them (without the time it was made and the images)."""
    out = _mpimatrix(results, "report", "--html", "--since", "2d", "--name", "r",
                     "--output-dir", str(tmp_path / "html"), **env)
    assert out.returncode == 0, out.stderr
    page = re.sub(r'src="data:[^"]*"', "", (tmp_path / "html" / "r.html").read_text())
    return re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", page + (
        tmp_path / "html" / "r.md").read_text())


def _commands(results: Path, tmp_path: Path, **env: str) -> tuple:
    """What `changes`, `bless`, `diff` and `report --html` give of the stored sessions."""
    changes = _mpimatrix(results, "changes", "--dry-run", "--all", "--since", "2d", **env)
    assert changes.returncode in (0, 1), changes.stderr
    refs = tmp_path / "refs.yaml"
    refs.unlink(missing_ok=True)
    bless = _mpimatrix(results, "bless", "--since", "2d", "--output", str(refs), **env)
    assert bless.returncode == 0, bless.stdout + bless.stderr
    # the recorded sessions' software records (sw0...) are in no store: diff says so
    diff = _mpimatrix(results, "diff", "a0000000", "a0000002", **env)
    assert "session a0000000 (" in diff.stderr, diff.stderr
    return (changes.returncode, changes.stdout, refs.read_text(), diff.returncode,
            diff.stdout + diff.stderr.replace(str(results), "R"), _page(results, tmp_path, env))


def _nights(system: str, factor: float = 1.0) -> list[dict]:
    """_stored_nights(3) with UUIDs of their own per system, values times `factor`."""
    out = _stored_nights(3)
    for s in out:
        info = s["session_info"]
        info["uuid"] = system[-1].lower() + info["uuid"][1:]
        if info.get("confirms"):
            info["confirms"] = system[-1].lower() + info["confirms"][1:]
        for run in s["runs"]:
            for tc in run["testcases"]:
                for var in (tc.get("perfvalues") or {}).values():
                    if isinstance(var[0], (int, float)):
                        var[0] *= factor
    return out


def _checkout(root: Path, sessions: list[dict]) -> Path:
    """A results store with these sessions in ReFrame's database, as ReFrame writes it."""
    store(root / "db" / "results.db", sessions)
    return root


def test_the_shared_store_gives_the_figures_of_the_local_one(database, tmp_path):
    """changes, bless and the report read the same from PostgreSQL as from SQLite: from
    the checkout that uploaded the sessions, and from another checkout of the system
    that holds none of them."""
    nights = _nights("clusterA")
    expected = _commands(_checkout(tmp_path / "local", nights), tmp_path)
    env = {"MPIMATRIX_STORE_URL": database, "MPIMATRIX_SYSTEM_NAME": "clusterA"}
    assert _commands(_checkout(tmp_path / "a", nights), tmp_path, **env) == expected
    other = tmp_path / "other"
    assert _commands(other, tmp_path, **env) == expected
    assert not (other / "db" / "results.db").exists()
    status = _mpimatrix(other, "store", "status", **env)
    assert status.returncode == 0, status.stderr
    assert "clusterA: 4 session(s)" in status.stdout, status.stdout
    # another system's sessions are not this one's
    assert _mpimatrix(other, "changes", "--since", "2d", **{
        **env, "MPIMATRIX_SYSTEM_NAME": "clusterB"}).returncode == 2


def test_two_systems_write_at_once_and_are_compared_side_by_side(database, tmp_path,
                                                                monkeypatch):
    env = {"MPIMATRIX_STORE_URL": database}
    procs = []
    nights = {}
    for system, factor in (("clusterA", 1.0), ("clusterB", 1.1)):
        nights[system] = _nights(system, factor)
        results = _checkout(tmp_path / system, nights[system])
        procs.append(subprocess.Popen(
            [MPIMATRIX, "store", "sync"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=_env(results, **env, MPIMATRIX_SYSTEM_NAME=system)))
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert out.startswith("uploaded 4 session(s) to postgresql://mpimatrix@"), out
    status = _mpimatrix(tmp_path, "store", "status", **env)
    assert "clusterA: 4 session(s)" in status.stdout and "clusterB: 4 session(s)" in \
        status.stdout, status.stdout + status.stderr
    side = _mpimatrix(tmp_path, "report", "--systems", "clusterA,clusterB", "--since", "2d",
                      **env)
    assert side.returncode == 0, side.stderr
    head, *rows, last = side.stdout.splitlines()
    assert head.split()[-3:] == ["clusterA", "clusterB", "clusterB/clusterA"]
    ratios = {r.split()[-1] for r in rows}
    assert ratios == {"1.100", "-"}, side.stdout  # "-": a value of 0 on the first system
    assert last.startswith(f"{len(rows)} value(s) on every system (latest of each")
    median = _mpimatrix(tmp_path, "report", "--systems", "clusterA,clusterB", "--since",
                        "2d", "--per-system", "median", **env)
    assert median.returncode == 0 and "(median of each" in median.stdout, median.stderr
    one = _mpimatrix(tmp_path, "report", "--systems", "clusterA", **env)
    assert one.returncode == 2 and "name two or more systems" in one.stderr
    # a session is of one system: clusterA's night uploaded again as clusterB's is refused
    monkeypatch.setenv("MPIMATRIX_RESULTS", str(tmp_path / "clusterA"))
    monkeypatch.setenv("MPIMATRIX_STORE_URL", database)
    monkeypatch.setenv("MPIMATRIX_SYSTEM_NAME", "clusterB")
    line, = central_store.upload_night(load(nights["clusterA"][-2]), None)
    assert "as system clusterA, not clusterB" in line and "stays in the local store" in line


def test_a_wrong_password_names_the_setting_and_the_fix(database, tmp_path):
    results = _checkout(tmp_path / "r", _nights("clusterA"))
    env = {"MPIMATRIX_STORE_URL": database, "PGPASSWORD": "wrong"}
    for args in (("store", "sync"), ("changes", "--since", "2d")):
        proc = _mpimatrix(results, *args, **env)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "password authentication failed" in proc.stderr
        assert "monitoring: store_url:" in proc.stderr and "MPIMATRIX_STORE_URL" in proc.stderr
        assert "~/.pgpass" in proc.stderr and "PGPASSWORD" in proc.stderr
    bad = _mpimatrix(results, "store", "status", MPIMATRIX_STORE_URL="mysql://db/x")
    assert bad.returncode == 2 and "not a postgresql:// URL" in bad.stderr


def _judge(results: Path, report: Path, **env: str) -> subprocess.CompletedProcess:
    """The nightly's judging of a stored night, as `mpimatrix run` does after ReFrame."""
    code = ("import sys; from pathlib import Path; from mpimatrix.run.session import "
            "judge_report; sys.exit(judge_report(Path(sys.argv[1]), 'nightly', 0, []))")
    return subprocess.run([sys.executable, "-c", code, str(report)], capture_output=True,
                          text=True, env=_env(results, **env), timeout=900)


def _night_of(results: Path, nights: list[dict]) -> Path:
    """The newest night's report (the last session is a confirmation) in the store."""
    report = results / "reports" / "nightly-x.json"
    report.parent.mkdir(parents=True)
    report.write_text(json.dumps(nights[-2]))
    return report


def test_a_night_with_a_wrong_password_is_judged_on_the_local_store(database, tmp_path):
    """The night's verdict does not depend on the shared store: with a wrong password it
    is judged as without one, and stderr names the setting and the fix."""
    nights = _nights("clusterA")
    plain = _checkout(tmp_path / "plain", nights)
    expected = _judge(plain, _night_of(plain, nights))
    results = _checkout(tmp_path / "r", nights)
    judged = _judge(results, _night_of(results, nights), MPIMATRIX_STORE_URL=database,
                    PGPASSWORD="wrong", MPIMATRIX_SYSTEM_NAME="clusterA")
    assert (judged.returncode, judged.stdout.replace(str(results), "R")) == (
        expected.returncode, expected.stdout.replace(str(plain), "R"))
    assert "password authentication failed" in judged.stderr, judged.stderr
    assert "the night stays in the local store" in judged.stderr, judged.stderr
    assert "PGPASSWORD" in judged.stderr and "MPIMATRIX_STORE_URL" in judged.stderr
    # what the judging reads of the store (the earlier nights, when a value is outside)
    # comes from the local index then, where `changes` stops with exit 2
    code = ("from mpimatrix.run import central_store, session_index\n"
            "central_store.judge_locally_when_unusable()\n"
            "print(session_index.listed() == session_index.listed(shared=False) != {})")
    read = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(results, MPIMATRIX_STORE_URL=database, PGPASSWORD="wrong"),
                          timeout=300)
    assert read.returncode == 0 and read.stdout.strip() == "True", read.stderr
    assert "the night is judged on the local store" in read.stderr, read.stderr


def test_a_night_the_database_is_down_is_judged_alike_and_goes_up_later(
        database, tmp_path, monkeypatch):
    nights = _nights("clusterA")

    def night_of(results: Path) -> Path:
        return _night_of(results, nights)

    plain = _checkout(tmp_path / "plain", nights)
    expected = _judge(plain, night_of(plain))
    down = f"postgresql://mpimatrix@127.0.0.1:{free_port()}/x"
    results = _checkout(tmp_path / "r", nights)
    judged = _judge(results, night_of(results), MPIMATRIX_STORE_URL=down,
                    MPIMATRIX_SYSTEM_NAME="clusterA")
    assert (judged.returncode, judged.stdout.replace(str(results), "R")) == (
        expected.returncode, expected.stdout.replace(str(plain), "R"))
    assert "stays in the local store and goes up with the next command" in judged.stderr
    assert "Connection refused" in judged.stderr
    # the outlet itself: a line, never an exception
    monkeypatch.setenv("MPIMATRIX_RESULTS", str(results))
    monkeypatch.setenv("MPIMATRIX_STORE_URL", down)
    line, = central_store.upload_night(load(nights[-2]), None)  # it reads the session only
    assert line.startswith(f"{down}: ") and "`mpimatrix store sync`" in line
    env = {"MPIMATRIX_STORE_URL": database, "MPIMATRIX_SYSTEM_NAME": "clusterA"}
    sync = _mpimatrix(results, "store", "sync", **env)
    assert sync.returncode == 0, sync.stderr
    assert sync.stdout.startswith("uploaded 4 session(s)"), sync.stdout
    status = _mpimatrix(results, "store", "status", **env)
    assert "clusterA: 4 session(s)" in status.stdout and "0 session(s) not uploaded" in \
        status.stdout, status.stdout
