"""What the MPI-IO benchmark (reframe_checks/src/mpiio_bench.c) printed, and whether
it is a result.

Rank 0 prints `MPIIO config ...` (what ran, the ranks' hosts), one `MPIIO trial ...`
line per trial (time and bandwidth), `MPIIO summary ...` (min/median/max bandwidth
over the trials) and `MPIIO verification PASSED|FAILED`: every rank read its bytes
back after each trial, and a wrong byte is a failure, never a value. Errors go to
stderr as `MPIIO error rank R: <call>: <MPI error string>` or `MPIIO verify rank R ...`.
"""

from __future__ import annotations

import math
import os
import re
import statistics
from dataclasses import dataclass, field

from ...units import human_size
from ..common import Metric, runtime_errors

MODES = ("shared", "perfile", "gather")
LAYOUTS = ("contiguous", "strided")
SYNCS = ("cache", "sync")
BINARY = "mpiio_bench"
#: A summary median further than this from the trials' own median is a broken output.
MEDIAN_TOLERANCE = 0.01

_KV = re.compile(r"(\w+)=(\S*)")
#: ROMIO (MPICH's, Intel MPI's MPI-IO) asked for an fcntl lock and got none, and why.
_LOCK_FAILED = re.compile(r"File locking failed in (ADIOI_\w+)(?:\(.*?errno ([0-9A-Fa-f]+))?")
_LOCK_ERRNO = re.compile(r"^(ADIOI_\w+):: (.+)$", re.M)


@dataclass(frozen=True)
class MpiioBenchmark:
    """One variant: mode x layout x sync at one size per rank, in the stage directory
    or on the partition's shared file system."""

    mode: str
    layout: str
    sync: str
    size: int  # bytes per rank
    shared_fs: bool = False

    @property
    def name(self) -> str:
        where = "-sharedfs" if self.shared_fs else ""
        return f"mpiio-{self.mode}-{self.layout}-{self.sync}{where}"

    @property
    def binary(self) -> str:
        return BINARY

    @property
    def metrics(self) -> tuple[Metric, ...]:
        return (Metric(f"write_bw_{human_size(self.size)}", "write_bandwidth",
                       ("bw_MBps_median",), self.size, "MB/s", True),)


@dataclass
class MpiioRun:
    config: dict[str, str] = field(default_factory=dict)
    trials: list[dict[str, str]] = field(default_factory=list)
    summary: dict[str, float] = field(default_factory=dict)
    verification: str = ""  # PASSED, FAILED, "" (not printed)
    verify_detail: str = ""  # the verification line's rest, e.g. wrong_bytes=1
    errors: list[str] = field(default_factory=list)  # MPIIO errors, then the MPI's
    #: The MPI-IO layer's failed file lock ("" when none failed), e.g.
    #: "ADIOI_GEN_SetLock: No locks available"
    lock_failure: str = ""

    @property
    def finished(self) -> bool:
        return bool(self.verification)

    @property
    def hosts(self) -> list[str]:
        return [h for h in self.config.get("hosts", "").split(",") if h]

    @property
    def bandwidths(self) -> list[float]:
        return [float(t["bw_MBps"]) for t in self.trials if "bw_MBps" in t]

    def row(self, size: int | None) -> dict[str, float] | None:
        """The summary, for the size this run wrote (common.metric_value's table)."""
        if not self.summary or str(size) != self.config.get("bytes_per_rank"):
            return None
        return self.summary

    def values(self) -> dict[str, str]:
        """What the run record keeps besides the gated median: the spread, the trials."""
        out = {k: f"{v:g}" for k, v in self.summary.items()}
        out["trials"] = str(len(self.trials))
        if self.config:
            out["block"] = self.config.get("block", "")
        return out


def parse(stdout: str, stderr: str = "") -> MpiioRun:
    run = MpiioRun()
    for line in stdout.splitlines():
        words = line.split()
        if len(words) < 2 or words[0] != "MPIIO":
            continue
        kv = dict(_KV.findall(line))
        if words[1] == "config":
            run.config = kv
        elif words[1] == "trial":
            run.trials.append(kv)
        elif words[1] == "summary":
            try:
                run.summary = {k: float(v) for k, v in kv.items()}
            except ValueError:
                run.errors.append(f"unreadable summary: {line.strip()}")
        elif words[1] == "verification" and len(words) > 2:
            run.verification, run.verify_detail = words[2], " ".join(words[3:])
    own = [ln.strip() for ln in stderr.splitlines() if ln.startswith("MPIIO ")]
    lock = _LOCK_FAILED.search(stderr)
    if lock:
        # ROMIO prints the errno in hex ("errno 25": ENOLCK), then its text, unless the
        # abort cut that line off
        why = _LOCK_ERRNO.search(stderr)
        text = why.group(2) if why else (os.strerror(int(lock.group(2), 16))
                                         if lock.group(2) else "failed")
        run.lock_failure = f"{lock.group(1)}: {text}"
        own.append(f"file locking failed in {run.lock_failure}")
    run.errors += own[:3] + runtime_errors(stdout + "\n" + stderr)
    return run


def _config_problems(run: MpiioRun, bench: MpiioBenchmark, ranks: int) -> list[str]:
    want = {"mode": bench.mode, "layout": bench.layout, "sync": bench.sync,
            "bytes_per_rank": str(bench.size), "ranks": str(ranks)}
    wrong = [f"{k}={run.config.get(k)} (expected {v})" for k, v in want.items()
             if run.config.get(k) != v]
    return [f"{BINARY} ran with {', '.join(wrong)}"] if wrong else []


def mpiio_result_problems(run: MpiioRun, bench: MpiioBenchmark, ranks: int) -> list[str]:
    """Why the output is not a result of this variant ([] when it is)."""
    detail = f" ({'; '.join(run.errors)})" if run.errors else ""
    if not run.config:
        return [f"{BINARY} printed no configuration line: it did not start{detail}"]
    errs = _config_problems(run, bench, ranks)
    expected = int(run.config.get("trials", "0") or 0)
    if run.verification == "FAILED":
        return [*errs, f"{bench.name}: the data read back is wrong ({run.verify_detail}) "
                       f"after trial {len(run.trials)}: a wrong byte is a failure, not a "
                       f"value{detail}"]
    if run.lock_failure:
        return [*errs, f"{bench.name}: the MPI-IO layer needs fcntl locks the file system "
                       f"does not give ({run.lock_failure}); died after {len(run.trials)} of "
                       f"{expected} trials{detail}"]
    if run.verification != "PASSED":
        return [*errs, f"{bench.name} died after {len(run.trials)} of {expected} trials, "
                       f"before its verification{detail}"]
    if len(run.trials) != expected:
        errs.append(f"{bench.name}: {len(run.trials)} trial lines, {expected} trials run")
    bws = run.bandwidths
    bad = [b for b in bws if not 0 < b < math.inf]
    if bad:
        errs.append(f"{bench.name}: impossible bandwidths {bad}: the timer or the output "
                    "is broken")
    median = run.summary.get("bw_MBps_median")
    if median is None:
        errs.append(f"{bench.name}: no summary line")
    elif bws and abs(median - statistics.median(bws)) > MEDIAN_TOLERANCE * median + 0.01:
        errs.append(f"{bench.name}: summary median {median} MB/s is not the trials' "
                    f"{statistics.median(bws):.2f} MB/s")
    return errs
