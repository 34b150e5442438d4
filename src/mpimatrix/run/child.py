"""ReFrame as a child process that never outlives `mpimatrix run`, and a stop that stops.

- SIGTERM, SIGINT and SIGHUP are passed on to ReFrame, which aborts its test cases,
  writes its report and stores the partial session; `run_child` then raises
  Interrupted, so nothing more runs (no confirmation, no verdict) and `mpimatrix run`
  exits with 128 + the signal's number, as shells do (SIGTERM 143, SIGINT 130,
  SIGHUP 129). ReFrame stopped by one of them sent to it alone counts the same.
- ReFrame loses a SIGTERM that lands while it writes a log line (Python's logging
  catches the exception its handler raises, printing it as a logging error) and ignores
  every later one: progress.py kills it, with its local jobs, when its output shows
  that; a child still running GRACE seconds after the first signal is killed too (a
  signal lost anywhere else).
- Outside a child, within `stop_on_signals()`, these signals raise Interrupted at once
  (e.g. while waiting for another run's lock).
- The kernel sends SIGTERM to ReFrame if mpimatrix dies (even by SIGKILL).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

PR_SET_PDEATHSIG = 1
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: Seconds ReFrame has, after a stop signal, to end its session before it is killed.
GRACE = 60.0


class Interrupted(Exception):
    def __init__(self, signum: int, killed: bool = False):
        self.signum, self.killed = signum, killed
        super().__init__(self.name)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def _raise(signum, _frame):
    raise Interrupted(signum)


def _handled_signals() -> tuple[int, ...]:
    """The stop signals not ignored when we started: a run under `nohup` (SIGHUP) or put
    in the background by a non-interactive shell (SIGINT) keeps ignoring them, as its
    children do, instead of stopping when the terminal closes."""
    return tuple(s for s in STOP_SIGNALS if signal.getsignal(s) != signal.SIG_IGN)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    old = {s: signal.signal(s, _raise) for s in _handled_signals()}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _die_with_parent() -> None:
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:  # not Linux: the signal forwarding below still applies
        pass


def children_of(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == str(pid):
            out.append(int(stat.parent.name))
    return out


def kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL to `proc` and its children's process groups (ReFrame runs each local job
    in a session of its own)."""
    for pid in children_of(proc.pid):
        with contextlib.suppress(OSError):
            group = os.getpgid(pid)
            if group == pid and group != os.getpgrp():
                os.killpg(group, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


class Child:
    """A running child, stopped by a signal passed on, then killed if it lingers."""

    def __init__(self, proc: subprocess.Popen, grace: float):
        self.proc, self.grace = proc, grace
        self.signals: list[int] = []
        self.killed = False
        self._timer: threading.Timer | None = None

    def stop(self, signum: int) -> None:
        self.signals.append(signum)
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signum)
        if self._timer is None:
            self._timer = threading.Timer(self.grace, self._kill)
            self._timer.daemon = True
            self._timer.start()

    def _kill(self) -> None:
        if self.proc.poll() is not None:
            return
        self.killed = True
        kill_tree(self.proc)

    def cancel(self) -> None:
        if self._timer:
            self._timer.cancel()


def run_child(cmd: list[str], wait=subprocess.Popen.wait, grace: float = GRACE,
              **popen) -> int:
    """Run `cmd` to its end; `wait(proc)` waits for it (e.g. reading its output piped
    with `popen` arguments). Raises Interrupted when a stop signal stopped it."""
    proc = subprocess.Popen(cmd, preexec_fn=_die_with_parent, **popen)
    child = Child(proc, grace)
    old = {s: signal.signal(s, lambda signum, _frame: child.stop(signum))
           for s in _handled_signals()}
    try:
        rc = wait(proc)
    finally:
        child.cancel()
        for s, handler in old.items():
            signal.signal(s, handler)
    if child.signals:
        raise Interrupted(child.signals[0], child.killed)
    if rc < 0 and -rc in STOP_SIGNALS:
        raise Interrupted(-rc)
    return rc
