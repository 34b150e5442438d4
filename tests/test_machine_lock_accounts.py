"""The machine lock (MPIMATRIX_MACHINE_LOCK, default /tmp/mpimatrix-performance.lock)
shared by two accounts, for real: root and other uids (setpriv), a lock file in /tmp
(sticky and world-writable, as the default), and with Linux's fs.protected_regular on,
which forbids an O_CREAT open of another user's file there whatever its mode.

- A lock root made with the umask's 644 (as mpimatrix did before) is taken by another
  account (read-only: flock needs no write access); one made now is 0666.
- While root holds it, the other account with --no-wait gets StoreBusy naming the holder;
  waiting, it gets the lock once root lets go.
- Two ordinary accounts under fs.protected_regular: the second takes the first's lock.
- A lock no account but its owner may open: one line naming the file and the variable
  that moves it (exit 2 from the command line), no traceback."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from mpimatrix.run.lock import MACHINE_LOCK_ENV, session_locks

SRC = Path(__file__).resolve().parents[1] / "src"
#: Two ordinary accounts (no passwd entry needed: setpriv takes numeric ids).
NOBODY, OTHER = 65534, 65533
SETPRIV = shutil.which("setpriv")

#: What the other account runs: `session_locks` as `mpimatrix run` takes them, with the
#: machine lock from MPIMATRIX_MACHINE_LOCK; prints what happened as JSON.
CHILD = r"""
import errno, json, os, sys
from pathlib import Path
from mpimatrix.run.lock import StoreBusy, session_locks
results, how = Path(sys.argv[1]), sys.argv[2]
lock = Path(os.environ["MPIMATRIX_MACHINE_LOCK"])
out = {"pid": os.getpid()}
if how == "probe":  # what an O_CREAT open of the existing lock does (protected_regular)
    try:
        os.close(os.open(lock, os.O_RDWR | os.O_CREAT, 0o666))
        out["o_creat"] = "opened"
    except OSError as err:
        out["o_creat"] = errno.errorcode[err.errno]
try:
    with session_locks(results, wait=how == "wait"):
        out["held"] = True
        out["line"] = lock.read_text()
except StoreBusy as err:
    out["busy"] = str(err)
except Exception as err:
    out["error"] = [c.__name__ for c in type(err).__mro__]
    out["message"] = str(err)
print(json.dumps(out), flush=True)
"""


@pytest.fixture(scope="module", autouse=True)
def root():
    if os.geteuid() != 0:
        pytest.skip("running as a second account (setpriv --reuid) needs root")
    if SETPRIV is None:
        pytest.skip("no setpriv (util-linux) on the PATH")


def as_user(uid: int, *argv: str) -> list[str]:
    return [SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]


def child_env(lock: Path, **extra: str) -> dict:
    return {"PATH": "/usr/bin:/bin", "HOME": "/", "PYTHONPATH": str(SRC),
            "PYTHONDONTWRITEBYTECODE": "1", MACHINE_LOCK_ENV: str(lock), **extra}


@pytest.fixture(scope="module")
def python() -> str:
    """A Python the other accounts may run that imports this tree's mpimatrix.run.lock:
    the venv's, else the system's (the lock needs nothing outside the standard library)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        probe = subprocess.run(as_user(NOBODY, exe, "-c", "import mpimatrix.run.lock"),
                               env=child_env(Path("/nonexistent")), cwd="/",
                               capture_output=True, text=True, timeout=60)
        if probe.returncode == 0:
            return exe
    pytest.skip(f"no Python uid {NOBODY} may run that imports {SRC}/mpimatrix: "
                f"{probe.stderr.strip()[-300:]}")


@pytest.fixture
def lock():
    """A lock file name in /tmp itself (sticky, world-writable), removed after."""
    path = Path(tempfile.gettempdir()) / f"mpimatrix-test-{uuid.uuid4().hex[:12]}.lock"
    assert stat.S_IMODE(path.parent.stat().st_mode) & 0o1002 == 0o1002, "not a /tmp"
    yield path
    path.unlink(missing_ok=True)


@pytest.fixture
def store():
    """A results store for each uid, owned by it (the store lock is not the subject)."""
    made = []

    def make(uid: int) -> Path:
        path = Path(tempfile.mkdtemp(prefix="mpimatrix-store-"))
        os.chown(path, uid, uid)
        made.append(path)
        return path

    yield make
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def take(python: str, uid: int, results: Path, lock: Path, how: str = "nowait") -> dict:
    proc = subprocess.run(as_user(uid, python, "-c", CHILD, str(results), how),
                          env=child_env(lock), cwd="/", capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def legacy_lock(path: Path) -> None:
    """The machine lock as mpimatrix made it before: O_CREAT with mode 0666 under the
    umask (022: 644), and the owner line of the run that made it."""
    old = os.umask(0o022)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    finally:
        os.umask(old)
    os.write(fd, b"mpimatrix run pid 1 (/) since 2026-01-01 00:00:00\n")
    os.close(fd)


@contextlib.contextmanager
def root_holds(lock: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv(MACHINE_LOCK_ENV, str(lock))
    old = os.umask(0o022)
    try:
        with session_locks(tmp_path / "root-store", wait=False):
            yield
    finally:
        os.umask(old)


@contextlib.contextmanager
def protected_regular():
    """fs.protected_regular on (1, as systemd sets it, unless it is on already)."""
    knob = Path("/proc/sys/fs/protected_regular")
    try:
        before = knob.read_text().strip()
        if before == "0":
            knob.write_text("1")
    except OSError as err:
        pytest.skip(f"cannot set fs.protected_regular ({err.strerror})")
    try:
        yield
    finally:
        if before == "0":
            knob.write_text(before)


def test_a_lock_root_made_with_mode_644_is_taken_by_another_account(python, lock, store):
    legacy_lock(lock)
    assert stat.S_IMODE(lock.stat().st_mode) == 0o644
    got = take(python, NOBODY, store(NOBODY), lock)
    assert got.get("held"), got
    # taken read-only: root's file is left as it was, owner line and all
    assert got["line"] == "mpimatrix run pid 1 (/) since 2026-01-01 00:00:00\n"
    assert stat.S_IMODE(lock.stat().st_mode) == 0o644 and lock.stat().st_uid == 0


def test_root_makes_its_old_644_lock_shared_when_it_takes_it(lock, tmp_path, monkeypatch):
    legacy_lock(lock)
    with root_holds(lock, tmp_path, monkeypatch):
        assert stat.S_IMODE(lock.stat().st_mode) == 0o666
        assert lock.read_text().startswith(f"mpimatrix run pid {os.getpid()} ")


def test_a_lock_made_now_is_shared_whatever_the_umask(python, lock, store, tmp_path,
                                                      monkeypatch):
    with root_holds(lock, tmp_path, monkeypatch):
        pass
    assert stat.S_IMODE(lock.stat().st_mode) == 0o666 and lock.stat().st_uid == 0
    got = take(python, NOBODY, store(NOBODY), lock)
    assert got.get("held"), got
    # writable now: the other account's run is the one named
    assert got["line"].startswith(f"mpimatrix run pid {got['pid']} (/) since "), got


@pytest.mark.parametrize("made", ["before", "now"])
def test_while_root_holds_it_the_other_account_is_refused_naming_root(
        made, python, lock, store, tmp_path, monkeypatch):
    if made == "before":
        legacy_lock(lock)
    results = store(NOBODY)
    with root_holds(lock, tmp_path, monkeypatch):
        got = take(python, NOBODY, results, lock)
    assert "busy" in got, got
    assert got["busy"].startswith(
        f"this machine's cores is in use by mpimatrix run pid {os.getpid()} ({os.getcwd()}) "
        "since "), got["busy"]
    assert got["busy"].endswith(f"(lock {lock}); wait for it, or run elsewhere"), got["busy"]


def test_the_other_account_waits_for_root_then_takes_it(python, lock, store, tmp_path,
                                                        monkeypatch):
    legacy_lock(lock)
    results = store(NOBODY)
    with root_holds(lock, tmp_path, monkeypatch):
        waiting = subprocess.Popen(as_user(NOBODY, python, "-c", CHILD, str(results), "wait"),
                                   env=child_env(lock), cwd="/", stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        assert waiting.stderr is not None
        said = waiting.stderr.readline()  # blocks until it says it waits
        assert said.startswith("mpimatrix: this machine's cores is in use by mpimatrix run "
                               f"pid {os.getpid()} "), said
        time.sleep(0.5)
        assert waiting.poll() is None, "it did not wait"
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0 and "Traceback" not in err, err
    assert json.loads(out).get("held"), out


def test_two_ordinary_accounts_share_it_under_protected_regular(python, lock, store):
    with protected_regular():
        first = take(python, NOBODY, store(NOBODY), lock)
        assert first.get("held"), first
        assert lock.stat().st_uid == NOBODY and stat.S_IMODE(lock.stat().st_mode) == 0o666
        second = take(python, OTHER, store(OTHER), lock, "probe")
    # the kernel's rule is in force: the O_CREAT open mpimatrix did before is refused...
    assert second["o_creat"] == "EACCES", second
    # ... and the lock is taken all the same, and named after the second account's run
    assert second.get("held"), second
    assert second["line"].startswith(f"mpimatrix run pid {second['pid']} "), second


def test_root_takes_an_ordinary_accounts_lock_under_protected_regular(
        python, lock, store, tmp_path, monkeypatch):
    with protected_regular():
        assert take(python, NOBODY, store(NOBODY), lock).get("held")
        with root_holds(lock, tmp_path, monkeypatch):
            assert lock.read_text().startswith(f"mpimatrix run pid {os.getpid()} ")


def test_a_lock_only_its_owner_may_open_is_one_line_naming_the_variable(python, lock, store):
    legacy_lock(lock)
    lock.chmod(0o600)
    got = take(python, NOBODY, store(NOBODY), lock)
    assert "SessionError" in got.get("error", []), got  # the CLI: one line, exit 2
    assert got["message"] == (
        f"cannot open or create the lock {lock} (Permission denied): its owner can make it "
        f"readable by every account (chmod a+r {lock}), or set MPIMATRIX_MACHINE_LOCK to a "
        "file every account that runs sessions on this machine can open (empty: no machine "
        "lock)"), got


def test_a_lock_this_account_cannot_make_is_one_line(python, store):
    """The lock's folder root's (755): another account can neither open nor create it."""
    folder = store(0)
    os.chmod(folder, 0o755)
    lock = folder / "machine.lock"
    got = take(python, NOBODY, store(NOBODY), lock)
    assert "SessionError" in got.get("error", []), got
    assert got["message"] == (
        f"cannot open or create the lock {lock} (Permission denied): this account cannot "
        f"create it in {folder}, or set MPIMATRIX_MACHINE_LOCK to a file every account that "
        "runs sessions on this machine can open (empty: no machine lock)"), got


def test_the_command_line_says_it_in_one_line_exit_2(python, store):
    """`mpimatrix prune` (the store lock alone) in a store whose lock another account made
    and only it may open: exit 2, one line, no traceback."""
    results = store(0)
    os.chmod(results, 0o755)
    (results / ".mpimatrix-run.lock").write_text("")
    (results / ".mpimatrix-run.lock").chmod(0o600)
    code = "import sys; from mpimatrix.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run(as_user(NOBODY, python, "-c", code, "prune", "--no-wait"),
                          env=child_env(Path(""), MPIMATRIX_RESULTS=str(results),
                                        HOME=str(store(NOBODY))), cwd="/",
                          capture_output=True, text=True, timeout=120)
    if "ModuleNotFoundError" in proc.stderr:
        pytest.skip(f"{python} lacks the project's dependencies for uid {NOBODY}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr == (
        f"mpimatrix: cannot open or create the lock {results}/.mpimatrix-run.lock (Permission "
        f"denied): its owner can make it readable by every account (chmod a+r "
        f"{results}/.mpimatrix-run.lock), or set MPIMATRIX_RESULTS to a results store this "
        "account owns\n"), proc.stderr
