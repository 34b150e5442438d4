"""How a test case's job ended, and where it ran: the check's side of slurm_job.py.

A check defines `results_complete()` (output.py); its sanity function may use:

- `failure_message(problems)`: '<build> <placement>: <a rank's crash>; <problems>';
- `probed_host_problems()`: the hosts `hostname_probe_cmd()` (check_launch.py) wrote,
  checked against the placement, into `hosts`;
- `skip_saying(msg)`: ReFrame's skip, with `msg` kept in `skip_reason` for the run record,
  the summary and the report;
- `expected_failure`: a reason set before the sanity phase (e.g. a known issue in the
  check's pre-run hook) turns the failure into an XFAIL where the check says so
  (osu.py's @rfm.xfail).

Pre-sanity hook `read_job_outcome`: `hosts` (the job's nodes, batch partitions),
`net_bytes`, `node_load`; a job that ended badly (Slurm's state, a node failure) fails
here with a clear reason, as an expected failure when it is a known fault of the build
(builds/known_faults.py: the results were complete, then the job hung).
"""

from __future__ import annotations

import os

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_before, variable
from reframe.core.exceptions import ExpectedFailureError, SanityError

from ..builds.known_faults import HANG_AFTER_RESULTS, known_fault
from ..placement import rank_host_problems
from ..suites.crash import crash_report
from . import hang_budget as budget
from . import slurm_job


class JobOutcomeMixin(rfm.RegressionTestPlugin):
    #: Hosts the job ran on, as reported by the job or the program.
    hosts = variable(typ.List[str], value=[])

    #: What other programs used on the job's nodes while the benchmark ran
    #: (slurm_job.node_load; batch partitions only, {} elsewhere).
    node_load = variable(typ.Dict[str, float], value={})

    #: Why this run is expected to fail (a known fault), or why it failed as expected
    #: ("" = neither).
    expected_failure = variable(str, value="")

    #: Why the case was skipped ("" = it was not): ReFrame's report keeps no skip message.
    skip_reason = variable(str, value="")

    #: Bytes through the first node's network interfaces (all but lo) while the
    #: program ran; -1 = not measured (only partitions with extras net_counters).
    net_bytes = variable(int, value=-1)

    def skip_saying(self, msg: str):
        """ReFrame's skip, with `msg` kept in `skip_reason` (an override of `skip` would
        not be reached: RegressionTest's comes first in the checks' MRO)."""
        self.skip_reason = msg
        self.skip(msg)

    @run_before("sanity")
    def read_job_outcome(self):
        """Where the job ran, what crossed the NIC, and a clear reason if Slurm killed it."""
        nodes = [n for n in (self.job.nodelist or []) if n and n != "None"]
        if not self.hosts and self.current_partition.scheduler.registered_name != "local":
            self.hosts = nodes
        self.net_bytes = slurm_job.net_bytes(self.stdout_text())
        self.node_load = slurm_job.node_load(self.stdout_text(), slurm_job.kernel_id())
        stderr = self.stderr_text()
        if slurm_job.bad_end(self.job.state) or slurm_job.node_failure(stderr):
            hung_for = getattr(self.job.scheduler, "hung_for", lambda job: None)(self.job)
            if hung_for is not None:
                budget.record_hang(self.build.name, self.case_label, hung_for)
            complete = self.results_complete()
            problems = [slurm_job.failure_reason(self.job.jobid, self.job.state, nodes,
                                                   stderr, complete, hung_for)]
            fault = (slurm_job.hung_after_results(self.job.state, complete, hung_for)
                     and known_fault(self.build, self.placement.nodes, HANG_AFTER_RESULTS))
            if fault:
                # ReFrame reports an ExpectedFailureError from any stage as XFAIL, and
                # keeps no reason of an XFAIL in its report: the variable keeps it
                self.expected_failure = self.failure_message(
                    [*problems, f"known fault of {self.build.name}: {fault.reason}"])
                raise ExpectedFailureError(self.expected_failure)
            raise SanityError(self.failure_message(problems))

    def failure_message(self, problems: list[str]) -> str:
        """'<build> <placement>: <a rank's crash, if any>; <problems>': the cause first
        ('' without problems)."""
        if not problems:
            return ""
        crash = crash_report(self.stderr_text() + "\n" + self.stdout_text())
        return f"{self.build.name} {self.placement.name}: " + "; ".join(
            [crash, *problems] if crash else problems)

    def probed_host_problems(self) -> list[str]:
        """Check the probe's hosts against the placement; record them in `hosts`."""
        try:
            with open(os.path.join(self.stagedir, self.HOSTS_FILE), errors="replace") as fp:
                hosts = [h.strip() for h in fp if h.strip()]
        except OSError:
            hosts = []
        if hosts:
            self.hosts = sorted(set(hosts))
        return rank_host_problems(hosts, self.placement)
