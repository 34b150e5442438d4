"""ReFrame's output, passed through, with a progress line while a test case is quiet.

ReFrame prints a line when a test case starts (`[ RUN      ] ...`) and when it
ends; a case that hangs until its time limit (3-10 min) prints nothing in
between. `call` runs ReFrame with its output piped through this process and,
every `every` seconds a case has been running without output, prints
`[ ...      ] <case>: still running after 4m00s` (with the case's Slurm job
when the Slurm commands work here, e.g. in the emulated cluster's head).

The output also says whether ReFrame was stopped by a signal, or met a full disk: then
`call` raises Interrupted or DiskFull once ReFrame has ended. On a full disk ReFrame
cannot write its log either and prints a traceback per log line (thousands a
session): the first is shown, the others counted.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from .child import Interrupted, kill_tree, run_child
from .full_disk import Watch

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_RUN = re.compile(r"^\[\s*RUN\s*\]\s+(.*\S)")
_DONE = re.compile(r"^\[\s*(?:OK|FAIL|SKIP|XFAIL|XPASS|ABORT\w*)\s*\]")
_STOPPED = re.compile(r"run session stopped: (?:force exit error: received signal (\d+)|"
                      r"cancelled by user)")
# ReFrame's stop exception, printed by Python's logging that caught it (ReFrame then
# ignores every stop signal)
_LOST_STOP = re.compile(r"ForceExitError: received signal (\d+)")

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
        self.stopped_by = 0  # the signal ReFrame says stopped it

    def saw(self, line: str, now: float) -> None:
        self.last_output = now
        text = _ANSI.sub("", line).strip()
        m = _RUN.match(text)
        if m:
            self.case, self.started = m.group(1), now
        elif _DONE.match(text):
            self.case = ""
        elif m := _STOPPED.search(text):
            self.stopped_by = int(m.group(1) or signal.SIGINT)

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


class Output:
    """ReFrame's output lines to pass on: its logging errors (a block from '--- Logging
    error ---' to 'Arguments: ...') that say a disk is full are shown once; one that
    caught ReFrame's stop exception sets `lost_stop` to the signal's number."""

    def __init__(self):
        self.watch = Watch()
        self.block: list[str] | None = None
        self.shown = False
        self.hidden = 0
        self.lost_stop = 0

    def feed(self, line: str) -> list[str]:
        if self.block is None and not line.startswith("--- Logging error ---"):
            self.watch.saw(line)
            return [line]
        self.block = [*(self.block or []), line]
        if m := _LOST_STOP.search(line):
            self.lost_stop = int(m.group(1))
        if line.startswith("Arguments:") or len(self.block) > 1000:
            return self.end()
        return []

    def end(self) -> list[str]:
        block, self.block = self.block or [], None
        full = [ln for ln in block if self.watch.saw(ln)]
        if full and self.shown:
            self.hidden += 1
            return []
        self.shown = self.shown or bool(full)
        return block


def call(cmd: list[str], every: float = EVERY) -> int:
    """Run `cmd` (ReFrame) as run_child does, its output through to ours, with
    progress lines."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    state, output = Progress(), Output()
    rc = run_child(cmd, lambda proc: _follow(proc, every, state, output),
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True,
                   errors="replace", bufsize=1)
    if state.stopped_by:
        raise Interrupted(state.stopped_by)
    full = output.watch.result()
    if full:
        raise full
    return rc


def _follow(proc: subprocess.Popen, every: float, state: Progress, output: Output) -> int:
    lock = threading.Lock()

    def pump():
        for line in proc.stdout:
            with lock:
                sys.stdout.write("".join(output.feed(line)))
                sys.stdout.flush()
                state.saw(line, time.monotonic())
        with lock:
            sys.stdout.write("".join(output.end()))
            if output.hidden:
                print(f"mpimatrix: {output.hidden} more logging error(s) of ReFrame not "
                      "shown: it cannot write its log on a full disk", flush=True)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    while proc.poll() is None:
        reader.join(min(1.0, every / 4))  # ends with ReFrame's output
        with lock:
            line = state.due(time.monotonic(), every)
            lost = 0 if state.stopped_by else output.lost_stop
        if lost:
            print(f"mpimatrix: ReFrame lost the {signal.Signals(lost).name} in its logging "
                  "and ignores every stop signal now: killed with its local jobs", flush=True)
            state.stopped_by = lost
            kill_tree(proc)
            continue
        if line:
            jobs = slurm_jobs()
            print(line + (f" (Slurm: {jobs})" if jobs else ""), flush=True)
    reader.join(timeout=10)
    return proc.returncode
