"""ReFrame scheduler `squeue-all`: the `squeue` backend, seeing finished jobs too,
and never waiting for nodes that are down.

ReFrame's `squeue` backend (for Slurm without accounting) polls
`squeue -h -j IDS`, which lists only pending and running jobs. A job that ends
before the first poll (2 s after submission; most placement checks here take
0.3 s) is then never seen: ReFrame assumes COMPLETED, and the job's node list
stays unknown (`job_nodelist` = ['None'] in the report and the results DB), a
failed job (FAILED, NODE_FAIL, TIMEOUT) looks completed. With `-t all`
squeue also reports jobs that ended less than MinJobAge (300 s) ago, with
their final state and node list, so the first poll need not wait either.

Nodes that are down: a job needing more nodes than its partition has usable
pends forever ("Nodes required for job are DOWN, DRAINED or reserved for jobs
in higher priority partitions" is not one of ReFrame's cancel reasons, which
match only `ReqNodeNotAvail`). So
- a job is not submitted when its partition has fewer usable nodes than it
  needs, counting DOWN, DRAINED, FAIL, ... nodes as unusable: the test case
  fails at once with `NodesUnavailableError` naming the nodes, their state,
  since when and Slurm's reason;
- a job that pends for BLOCKED_GRACE seconds while its partition lacks the
  nodes (now also counting nodes that stopped responding, which Slurm marks
  DOWN only after SlurmdTimeout) is cancelled with the same error;
- a job cancelled for pending longer than the test's `max_pending_time` fails
  with Slurm's pending reason instead of a bare CANCELLED.

Hangs after the results: a check may register a predicate telling whether its
program's output is complete (`watch_output`). A job still RUNNING HUNG_GRACE
seconds after its output became complete is cancelled: it hung on its way out
(Debian's MPICH 4.0.2 in MPI_Finalize, docs/cluster.md), and waiting for its time
limit would only cost minutes. `hung_for(job)` tells the check how long it ran on.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from reframe.core.backends import register_scheduler
from reframe.core.exceptions import ConfigError, JobBlockedError, ReframeError
from reframe.core.schedulers.slurm import SqueueJobScheduler, slurm_state_pending
from reframe.utility import osext

NAME = "squeue-all"

#: Seconds a job may pend while its partition lacks usable nodes before it is cancelled.
BLOCKED_GRACE = 30

#: Seconds a job may run on after its output is complete (healthy MPI_Finalize on
#: the emulated cluster: under 2 s, 8 ranks on 2 cores included).
HUNG_GRACE = 30

#: Slurm node states (sinfo %T, lower case) in which a node takes no new job.
UNUSABLE_STATES = ("down", "drain", "fail", "future", "inval", "maint", "powered_down",
                   "powering_down", "power_down", "unknown")

#: sinfo format: node, state, since (time of the reason), reason.
SINFO_FORMAT = "%N|%T|%H|%E"


class NodesUnavailableError(JobBlockedError):
    """The job cannot start: its partition lacks usable nodes (the message names them)."""

    def __init__(self, msg, jobid=None):
        super().__init__(msg, jobid)
        if jobid is None:
            self._message = msg  # never submitted: no "[jobid=None]"


@dataclass(frozen=True)
class SlurmNode:
    name: str
    state: str  # sinfo %T: idle, mixed, down*, drained, idle* (not responding) ...
    since: str = ""
    reason: str = ""

    @property
    def not_responding(self) -> bool:
        return self.state.endswith("*")

    @property
    def down(self) -> bool:
        """In a state Slurm gives no new job to (not responding aside)."""
        base = self.state.rstrip("*~#!%$@^-").lower()
        return any(base.startswith(s) for s in UNUSABLE_STATES)

    def describe(self) -> str:
        state = self.state.rstrip("*~#!%$@^-").upper()
        text = f"{self.name} is {state}"
        if self.not_responding:
            text += " and not responding" if self.down else " but not responding"
        if self.since and self.since.lower() not in ("unknown", "n/a"):
            text += f" since {self.since}"
        if self.reason and self.reason.lower() != "none":
            text += f" ({self.reason})"
        return text


def parse_sinfo(text: str) -> list[SlurmNode]:
    """Nodes from `sinfo -h -N -o SINFO_FORMAT` (a node listed twice counts once)."""
    out: dict[str, SlurmNode] = {}
    for line in text.splitlines():
        parts = line.strip().split("|", 3)
        if len(parts) == 4 and parts[0]:
            out.setdefault(parts[0], SlurmNode(*parts))
    return list(out.values())


def unavailable(nodes: list[SlurmNode], needed: int, partition: str,
                count_not_responding: bool) -> str:
    """Why `needed` nodes cannot be had from `nodes` ('' when they can)."""
    bad = [n for n in nodes if n.down or (count_not_responding and n.not_responding)]
    usable = len(nodes) - len(bad)
    if usable >= needed or not bad:
        return ""
    return (f"needs {needed} node(s), partition {partition} has {usable} usable of "
            f"{len(nodes)}: " + "; ".join(n.describe() for n in bad))


_PARTITION_OPT = re.compile(r"(?:^|\s)(?:-p\s*|--partition[=\s]+)([^\s]+)")
_NODES_OPT = re.compile(r"(?:^|\s)(?:-N\s*|--nodes[=\s]+)(\d+)")


def job_shape(job) -> tuple[str, int]:
    """(Slurm partition or '' for the default one, nodes) of a ReFrame job."""
    opts = " ".join([*job.sched_access, *job.options, *job.cli_options])
    m = _PARTITION_OPT.search(opts)
    nodes = _NODES_OPT.search(opts)
    if nodes:
        needed = int(nodes.group(1))
    elif job.num_tasks and job.num_tasks_per_node:
        needed = max(1, job.num_tasks // job.num_tasks_per_node)
    else:
        needed = 1
    return (m.group(1) if m else ""), needed


def _safely(predicate) -> bool:
    try:
        return bool(predicate())
    except Exception:  # output cut mid-line, a parser surprised: not complete
        return False


class SqueueAllJobScheduler(SqueueJobScheduler):
    # squeue -t all lists a job from the moment sbatch returns: no 2 s first wait.
    SQUEUE_DELAY = 0

    def __init__(self):
        super().__init__()
        self._squeue += " -t all"
        self._reasons: dict[str, str] = {}
        # by id(job): a job is watched before it has a job id
        self._complete: dict[int, tuple] = {}  # -> (predicate, complete since)
        self._hung: dict[int, float] = {}  # -> seconds it ran on after its output

    # -- hangs after the results ------------------------------------------------------------
    def watch_output(self, job, complete) -> None:
        """Cancel the job once `complete()` has been true for HUNG_GRACE seconds."""
        self._complete[id(job)] = (complete, None)

    def hung_for(self, job) -> float | None:
        return self._hung.get(id(job))

    def poll(self, *jobs):
        super().poll(*jobs)
        now = time.time()
        for job in jobs:
            if job is None or id(job) not in self._complete:
                continue
            complete, since = self._complete[id(job)]
            if job.state != "RUNNING" or job.is_cancelling:
                if job.state not in ("PENDING", "CONFIGURING", None):
                    self._complete.pop(id(job))
                continue
            if since is None:
                if _safely(complete):
                    self._complete[id(job)] = (complete, now)
            elif now - since >= HUNG_GRACE:
                self.log(f"job {job.jobid}: output complete {now - since:.0f} s ago and "
                         "still running; cancelling it")
                self._hung[id(job)] = now - since
                self._complete.pop(id(job))
                self.cancel(job)

    # -- nodes --------------------------------------------------------------------------
    def _nodes(self, partition: str) -> tuple[str, list[SlurmNode]]:
        """(partition name, its nodes); the default partition when none is given."""
        if not partition:
            parts = osext.run_command("sinfo -h -o %P", log=False).stdout.split()
            partition = next((p.rstrip("*") for p in parts if p.endswith("*")), "")
        cmd = f"sinfo -h -N -o '{SINFO_FORMAT}'" + (f" -p {partition}" if partition else "")
        return partition or "(default)", parse_sinfo(osext.run_command(cmd, log=False).stdout)

    def _why_unavailable(self, job, count_not_responding: bool) -> str:
        partition, needed = job_shape(job)
        try:
            name, nodes = self._nodes(partition)
        except (OSError, ReframeError):  # sinfo missing or failing: let Slurm decide
            return ""
        return unavailable(nodes, needed, name, count_not_responding)

    def submit(self, job):
        why = self._why_unavailable(job, count_not_responding=False)
        if why:
            self._complete.pop(id(job), None)
            raise NodesUnavailableError(f"not submitted: {why}")
        return super().submit(job)

    # -- pending jobs --------------------------------------------------------------------
    def _cancel_if_blocked(self, jobs, reasons=None):
        for jobid, why in (reasons or {}).items():
            if why:
                self._reasons[jobid] = why[0]
        super()._cancel_if_blocked(jobs, reasons)
        now = time.time()
        stuck = [j for j in jobs if j is not None and not j.is_cancelling
                 and slurm_state_pending(j.state) and now - j.submit_time >= BLOCKED_GRACE]
        for job in stuck:
            why = self._why_unavailable(job, count_not_responding=True)
            if why:
                self.log(f"job {job.jobid} cannot start: {why}; cancelling it")
                self.cancel(job)
                job._exception = NodesUnavailableError(
                    f"cancelled after pending {now - job.submit_time:.0f} s: {why}",
                    job.jobid)

    def _cancel_if_pending_too_long(self, jobs):
        now = time.time()
        for job in jobs:
            if (job is not None and job.max_pending_time and not job.is_cancelling
                    and slurm_state_pending(job.state)
                    and now - job.submit_time >= job.max_pending_time):
                job._exception = JobBlockedError(
                    f"cancelled after pending {now - job.submit_time:.0f} s (max_pending_time "
                    f"{job.max_pending_time:.0f} s); Slurm's reason: "
                    f"{self._reasons.get(job.jobid, 'unknown')}", job.jobid)
        super()._cancel_if_pending_too_long(jobs)


try:
    register_scheduler(NAME)(SqueueAllJobScheduler)
except ConfigError:  # already registered in this process
    pass
