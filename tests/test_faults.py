"""Faults during real sessions: kills, concurrent runs, a broken results database,
paths that are not plain, sessions with nothing to run. Each `mpimatrix run` here
runs the placement check on one build (a few seconds)."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers import FIXTURES

from mpimatrix.run.lock import store_lock

pytestmark = [pytest.mark.mpi, pytest.mark.reframe]

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
PLACEMENT = ["--", "-n", "MpiPlacementCheck"]


@pytest.fixture(scope="module")
def build(buildset):
    return next((b for b in buildset.builds if b.family == "mpich" and b.provenance == "debian"),
                buildset.builds[0])


def env_for(results: Path, **extra: str) -> dict:
    env = {**os.environ, "MPIMATRIX_RESULTS": str(results), "MPIMATRIX_MACHINE_LOCK": "",
           **extra}
    env.pop("MPIMATRIX_INJECT", None)
    return env


def run(results: Path, build, *args: str, cwd=None, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([MPIMATRIX, "run", "--only", f"^{re.escape(build.name)}$", *args,
                           *PLACEMENT], env=env_for(results, **extra), capture_output=True,
                          text=True, timeout=600, cwd=cwd)


def test_paths_with_spaces_and_shell_syntax_are_characters(build, tmp_path):
    """A build whose prefix and wrappers live under 'a b/$(touch PWNED)': the probe
    compiles and runs, and nothing is executed from the path."""
    odd = tmp_path / "a b" / "$(touch PWNED)"
    (odd / "bin").mkdir(parents=True)
    for tool, target in (("mpicc", build.cc), ("mpiexec", build.launcher)):
        (odd / "bin" / tool).symlink_to(target)
    proxy = Path(build.launcher).parent / "hydra_pmi_proxy"  # Hydra looks beside mpiexec
    if proxy.exists():
        (odd / "bin" / proxy.name).symlink_to(proxy)
    rec = {**build.to_dict(), "name": "odd-build", "prefix": str(odd), "provenance": "site",
           "cc": str(odd / "bin" / "mpicc"), "launcher": str(odd / "bin" / "mpiexec"),
           "env": {**build.env, "MPIMATRIX_ODD": str(odd).replace("$", "$$") + ":$HOME"},
           "benchmarks": {}}
    builds = tmp_path / "builds.json"
    builds.write_text(json.dumps({"builds": [rec]}))
    proc = subprocess.run([MPIMATRIX, "run", "--", "-n", "MpiPlacementCheck"],
                          env=env_for(tmp_path / "res", MPIMATRIX_BUILDS=str(builds)),
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "odd-build" in proc.stdout and " pass " in proc.stdout
    assert not list(tmp_path.rglob("PWNED")) and not Path("PWNED").exists()


def test_relative_paths_in_the_environment(build, tmp_path):
    (tmp_path / "work").mkdir()
    rec = build.to_dict()
    (tmp_path / "builds.json").write_text(json.dumps({"builds": [rec]}))
    proc = run(Path("res"), build, cwd=tmp_path / "work",
               MPIMATRIX_BUILDS="../builds.json", MPIMATRIX_RESULTS="res")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    # reports and the database in the same store
    assert list((tmp_path / "work" / "res" / "reports").glob("quick-*.json"))
    assert (tmp_path / "work" / "res" / "db" / "results.db").exists()


def test_a_broken_results_database_is_not_a_stored_session(build, tmp_path):
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "results.db").write_text("garbage garbage")
    proc = run(tmp_path, build)
    assert proc.returncode == 3, proc.stdout[-2000:]
    assert "the session is not in the results database" in proc.stderr
    assert "file is not a database" in proc.stderr


def test_nothing_to_run_is_not_a_success(tmp_path):
    """Only IMB asked for, on a lock none of whose benchmarks is installed (its Debian
    external MPIs are there, the Spack-built ones are not): ReFrame runs 0 test cases."""
    lock = FIXTURES / "spack" / "debian-local-v6.spack.lock"
    proc = subprocess.run([MPIMATRIX, "run", "--", "-n", "ImbCheck"],
                          env=env_for(tmp_path, MPIMATRIX_LOCK=str(lock),
                                      MPIMATRIX_SPACK_STORE=str(tmp_path / "empty"),
                                      SPACK_ROOT=str(tmp_path / "nospack"),
                                      PATH="/usr/bin:/bin"),
                          capture_output=True, text=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if "Ran 0/0" in ln]
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert lines or "no test case ran" in proc.stderr
    assert "no test case ran" in proc.stderr


def test_second_run_on_a_busy_store_waits_or_refuses(build, tmp_path):
    """The store held by a run (this process, through the run's own lock): a second run
    with --no-wait refuses naming the holder; without it, it waits until the lock is
    released and then runs. Then two real runs at once: both sessions are stored."""
    with store_lock(tmp_path):
        refused = run(tmp_path, build, "--no-wait")
        waiting = subprocess.Popen([MPIMATRIX, "run", "--only", f"^{re.escape(build.name)}$",
                                    *PLACEMENT], env=env_for(tmp_path),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert waiting.stderr is not None
        said = ""
        for line in waiting.stderr:  # blocks until the run reports the busy store
            said += line
            if "waiting for it to end" in line:
                break
        assert waiting.poll() is None, said
    out, err = waiting.communicate(timeout=600)
    assert refused.returncode == 3 and "is in use by mpimatrix run pid" in refused.stderr
    assert "waiting for it to end" in said, said + err
    assert waiting.returncode == 0, out[-2000:]

    first = subprocess.Popen([MPIMATRIX, "run", "--only", f"^{re.escape(build.name)}$",
                              *PLACEMENT], env=env_for(tmp_path), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    second = run(tmp_path, build)
    out, _ = first.communicate(timeout=600)
    assert first.returncode == 0, out[-2000:]
    assert second.returncode == 0, second.stdout[-2000:]
    reports = sorted(p.name for p in (tmp_path / "reports").glob("quick-*.json"))
    assert len(reports) == 3 and len(set(reports)) == 3  # every session, distinct reports
    for name in reports:
        data = json.loads((tmp_path / "reports" / name).read_text())
        assert all(tc["result"] == "pass" for r in data["runs"] for tc in r["testcases"])


def _descendants(pid: int) -> dict[int, str]:
    """Every process below `pid`, with its command line: ReFrame starts each job in a
    session of its own, so a session id does not find them."""
    table = {}
    for line in subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True,
                               text=True).stdout.splitlines():
        child, parent, args = [*line.split(None, 2), ""][:3]
        table.setdefault(int(parent), []).append((int(child), args))
    out, todo = {}, [pid]
    while todo:
        for child, args in table.get(todo.pop(), []):
            out[child] = args
            todo.append(child)
    return out


def test_sigterm_stops_reframe_and_its_jobs(build, tmp_path):
    """A long session (the whole IMB catalogue) killed while a benchmark runs: ReFrame,
    the job's script, the launcher and the ranks all end."""
    proc = subprocess.Popen([MPIMATRIX, "run", "--only", f"^{re.escape(build.name)}$",
                             "--mode", "full", "--", "-n", "ImbCheck"],
                            env=env_for(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # IMB of a build that has none is built first (ImbFromSource)
        deadline, below = time.monotonic() + 1200, {}
        while time.monotonic() < deadline and not any(
                "IMB-" in args for args in below.values()):
            time.sleep(0.2)
            below = _descendants(proc.pid)
        assert any("IMB-" in args for args in below.values()), below
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    time.sleep(3)
    alive = subprocess.run(["ps", "-o", "pid=,args=", "-p", ",".join(map(str, below))],
                           capture_output=True, text=True).stdout
    assert not alive.strip(), alive


def test_kill_9_during_bless_leaves_old_or_new_references(tmp_path):
    """20 kill times spread over a bless: the reference file is always a whole file."""
    sessions = [a for n in (1, 2, 3) for a in (
        "--report", str(FIXTURES / "sessions" / f"imb-quick-bless-{n}.json"))]
    env = env_for(tmp_path)
    # the two versions the killed blesses below write whole: floors 10 % and 20 %
    subprocess.run([MPIMATRIX, "bless", "--tolerance", "0.1", *sessions], env=env, check=True,
                   capture_output=True)
    refs = tmp_path / "references" / "local.yaml"
    versions = {refs.read_bytes()}
    t0 = time.monotonic()
    subprocess.run([MPIMATRIX, "bless", "--tolerance", "0.2", *sessions], env=env,
                   check=True, capture_output=True)
    full = time.monotonic() - t0
    versions.add(refs.read_bytes())
    rng = random.Random(20261123)
    for i in range(20):
        floor = "0.1" if i % 2 else "0.2"
        p = subprocess.Popen([MPIMATRIX, "bless", "--tolerance", floor, *sessions], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 1.1) * full)
        p.kill()
        p.wait()
        data = refs.read_bytes()
        assert data in versions, f"kill {i}: a reference file neither old nor new"
        assert yaml.safe_load(data)["ImbCheck"]
    # a kill -9 in the middle of a write leaves its hidden temporary file (nothing can
    # remove it then); it is never read as references: not *.yaml
    assert all(not p.name.endswith(".yaml") for p in refs.parent.glob(".*"))


def test_kill_9_during_runs_keeps_the_database_sound(build, tmp_path):
    """20 `mpimatrix run`s killed at random points: the database passes SQLite's
    integrity check, and a session run afterwards is stored."""
    rng = random.Random(7)
    t0 = time.monotonic()
    first = run(tmp_path, build)
    assert first.returncode == 0, first.stdout[-2000:]
    full = time.monotonic() - t0
    for _ in range(20):
        p = subprocess.Popen([MPIMATRIX, "run", "--only", f"^{re.escape(build.name)}$",
                              *PLACEMENT], env=env_for(tmp_path), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 1.0) * full)
        p.kill()
        p.wait()
        with sqlite3.connect(tmp_path / "db" / "results.db") as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    time.sleep(2)  # a killed run's ReFrame gets SIGTERM from the kernel (PDEATHSIG)
    last = run(tmp_path, build)
    assert last.returncode == 0, last.stdout[-2000:]
