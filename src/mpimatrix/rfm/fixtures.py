"""ReFrame fixtures: what is built once per build (partition + environment) and
shared by every test case of that build."""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

import reframe as rfm
from reframe.core.builtins import run_after, run_before, variable
from reframe.core.exceptions import BuildError as ReframeBuildError

from ..builds.osu_install import (
    finish_osu_build,
    install_record,
    plan_osu_build,
    source_digest,
)
from ..builds.record import BuildRecord
from ..paths import project_root

OSU_SOURCE_ENV = "MPIMATRIX_OSU_SOURCE"


def _build_of(test) -> BuildRecord:
    env = test.current_environ
    return BuildRecord.from_dict(env.extras["build"], origin=f"environment {env.name}")


class _Fixture(rfm.CompileOnlyRegressionTest):
    #: The modes set `profile` on every test (-S profile=...): known, unused here.
    profile = variable(str, value="quick")


class ProbeBuild(_Fixture):
    """The placement and ping-pong probes and the regression injector (a PMPI
    library), compiled with the build's own wrapper."""

    descr = "MPI probes and regression injector compiled with the build's wrapper"
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]
    sourcesdir = str(project_root() / "reframe_checks" / "src")
    build_system = "CustomBuild"
    PROBES = ("mpi_placement", "mpi_pingpong")
    INJECTOR = "libmpimatrix_inject.so"

    @run_before("compile")
    def _commands(self):
        cc = self.current_environ.cc
        self.build_system.commands = [
            *(f"{cc} {p}.c -o {p}" for p in self.PROBES),
            f"{cc} -shared -fPIC -O2 mpimatrix_inject.c -o {self.INJECTOR}"]

    def path(self, probe: str) -> str:
        return os.path.join(self.stagedir, probe)


class OsuFromSource(_Fixture):
    """OSU for a build without OSU, from the source MPIMATRIX_OSU_SOURCE names,
    installed into the cache like `mpimatrix osu-build` does (and reused from there
    while the source is the same). A build that has OSU needs nothing built."""

    descr = "OSU Micro-Benchmarks for the build (from MPIMATRIX_OSU_SOURCE when needed)"
    valid_systems = ["*"]
    valid_prog_environs = ["+osu"]
    build_system = "CustomBuild"
    osu_source = variable(str, value=os.environ.get(OSU_SOURCE_ENV, ""))
    #: where the OSU binaries of this build are (after the fixture ran)
    bin_dir = variable(str, value="")
    osu_version = variable(str, value="")
    #: what the fixture did: "built", "reused" (the cache's install of this source) or
    #: "present" (the build has its own OSU)
    action = variable(str, value="")

    sourcesdir = None

    @run_before("compile")
    def _plan_build(self):
        self._osu_plan = None
        build = _build_of(self)
        osu = build.benchmarks.get("osu")
        cached = install_record(build.name)
        source = Path(self.osu_source) if self.osu_source else None
        if osu is not None and (source is None or osu.provenance == "spack"):
            self.bin_dir, self.osu_version, self.action = osu.bin_dir, osu.version, "present"
        elif source is None:
            raise ReframeBuildError(f"{build.name} has no OSU and {OSU_SOURCE_ENV} is unset")
        elif cached and cached.get("source_sha256") == source_digest(source):
            self.bin_dir, self.osu_version = cached["bin_dir"], str(cached.get("version", ""))
            self.action = "reused"
        else:
            plan = self._osu_plan = plan_osu_build(build, source, jobs=os.cpu_count())
            self._t0 = time.time()
            self.action = "built"
            self.build_system.commands = [
                f"bash {shlex.quote(str(plan.script))} > {shlex.quote(str(plan.log))} 2>&1"]
            return
        self.build_system.commands = ["true"]

    @run_after("compile")
    def _finish(self):
        if self._osu_plan is not None:
            install = finish_osu_build(self._osu_plan, time.time() - self._t0)
            self.bin_dir, self.osu_version = install.bin_dir, install.version
