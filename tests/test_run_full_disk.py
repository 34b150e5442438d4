"""A results store on a full disk (a real tmpfs, filled): `mpimatrix run` ends with
exit 2 and one message naming the store, the file it could not write and the fix,
whichever write meets the full disk first (the lock's owner line, ReFrame's stage
directories, its report, its results database, its perflogs, the machine lock), and
the sessions already in the results database stay as they were, byte for byte.

Each run is the placement check on one build (a few seconds); the perflog one runs
IMB PingPong (the placement check has no performance value to log)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.mpi, pytest.mark.reframe]

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
PLACEMENT = ["--", "-n", "MpiPlacementCheck"]
PINGPONG = ["--", "-n", r"ImbCheck.*%benchmark=MPI1:PingPong$"]
MESSAGE = re.compile(
    r"^mpimatrix: the results store (?P<store>\S+) is on a full disk \(No space left on "
    r"device(?:: (?P<file>\S+))?\): free space there, or point MPIMATRIX_RESULTS at a disk "
    r"with room, and run again; sessions stored before are kept, this run is not judged$",
    re.M)


@pytest.fixture(scope="module", autouse=True)
def root():
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")


@pytest.fixture(scope="module")
def build(buildset):
    """A build with IMB (for the perflog case), Debian's MPICH where there is one."""
    with_imb = [b for b in buildset.builds if "imb" in b.benchmarks]
    if not with_imb:
        pytest.skip("needs a build with IMB")
    return next((b for b in with_imb if b.family == "mpich" and b.provenance == "debian"),
                with_imb[0])


def env_for(store: Path, **extra: str) -> dict:
    env = {**os.environ, "MPIMATRIX_RESULTS": str(store), "MPIMATRIX_MACHINE_LOCK": "",
           **extra}
    env.pop("MPIMATRIX_INJECT", None)
    env.pop("RFM_SQLITE_DB_FILE", None)
    return env


def run(store: Path, build, *select: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([MPIMATRIX, "run", "--only", f"^{re.escape(build.name)}$",
                           *(select or PLACEMENT)], env=env_for(store, **extra),
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def seed(build, tmp_path_factory) -> Path:
    """A results store holding one session of the placement check and one of PingPong."""
    store = tmp_path_factory.mktemp("seed") / "results"
    for select in (PLACEMENT, PINGPONG):
        proc = run(store, build, *select)
        assert proc.returncode in (0, 4), proc.stdout[-3000:] + proc.stderr[-2000:]
    assert len(stored(store / "db" / "results.db")) == 2
    return store


@contextlib.contextmanager
def tmpfs(path: Path, size: str = "4m"):
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if proc.returncode:
        pytest.skip(f"cannot mount a tmpfs: {proc.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


def fill(path: Path, leave: int = 0) -> None:
    """Fill the disk of `path` but `leave` bytes (0: to the last byte)."""
    st = os.statvfs(path)
    todo = st.f_bavail * st.f_frsize - leave
    chunk = bytes(1 << 16)
    with open(path / "filler", "wb", buffering=0) as fp:
        try:
            while todo > 0 or not leave:
                todo -= fp.write(chunk[:min(todo, len(chunk))] if leave else chunk)
        except OSError as err:
            assert err.errno == errno.ENOSPC and not leave, err


def stored(db: Path) -> dict[str, tuple]:
    """Every stored session, with its test cases (read only: nothing written)."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {row[0]: (row, conn.execute("SELECT * FROM testcases WHERE session_uuid = ? "
                                           "ORDER BY uuid", (row[0],)).fetchall())
                for row in conn.execute("SELECT * FROM sessions")}


def copy_store(seed: Path, to: Path) -> None:
    shutil.copytree(seed, to, symlinks=True, dirs_exist_ok=True)


def assert_refused(proc: subprocess.CompletedProcess, store: Path) -> str:
    """Exit 2 with the one message (no traceback of mpimatrix); the file it names."""
    assert proc.returncode == 2, proc.stdout[-4000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    found = MESSAGE.findall(proc.stderr)
    assert len(found) == 1, proc.stderr[-3000:]
    assert found[0][0] == str(store), found
    # ReFrame cannot write its log on a full disk either: one traceback per log line,
    # of which one is shown
    assert proc.stdout.count("--- Logging error ---") <= 1, proc.stdout[-3000:]
    return found[0][1]


def assert_kept(before: dict, db: Path, db_bytes: bytes | None = None) -> dict:
    after = stored(db)
    assert {k: after.get(k) for k in before} == before
    if db_bytes is not None:
        assert db.read_bytes() == db_bytes
    return after


def assert_reports_whole(store: Path) -> None:
    """No half-written report is left; latest.json names a whole one."""
    for report in (store / "reports").glob("*.json"):
        json.loads(report.read_text())


@pytest.mark.parametrize("leave, written", [
    (0, r"\.mpimatrix-run\.lock"),  # the first write of a run: the lock's owner line
    # ReFrame copies the checks' sources to the stage directory, and writes its report
    # (compact since compress_report: which of the two fills the last 64 KiB varies)
    (64 << 10, r"(stage/.*|reports/\S+\.json)"),
])
def test_a_full_store(seed, build, tmp_path, leave, written):
    store = tmp_path / "results"
    with tmpfs(store):
        copy_store(seed, store)
        (store / ".mpimatrix-run.lock").write_text("")  # its owner line needs a block
        db = store / "db" / "results.db"
        before, db_bytes = stored(db), db.read_bytes()
        fill(store, leave)
        proc = run(store, build)
        named = assert_refused(proc, store)
        assert re.fullmatch(re.escape(str(store)) + "/" + written, named), named
        assert_kept(before, db, db_bytes)
        assert len(stored(db)) == len(before)
        assert_reports_whole(store)
        assert os.readlink(store / "reports" / "latest.json") == \
            os.readlink(seed / "reports" / "latest.json")


def test_a_full_reports_directory(seed, build, tmp_path):
    """ReFrame cannot write its report: the session is in the database, not judged."""
    store = tmp_path / "results"
    copy_store(seed, store)
    db = store / "db" / "results.db"
    before = stored(db)
    latest = os.readlink(store / "reports" / "latest.json")
    saved = tmp_path / "reports"
    shutil.move(store / "reports", saved)
    with tmpfs(store / "reports"):
        copy_store(saved, store / "reports")
        fill(store / "reports")
        proc = run(store, build)
        named = assert_refused(proc, store)
        assert re.fullmatch(re.escape(str(store / "reports")) + r"/\S+\.json", named), named
        assert_reports_whole(store)  # ReFrame's empty report removed
        assert os.readlink(store / "reports" / "latest.json") == latest
        assert len(assert_kept(before, db)) == len(before) + 1


def test_a_full_database_disk(seed, build, tmp_path):
    """The results database cannot take the session: it stays byte for byte."""
    store = tmp_path / "results"
    copy_store(seed, store)
    shutil.move(store / "db", tmp_path / "db")
    with tmpfs(store / "db"):
        copy_store(tmp_path / "db", store / "db")
        db = store / "db" / "results.db"
        before, db_bytes = stored(db), db.read_bytes()
        fill(store / "db")
        proc = run(store, build)
        named = assert_refused(proc, store)
        assert named == str(db), named
        assert_kept(before, db, db_bytes)


def test_full_perflogs(seed, build, tmp_path):
    """ReFrame cannot log the performance values (its perflogs): no file is named in
    its output, the full part of the store is."""
    store = tmp_path / "results"
    copy_store(seed, store)
    shutil.rmtree(store / "perflogs")  # (a line appended to a file may fit its last block)
    with tmpfs(store / "perflogs"):
        db = store / "db" / "results.db"
        before = stored(db)
        fill(store / "perflogs")
        proc = run(store, build, *PINGPONG)
        named = assert_refused(proc, store)
        assert named == str(store / "perflogs"), named
        assert_kept(before, db)


def test_a_full_machine_lock_disk(build, tmp_path):
    with tmpfs(tmp_path / "locks"):
        fill(tmp_path / "locks")
        lock = tmp_path / "locks" / "machine.lock"
        proc = run(tmp_path / "results", build, MPIMATRIX_MACHINE_LOCK=str(lock))
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert (f"mpimatrix: the lock {lock} is on a full disk (No space left on device: {lock}): "
            "free space there, or point MPIMATRIX_MACHINE_LOCK at a disk with room"
            ) in proc.stderr, proc.stderr
    assert "[ReFrame Setup]" not in proc.stdout
