"""Intranode vs internode latency of one build, in one job (multi-node partitions).

The job takes two nodes with two ranks each and runs the same ping-pong twice:
both ranks on the first node (shared memory), then one rank per node (the
network). Reported: 8 B latency both ways, their ratio, 1 MiB bandwidth, and
the bytes that crossed the first node's network interface during the
internode run. Sanity: the internode run moved at least its payload through
the NIC (the traffic really left the node; with a shared boot_id UCX would
silently use shared memory between emulated nodes), and internode latency is
at least `min_ratio` times intranode.
"""

import re

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (
    parameter,
    performance_function,
    run_after,
    run_before,
    sanity_function,
    variable,
)

from mpimatrix.checks_base import BuildCheck
from mpimatrix.launch import BuildLauncher
from mpimatrix.placement import INTERNODE, INTRANODE, Layout

_LINE = re.compile(r"^MPIMATRIX pingpong label=(\w+) (.*)$", re.M)


def _runs(text: str) -> dict[str, dict[str, str]]:
    return {m.group(1): dict(kv.split("=", 1) for kv in m.group(2).split())
            for m in _LINE.finditer(text)}


@rfm.simple_test
class NodeLatencyRatioCheck(rfm.RegressionTest, BuildCheck):
    descr = "8 B ping-pong latency, intranode vs internode, same build, same job"
    valid_prog_environs = ["+mpi"]
    # One allocation big enough for both runs: 2 nodes x 2 ranks.
    placement = parameter([Layout(2, 2, "intra_vs_inter")], fmt=lambda lay: lay.name)
    build_system = "SingleSource"
    sourcepath = "mpi_pingpong.c"
    executable = "./mpi_pingpong"
    executable_opts = ["inter"]
    tags = {"quick", "latency", "internode"}

    #: Internode latency must be at least this many times intranode (0 disables).
    min_ratio = variable(float, value=5.0)

    @run_after("init")
    def _key(self):
        self.ref_key = "pingpong@intra_vs_inter"
        self.time_limit = "5m"  # two short ping-pongs; a hang costs little

    def results_complete(self, stdout):
        return {"intra", "inter"} <= set(_runs(stdout))

    @run_after("setup")
    def _exe_name(self):
        self.build_system.executable = "mpi_pingpong"

    @run_before("run")
    def _two_runs(self):
        # BuildCheck set the launcher for the whole allocation; run intranode
        # first (prerun), then internode as the main command, so that the
        # network counters bracket the internode run only.
        intra = self.launch_argv(INTRANODE)
        self.prerun_cmds = [*self.prerun_cmds, " ".join([*intra, self.executable, "intra"])]
        self.job.launcher = BuildLauncher(self.launch_argv(INTERNODE))

    def _run(self, label: str) -> dict[str, str]:
        return _runs(self.stdout_text()).get(label, {})

    @sanity_function
    def validate(self):
        runs = _runs(self.stdout_text())
        errs = []
        for label in ("intra", "inter"):
            if label not in runs:
                errs.append(f"no {label}node result (the {label}node run failed)")
        if not errs:
            intra_hosts = runs["intra"]["hosts"].split(",")
            inter_hosts = runs["inter"]["hosts"].split(",")
            self.hosts = sorted(set(intra_hosts + inter_hosts))
            if len(set(intra_hosts)) != 1:
                errs.append(f"intranode run spread over {intra_hosts}")
            if len(set(inter_hosts)) != 2:
                errs.append(f"internode run stayed on {inter_hosts}")
            payload = int(runs["inter"]["payload_bytes"])
            if 0 <= self.net_bytes < payload:
                errs.append(f"only {self.net_bytes} B crossed {inter_hosts[0]}'s network "
                            f"interface while the internode run exchanged {payload} B: the "
                            "traffic did not leave the node (shared memory between "
                            "emulated nodes?)")
            ratio = float(runs["inter"]["lat_best_us"]) / float(runs["intra"]["lat_best_us"])
            if ratio < self.min_ratio:
                errs.append(f"internode 8 B latency {runs['inter']['lat_best_us']} us is only "
                            f"{ratio:.1f}x intranode {runs['intra']['lat_best_us']} us "
                            f"(need >= {self.min_ratio:g}x)")
        if errs:
            tail = self.stderr_text().strip().splitlines()[-3:]
            if tail:
                errs.append("stderr: " + " / ".join(tail))
        return sn.assert_true(not errs, msg=f"{self.build.name}: " + "; ".join(errs))

    def _value(self, label: str, key: str) -> float:
        run = self._run(label)
        if key not in run:
            raise ValueError(f"no {key} for the {label}node run")
        return float(run[key])

    @performance_function("us")
    def latency_intra_8B(self):
        return self._value("intra", "lat_best_us")

    @performance_function("us")
    def latency_inter_8B(self):
        return self._value("inter", "lat_best_us")

    @performance_function("x")
    def latency_ratio(self):
        return self._value("inter", "lat_best_us") / self._value("intra", "lat_best_us")

    @performance_function("us")
    def latency_intra_8B_median(self):
        return self._value("intra", "lat_median_us")

    @performance_function("us")
    def latency_inter_8B_median(self):
        return self._value("inter", "lat_median_us")

    @performance_function("MB/s")
    def bandwidth_intra_1MiB(self):
        return self._value("intra", "bw_best_MBps")

    @performance_function("MB/s")
    def bandwidth_inter_1MiB(self):
        return self._value("inter", "bw_best_MBps")

    @performance_function("MB")
    def nic_MB_inter(self):
        if self.net_bytes < 0:
            raise ValueError("network counters not measured on this partition")
        return self.net_bytes / 1e6
