"""Performance variables from a catalogue entry (IMB, OSU): the check's `bench`
has `metrics`, the check's `metric_value(metric)` reads one from its parsed output."""

from __future__ import annotations

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before


class CataloguePerformance(rfm.RegressionTestPlugin):
    @run_after("setup")
    def _record_metric_info(self):
        self.record_metrics(self.bench.metrics)

    @run_before("performance")
    def _perf_variables(self):
        for m in self.bench.metrics:
            self.perf_variables[m.name] = sn.make_performance_function(
                self._checked_metric_value, m.unit, m)

    def _checked_metric_value(self, metric):
        value = self.metric_value(metric)
        if value is None:
            raise ValueError(f"no {metric.name} in the output of {self.bench.binary}")
        return value
