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

from ..builds.bench_install import (
    PROVENANCE,
    BenchBuildError,
    current_record,
    failure_text,
    finish_build,
    plan_build,
)
from ..builds.bench_sources import SOURCE_ENVS, configured_sources
from ..builds.bench_suites import IMB, NPB, OSU
from ..builds.record import BuildRecord
from ..paths import project_root

OSU_SOURCE_ENV = SOURCE_ENVS["osu"]


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


class BenchFromSource(_Fixture):
    """A benchmark suite for a build without one of its own, built from the configured
    source (bench_sources.py) into the project cache like `mpimatrix bench-build`
    does, and reused from there while the source is the same. A build whose suite
    comes from elsewhere (Spack, the Intel MPI wheel) needs nothing built. A failed
    build fails this fixture, so that only this build's cases of the suite are
    skipped, with the reason here."""

    valid_systems = ["*"]
    build_system = "CustomBuild"
    sourcesdir = None
    suite = OSU
    #: where the programs of this build are (after the fixture ran)
    bin_dir = variable(str, value="")
    bench_version = variable(str, value="")
    #: what the fixture did: "built", "reused" (the cache's install of this source) or
    #: "present" (the build has the suite from elsewhere)
    action = variable(str, value="")
    source = variable(str, value="")

    @run_before("compile")
    def _plan_build(self):
        self._plan = None
        build, suite = _build_of(self), self.suite
        have = build.benchmarks.get(suite.name)
        source = configured_sources().get(suite.name)
        self.build_system.commands = ["true"]
        if have is not None and (source is None or have.provenance != PROVENANCE):
            self.bin_dir, self.bench_version, self.action = (have.bin_dir, have.version,
                                                             "present")
            return
        if source is None:
            raise ReframeBuildError(f"{build.name} has no {suite.label} and no source of it "
                                    f"is configured ({SOURCE_ENVS[suite.name]} or "
                                    "MPIMATRIX_SOURCES)")
        self.source = str(source)
        cached = current_record(suite, build.name, source)
        if cached:
            self.bin_dir, self.bench_version = cached["bin_dir"], str(cached.get("version", ""))
            self.action = "reused"
            return
        if self.is_dry_run():
            self.action = "planned"  # nothing staged, nothing removed
            return
        try:
            self._plan = plan_build(suite, build, source, jobs=os.cpu_count())
        except (BenchBuildError, OSError) as err:
            raise ReframeBuildError(f"{suite.label} for {build.name}: {err}") from None
        self._t0, self.action = time.time(), "built"
        q = shlex.quote
        # The script's failure is not the build job's (ReFrame would only say "exit code
        # 2"): _finish reports it with the log's last lines.
        log = q(str(self._plan.log))
        self.build_system.commands = [
            f"rc=0; bash {q(str(self._plan.script))} > {log} 2>&1 || rc=$?; "
            f"echo $rc > {log}.rc"]

    @run_after("compile")
    def _finish(self):
        plan = self._plan
        if plan is None:
            return
        rc_file = Path(f"{plan.log}.rc")
        rc = int(rc_file.read_text().strip() or 1) if rc_file.exists() else 1
        rc_file.unlink(missing_ok=True)
        try:
            if rc != 0:
                raise BenchBuildError(failure_text(plan, rc, lines=8))
            install = finish_build(plan, time.time() - self._t0)
        except BenchBuildError as err:
            raise ReframeBuildError(str(err)) from None
        self.bin_dir, self.bench_version = install.bin_dir, install.version


class OsuFromSource(BenchFromSource):
    descr = "OSU Micro-Benchmarks for the build (built from a source when it has none)"
    valid_prog_environs = ["+osu"]
    suite = OSU


class ImbFromSource(BenchFromSource):
    descr = "Intel MPI Benchmarks for the build (built from a source when it has none)"
    valid_prog_environs = ["+imb"]
    suite = IMB


class NpbFromSource(BenchFromSource):
    descr = "NAS Parallel Benchmarks for the build (built from a source when it has none)"
    valid_prog_environs = ["+npb"]
    suite = NPB
