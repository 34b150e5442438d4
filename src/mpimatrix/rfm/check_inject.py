"""A known slowdown or hang injected into one build's benchmark ranks (inject_spec.py reads
MPIMATRIX_INJECT), and the node meter, both through the injector library (a PMPI
library the ProbeBuild fixture compiles with the build's wrapper).

A benchmark check calls `inject_into_benchmark(path of the injector)` in its pre-run
hook (after `launch_with_the_build` has chosen the launcher, whose options it extends).
The injected spec is recorded in `injected`; the meter's readings become `node_load`
(check_outcome.py).
"""

from __future__ import annotations

import reframe as rfm
from reframe.core.builtins import variable
from reframe.core.exceptions import ReframeError

from ..shell import quote_argv
from .inject_spec import InjectError, injection_for
from .launchers import rank_env_options


class FaultInjectionMixin(rfm.RegressionTestPlugin):
    #: The regression injected into this run (MPIMATRIX_INJECT), "" for none.
    injected = variable(str, value="")

    def inject_into_benchmark(self, injector: str, meter: bool = True) -> None:
        """Preload the injector library into the benchmark's ranks (the launcher passes
        it to the ranks only): its regression when MPIMATRIX_INJECT names this build
        (and this test, where it names tests),
        and its node meter on batch partitions (node_load; `meter` False for a benchmark
        that times MPI_Init itself, where the meter's barrier would count)."""
        try:
            spec = injection_for(self.build.name, test=self.display_name)
        except InjectError as err:
            raise ReframeError(str(err)) from None
        env = {}
        if spec:
            self.injected = spec
            env["MPIMATRIX_INJECT_SPEC"] = spec
        if meter and self.current_partition.scheduler.registered_name != "local":
            env["MPIMATRIX_METER"] = "1"
        if env:
            env = {"LD_PRELOAD": injector, **env}
            self.job.launcher.options += quote_argv(
                rank_env_options(self.build, self.launch_method, env))
