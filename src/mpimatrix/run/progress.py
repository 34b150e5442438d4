"""ReFrame's output, passed through, with a progress line while a test case is quiet.

ReFrame prints a line when a test case starts (`[ RUN      ] ...`) and when it
ends; a case that hangs until its time limit (3-10 min) prints nothing in
between. `call` runs ReFrame with its output piped through this process and,
every `every` seconds a case has been running without output, prints
`[ ...      ] <case>: still running after 4m00s` (with the case's Slurm job
when the Slurm commands work here, e.g. in the emulated cluster's head).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time

from .child import run_child

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_RUN = re.compile(r"^\[\s*RUN\s*\]\s+(.*\S)")
_DONE = re.compile(r"^\[\s*(?:OK|FAIL|SKIP|XFAIL|XPASS|ABORT\w*)\s*\]")

#: Seconds of silence before the first progress line, and between two of them.
EVERY = 60.0


def elapsed(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


class Progress:
    """What ReFrame is doing, from its output lines."""

    def __init__(self):
        self.case = ""
        self.started = 0.0
        self.last_output = time.monotonic()

    def saw(self, line: str, now: float) -> None:
        self.last_output = now
        text = _ANSI.sub("", line).strip()
        m = _RUN.match(text)
        if m:
            self.case, self.started = m.group(1), now
        elif _DONE.match(text):
            self.case = ""

    def due(self, now: float, every: float = EVERY) -> str:
        """The progress line to print now ('' when none is due)."""
        if not self.case or now - self.last_output < every:
            return ""
        self.last_output = now
        return f"[ ...      ] {self.case}: still running after {elapsed(now - self.started)}"


def slurm_jobs() -> str:
    """This user's running and pending ReFrame jobs ('' when Slurm does not answer)."""
    if not (os.environ.get("SLURM_CONF") and shutil.which("squeue")):
        return ""
    try:
        out = subprocess.run(["squeue", "-h", "-u", str(os.getuid()), "-o",
                              "%i|%j|%T|%M|%N|%r"],
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    jobs = []
    for line in out.splitlines():
        parts = line.split("|", 5)
        if len(parts) == 6 and parts[1].startswith("rfm_"):
            jobid, _, state, used, nodes, reason = parts
            where = f"on {nodes}" if nodes else f"({reason})"
            jobs.append(f"job {jobid} {state} {used} {where}")
    return "; ".join(jobs)


def call(cmd: list[str], every: float = EVERY) -> int:
    """Run `cmd` (ReFrame) as run_child does, its output through to ours, with
    progress lines."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return run_child(cmd, lambda proc: _follow(proc, every), stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, env=env, text=True, errors="replace",
                     bufsize=1)


def _follow(proc: subprocess.Popen, every: float) -> int:
    state = Progress()
    lock = threading.Lock()

    def pump():
        for line in proc.stdout:
            with lock:
                sys.stdout.write(line)
                sys.stdout.flush()
                state.saw(line, time.monotonic())

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    while proc.poll() is None:
        time.sleep(min(5.0, every / 4))
        with lock:
            line = state.due(time.monotonic(), every)
        if line:
            jobs = slurm_jobs()
            print(line + (f" (Slurm: {jobs})" if jobs else ""), flush=True)
    reader.join(timeout=10)
    return proc.returncode
