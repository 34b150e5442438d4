"""Which reference values a test case's performance is compared with.

A check defines, by the end of the init phase:

- `ref_key` (required variable): the key of the test case in the reference file,
  `<benchmark>@<placement>` (e.g. `allreduce@1x4`); "" for a check that measures
  nothing to compare. A required ReFrame variable: unset, the reference lookup fails
  with "required variable 'ref_key' has not been set" and the run report says
  "<undefined>" (tests/test_check_contract.py checks each check sets it at init).

and, for its performance variables (before the performance phase; perf.py does it for a
catalogue check), `record_metrics(metrics)`: quantity, unit, size and better direction
of each, into `perf_info` (run record: the report and the gate read it).

Post-setup hook `use_reference_file`: the system's reference file, in ReFrame's external
reference format, indexed by partition, environment and `ref_key` (reference_file.py);
none for an oversubscribed case (MachineLimits sets `oversubscribed` before).
"""

from __future__ import annotations

import os
from pathlib import Path

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, variable
from reframe.core.exceptions import ReframeError
from reframe.core.runtime import runtime

from ..paths import references_dir
from ..reference_file import ReferenceFileError, checked_once


class ReferencesMixin(rfm.RegressionTestPlugin):
    #: Key of this test case in the reference file (benchmark@placement).
    ref_key = variable(str)

    #: Per performance variable: quantity, unit, size in bytes, better (higher/lower).
    perf_info = variable(typ.Dict[str, typ.Dict[str, str]], value={})

    def record_metrics(self, metrics) -> None:
        """Declare the catalogue's metrics as data of the run record."""
        self.perf_info = {m.name: m.info() for m in metrics}

    @run_after("setup")
    def use_reference_file(self):
        # One file per system, in ReFrame's external reference format, under
        # ReFrame's reference prefix (RFM_REFERENCE_PREFIX or --reference-prefix:
        # ReFrame 4.10.4's configuration schema has no general/reference_prefix;
        # `mpimatrix run` sets it to results/references). Without a prefix, the
        # project's results/references. A system, build or benchmark without an
        # entry runs and reports without a check.
        if self.oversubscribed:
            return  # measures the OS scheduler: reported, never gated
        name = f"{self.current_system.name}.yaml"
        prefix = runtime().get_option("general/0/reference_prefix")
        path = os.path.join(prefix or references_dir(), name)
        if os.path.isfile(path):
            try:
                checked_once(Path(path))
            except ReferenceFileError as err:
                raise ReframeError(str(err)) from None
            self.reference = {"$ref": name if prefix else path}
