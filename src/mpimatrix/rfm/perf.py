"""Performance variables from a catalogue entry (IMB, OSU: suites/*/catalogue.py).

A catalogue check (reframe_checks/imb.py, osu.py) defines:

- `bench` (required variable), by the end of the init phase: its catalogue entry, whose
  `metrics` become the performance variables and `binary` names the program;
- `metric_value(metric)` (contract method), for the performance phase: the metric's
  value in the parsed output (`parsed`, output.py), None when the output lacks it.

Hooks: post-setup `record_metric_info` (the metrics' units and sizes into `perf_info`,
check_references.py); pre-performance `set_perf_variables` (one performance variable per
metric; a missing value fails the test case: "no <metric> in the output of <binary>").
"""

from __future__ import annotations

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before, variable

from .output import contract_method


class CataloguePerformance(rfm.RegressionTestPlugin):
    #: The catalogue entry of this test case's benchmark (not logged: its name is).
    bench = variable(object, loggable=False)

    @contract_method
    def metric_value(self, metric):
        """The metric's value in the parsed output, None when it lacks it."""

    @run_after("setup")
    def record_metric_info(self):
        self.record_metrics(self.bench.metrics)

    @run_before("performance")
    def set_perf_variables(self):
        for m in self.bench.metrics:
            self.perf_variables[m.name] = sn.make_performance_function(
                self._checked_metric_value, m.unit, m)

    def _checked_metric_value(self, metric):
        value = self.metric_value(metric)
        if value is None:
            raise ValueError(f"no {metric.name} in the output of {self.bench.binary}")
        return value
