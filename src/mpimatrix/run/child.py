"""ReFrame as a child process that never outlives `mpimatrix run`: SIGTERM and
SIGINT are passed on, and the kernel sends SIGTERM to it if mpimatrix dies
(even by SIGKILL)."""

from __future__ import annotations

import ctypes
import signal
import subprocess

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:  # not Linux: the signal forwarding below still applies
        pass


def run_child(cmd: list[str], wait=subprocess.Popen.wait, **popen) -> int:
    """Run `cmd` to its end; `wait(proc)` waits for it (e.g. reading its output piped
    with `popen` arguments)."""
    proc = subprocess.Popen(cmd, preexec_fn=_die_with_parent, **popen)

    def forward(signum, _frame):
        proc.send_signal(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        return wait(proc)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
