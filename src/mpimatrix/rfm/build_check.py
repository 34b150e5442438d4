"""The ReFrame plugin every check shares, composed of one mixin per concern.

A check is `class X(rfm.RunOnlyRegressionTest, BuildCheck)` (plus perf.py's
CataloguePerformance for a catalogue benchmark), decorated with @rfm.simple_test. It
defines (docs/develop.md walks through an example):

- by the end of the init phase: `ref_key` (required variable, check_references.py); for a
  catalogue benchmark `bench` (required variable, perf.py);
- `parse_output()` and `results_complete()` (contract methods, output.py): read in the
  sanity phase, and while the job runs;
- in a pre-run hook: `executable` and its options (check_launch.py launches it);
- a @sanity_function (using `parsed` and `failure_message()`, check_outcome.py);
- performance: @performance_function's, or for a catalogue benchmark `metric_value()`
  (contract method, perf.py).

Hooks are named for what they do: the checks' own `select_benchmark` (post-init),
`prepare_run` (pre-run). The mixins' hooks, in the order ReFrame runs them (base
classes first, `frame_the_launch` last of the pre-run hooks):

- post-init: `place_ranks` (check_launch.py), then the check's;
- post-setup: (a catalogue check's `record_metric_info`, perf.py), `apply_partition_limits`
  (limits.py), `record_build` (provenance.py), `use_reference_file` (check_references.py);
- pre-run: `watch_for_a_hang_after_results`, `keep_within_hang_budget` (limits.py),
  `launch_with_the_build` (check_launch.py), the check's, `frame_the_launch`;
- pre-sanity: `read_job_outcome` (check_outcome.py).

check_inject.py adds `inject_into_benchmark()`, for the check's pre-run hook.
"""

from __future__ import annotations

from reframe.core.builtins import variable

from .check_inject import FaultInjectionMixin
from .check_launch import LaunchMixin
from .check_outcome import JobOutcomeMixin
from .check_references import ReferencesMixin
from .limits import MachineLimits
from .output import OutputMixin
from .provenance import ProvenanceMixin


# ReFrame runs the hooks of a phase base classes first, in reverse MRO: the last base
# here (MachineLimits) first. Keep the order: apply_partition_limits sets `oversubscribed`,
# which use_reference_file reads.
class BuildCheck(JobOutcomeMixin, FaultInjectionMixin, ReferencesMixin, ProvenanceMixin,
                 LaunchMixin, OutputMixin, MachineLimits):
    #: quick or full (set by the ReFrame mode: -S profile=...)
    profile = variable(str, value="quick")
