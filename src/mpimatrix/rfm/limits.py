"""What a check does about the machine's limits: oversubscribed layouts, a per-build
hang budget, jobs that would pend too long, and which partitions run benchmarks.

A check defines nothing here; a check of the launch itself sets `checks_launch = True`
(class body). The modes set the variables (-S). Uses `build` (provenance.py),
`main_placement` (check_launch.py), `results_complete` and `forget_parsed_output`
(output.py). Hooks (the first of BuildCheck's in their phases): post-setup
`apply_partition_limits` (oversubscribed, the partition's max_pending_time); pre-run
`watch_for_a_hang_after_results` (the scheduler's output watch, squeue_all.py) and
`keep_within_hang_budget` (the time limit the build's hang budget leaves).
`limit_partitions()` is for `place_ranks` (check_launch.py, post-init)."""

from __future__ import annotations

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, run_before, variable

from . import hang_budget as budget
from .placements import one_per_node_set, oversubscribes, oversubscribing_partitions


class MachineLimits(rfm.RegressionTestPlugin):
    #: More busy ranks than the cores the nodes really have (partition extras cores,
    #: shared_cores): reported, never checked against references; tagged
    #: `oversubscribed` (the quick modes leave such cases out).
    oversubscribed = variable(bool, value=False)

    #: What this build's hangs may cost the session (rfm/hang_budget.py): "3m",
    #: "1h30m", "0" (none); "" = hang_budget.DEFAULT.
    hang_budget = variable(str, value="")

    #: Also run on a partition that only launches differently on the same nodes as
    #: another (extras same_nodes_as); the quick modes set it false (checks of the
    #: launch itself, checks_launch, run on every partition anyway).
    every_launcher = variable(typ.Bool, value=True)

    #: Whether this check is about how ranks are launched (it then runs on every
    #: partition, whatever every_launcher says).
    checks_launch = False

    def limit_partitions(self, hosting: list[str] | None) -> list[str] | None:
        """The hosting partitions this case runs on (None: not in a ReFrame session)."""
        if hosting is not None and not (self.every_launcher or self.checks_launch):
            hosting = one_per_node_set(hosting)
        if oversubscribing_partitions(self.main_placement):
            self.tags.add("oversubscribed")
        return hosting

    @run_after("setup")
    def apply_partition_limits(self):
        part = self.current_partition
        self.oversubscribed = oversubscribes(part, self.main_placement)
        pending = part.extras.get("max_pending_time")
        if pending and self.max_pending_time is None:
            self.max_pending_time = pending  # e.g. the emulated cluster: minutes, not days

    @run_before("run")
    def watch_for_a_hang_after_results(self):
        watch = getattr(self.job.scheduler, "watch_output", None)  # rfm/squeue_all.py
        if watch is not None:
            watch(self.job, self.output_complete_now)

    def output_complete_now(self) -> bool:
        """results_complete() on the output so far (not the parse cached for sanity)."""
        self.forget_parsed_output()
        try:
            return self.results_complete()
        finally:
            self.forget_parsed_output()

    @run_before("run")
    def keep_within_hang_budget(self):
        local = self.current_partition.scheduler.registered_name == "local"
        self.time_limit = budget.time_limit(self.build.name, self.hang_budget,
                                            self.time_limit, unit=1 if local else 60)
        budget.watch(self.build.name, self.case_label, self.job)

    @property
    def case_label(self) -> str:
        return f"{self.display_name} @{self.current_partition.fullname}"
