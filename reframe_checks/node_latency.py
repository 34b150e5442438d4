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

import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (
    fixture,
    parameter,
    performance_function,
    run_after,
    run_before,
    sanity_function,
    variable,
)

from mpimatrix.placement import INTERNODE, INTRANODE, Placement
from mpimatrix.rfm.build_check import BuildCheck
from mpimatrix.rfm.fixtures import ProbeBuild
from mpimatrix.suites.common import stderr_tail
from mpimatrix.suites.probe.pingpong_output import pingpong_runs


@rfm.simple_test
class NodeLatencyRatioCheck(rfm.RunOnlyRegressionTest, BuildCheck):
    descr = "8 B ping-pong latency, intranode vs internode, same build, same job"
    sourcesdir = None  # nothing to copy: the programs come from the build or a fixture
    valid_prog_environs = ["+mpi"]
    checks_launch = True  # runs on every partition, also in the quick modes
    # One allocation big enough for both runs: 2 nodes x 2 ranks.
    placement = parameter([Placement(2, 2, "intra_vs_inter")], fmt=lambda p: p.name)
    probes = fixture(ProbeBuild, scope="environment")
    executable_opts = ["inter"]
    tags = {"quick", "latency", "internode"}

    #: Internode latency must be at least this many times intranode (0 disables).
    min_ratio = variable(float, value=5.0)

    @run_after("init")
    def set_ref_key_and_time_limit(self):
        self.ref_key = "pingpong@intra_vs_inter"
        self.time_limit = "5m"  # two short ping-pongs; a hang costs little

    def parse_output(self):
        return pingpong_runs(self.stdout_text())

    def results_complete(self):
        return {"intra", "inter"} <= set(self.parsed)

    @run_before("run")
    def prepare_two_runs(self):
        # The allocation holds 2 nodes x 2 ranks: run intranode first (prerun),
        # then internode as the main command, so that the network counters
        # bracket the internode run only.
        self.executable = shlex.quote(self.probes.path("mpi_pingpong"))
        self.prerun_cmds = [*self.prerun_cmds,
                            f"{self.launch_cmd(INTRANODE)} {self.executable} intra"]

    @property
    def main_placement(self):
        return INTERNODE

    @sanity_function
    def validate(self):
        runs = self.parsed
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
        if errs and stderr_tail(self.stderr_text()):
            errs.append(stderr_tail(self.stderr_text()))
        return sn.assert_true(not errs, msg=self.failure_message(errs))

    def _value(self, label: str, key: str) -> float:
        run = self.parsed.get(label, {})
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
