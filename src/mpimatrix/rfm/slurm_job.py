"""What a check learns from a Slurm job: how it ended, where it ran, what crossed the NIC.

Network proof: on partitions with extras net_counters=True the job script
snapshots the byte counters of the first node's interfaces (all but lo, from
/proc/net/dev, which is per network namespace; /sys/class/net is not, without
remounting /sys) right before and after the benchmark's launch. Internode
traffic must cross the first node's interface; intranode traffic (shared
memory, or TCP to a local address, which the kernel routes through lo) does
not.
"""

from __future__ import annotations

import os
import re

# Slurm job states after which a test cannot have produced trustworthy output.
BAD_END_STATES = {"NODE_FAIL", "TIMEOUT", "CANCELLED", "BOOT_FAIL", "OUT_OF_MEMORY",
                  "DEADLINE", "PREEMPTED"}

_NETDEV = re.compile(r"^MPIMATRIX netdev when=(\w+) host=(\S+) rx=(\d+) tx=(\d+)", re.M)
_SLURM_ERR = re.compile(r"^.*(?:srun: error:|slurmstepd\S*: error:|CANCELLED|"
                        r"DUE TO NODE FAILURE|Node failure).*$", re.M)
# What srun/slurmstepd print when a node of the job died or became unreachable.
# The job can still end COMPLETED (the batch script went on), but its output
# cannot be trusted.
_NODE_FAILURE = re.compile(r"^.*(?:Node failure on|DUE TO NODE FAILURE|Task launch for "
                           r"StepId=\S+ failed on node|Application launch failed).*$", re.M)


def net_snapshot_cmd(when: str) -> str:
    """Shell line printing the first node's non-loopback rx/tx byte totals."""
    return (
        f"awk -v when={when} -v host=\"$(hostname)\" 'NR > 2 {{ sub(/^ +/, \"\"); "
        "split($0, a, \":\"); if (a[1] != \"lo\") { split(a[2], f, \" \"); "
        "rx += f[1]; tx += f[9] } } END { printf \"MPIMATRIX netdev when=%s host=%s "
        "rx=%.0f tx=%.0f\\n\", when, host, rx, tx }' /proc/net/dev"
    )


def net_bytes(stdout: str) -> int:
    """rx+tx bytes between the 'before' and 'after' snapshots (-1 if absent)."""
    snaps = {m.group(1): (int(m.group(3)), int(m.group(4))) for m in _NETDEV.finditer(stdout)}
    if "before" not in snaps or "after" not in snaps:
        return -1
    (rx0, tx0), (rx1, tx1) = snaps["before"], snaps["after"]
    return (rx1 - rx0) + (tx1 - tx0)


_METER = re.compile(r"^MPIMATRIX meter host=(\S+) kernel=(\S+) cores=(\d+) wall=([\d.]+) "
                    r"busy=(-?[\d.]+) own=([\d.]+)(?: job=([\d.]+))?", re.M)


def kernel_id() -> str:
    """This machine's kernel as the meter names it: boot time and PID namespace."""
    with open("/proc/stat") as fp:
        btime = next((line.split()[1] for line in fp if line.startswith("btime ")), "0")
    return re.sub(r"[ \[\]:]", "-", f"{btime}:{os.readlink('/proc/self/ns/pid')}")


def node_load(stdout: str, here: str = "") -> dict[str, float]:
    """What other programs used on the job's nodes while the benchmark ran, from the
    meter lines of each node's first rank (mpimatrix_inject.c, MPIMATRIX_METER=1):
    {"wall": s, "foreign_cpu": CPU-s, "capacity_cpu": CPU-s, "nodes": n, "wall_here": s
    the benchmark ran on kernel `here` (this machine's: the emulated cluster's)}, or {}.
    Nodes that share a kernel (the emulated cluster's) share one /proc/stat and see each
    other's processes: their busy time and the job's processes count once, against at
    least the CPU time of all their ranks."""
    kernels: dict[str, dict[str, float]] = {}
    nodes = 0
    for m in _METER.finditer(stdout):
        nodes += 1
        cores, wall, busy, own = int(m[3]), float(m[4]), float(m[5]), float(m[6])
        k = kernels.setdefault(m[2], {"cores": cores, "wall": 0.0, "busy": 0.0, "ranks": 0.0,
                                      "job": 0.0})
        k["wall"], k["busy"] = max(k["wall"], wall), max(k["busy"], busy)
        k["ranks"] += own
        k["job"] = max(k["job"], float(m[7] or 0))
    if not kernels:
        return {}
    return {"wall": max(k["wall"] for k in kernels.values()),
            "foreign_cpu": sum(max(k["busy"] - max(k["ranks"], k["job"]), 0.0)
                               for k in kernels.values()),
            "capacity_cpu": sum(k["wall"] * k["cores"] for k in kernels.values()),
            "nodes": float(nodes), "wall_here": kernels.get(here, {}).get("wall", 0.0)}


def bad_end(state: str | None) -> bool:
    return bool(state) and any(s in BAD_END_STATES for s in str(state).split(","))


def node_failure(stderr: str) -> bool:
    return bool(_NODE_FAILURE.search(stderr))


# A TIMEOUT after the program had printed all of its results: it hung on its way
# out. Seen with Debian's MPICH 4.0.2 (ch4:ucx, UCX 1.13 TCP) in 4-10% of
# internode runs, under srun and under Hydra alike: MPI_Finalize disconnects its
# UCX endpoints and only then enters the PMI barrier, so a rank blocked in that
# barrier stops progressing the TCP endpoint its peer is still closing.
HUNG_AFTER_RESULTS = "the program had printed all its results, then hung"
_IN_FINALIZE = " (in MPI_Finalize: a hang of the MPI library, not of the benchmark)"


def hung_after_results(state: str, results_complete: bool, hung_for: float | None) -> bool:
    """The program printed all its results, then did not end: cancelled early by the
    scheduler (`hung_for`) or at its time limit."""
    return hung_for is not None or (results_complete and "TIMEOUT" in str(state))


def failure_reason(jobid, state: str, nodes: list[str], stderr: str,
                   results_complete: bool = False, hung_for: float | None = None) -> str:
    """e.g. 'Slurm job 25 ended NODE_FAIL on node[1-2]: srun: error: Node failure on node2'.
    `hung_for`: seconds the job ran on after its results were complete, before the
    scheduler cancelled it (rfm/squeue_all.py)."""
    where = ",".join(nodes) if nodes and nodes != ["None"] else "unknown nodes"
    errs = []
    for line in _SLURM_ERR.findall(stderr):
        line = line.strip()
        if line not in errs:
            errs.append(line)
    detail = (": " + " / ".join(errs[:3])) if errs else ""
    hung = ""
    if hung_for is not None:
        hung = f"; {HUNG_AFTER_RESULTS} and was cancelled {hung_for:.0f} s later{_IN_FINALIZE}"
    elif hung_after_results(state, results_complete, hung_for):
        hung = f"; {HUNG_AFTER_RESULTS} until the time limit{_IN_FINALIZE}"
    return f"Slurm job {jobid} ended {state} on {where}{hung}{detail}"
