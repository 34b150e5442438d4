"""Which build a test case ran on, recorded with every result.

A check defines nothing: the build comes from the programming environment, whose
extras hold its build record (site/config.py writes one environment per build).

- `build` (property, from the setup phase on: it needs the current environment): the
  BuildRecord, for the check's own commands (its benchmark installs, its version, ...);
- post-setup hook `record_build`: the build_* variables and lock_sha256, which go into
  the run report and the stored session (the report's families, `mpimatrix changes`).
"""

from __future__ import annotations

import reframe as rfm
from reframe.core.builtins import run_after, variable

from ..builds.record import BuildRecord


class ProvenanceMixin(rfm.RegressionTestPlugin):
    #: Provenance of the build, recorded with every result.
    build_name = variable(str, value="")
    build_hash = variable(str, value="")
    build_spec = variable(str, value="")
    build_provenance = variable(str, value="")
    #: The modules the job loads, space-separated (a build given as Lmod modules).
    build_modules = variable(str, value="")
    #: The build's axes (its record's fields), for the report's families side by side.
    build_family = variable(str, value="")
    build_version = variable(str, value="")
    build_fabric = variable(str, value="")
    build_compiler = variable(str, value="")
    lock_sha256 = variable(str, value="")

    @property
    def build(self) -> BuildRecord:
        rec = getattr(self, "_build_record", None)
        if rec is None:
            rec = self._build_record = BuildRecord.from_dict(
                self.current_environ.extras["build"],
                origin=f"environment {self.current_environ.name}")
        return rec

    @run_after("setup")
    def record_build(self):
        b = self.build
        self.build_name = b.name
        self.build_hash = b.dag_hash
        self.build_spec = b.spec
        self.build_provenance = b.provenance
        self.build_modules = " ".join(b.modules)
        self.build_family, self.build_version = b.family, b.version
        self.build_fabric, self.build_compiler = b.fabric, b.compiler
        self.lock_sha256 = b.lock_sha256
