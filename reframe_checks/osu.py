"""OSU Micro-Benchmarks on every build that has OSU.

Seed 002's 41 MPI benchmarks (point-to-point, one-sided, blocking and
non-blocking collectives) plus osu_init and osu_hello, one test case per
benchmark, build and placement. OSU comes from the build: a Spack build loads
its osu-micro-benchmarks (binaries on PATH after `spack load`), other builds
get theirs from `mpimatrix osu-build` (attached by discovery). Point-to-point
and one-sided benchmarks run on the intranode/internode layouts only,
collectives and startup on every layout the system offers.

OSU prints no hosts, so the job first launches `hostname` exactly like the
benchmark (same launcher, placement, environment) and the sanity checks the
hosts the ranks reported against the placement.
"""

import os
import shutil

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable

from mpimatrix import osu_output, osu_sanity
from mpimatrix.checks_base import BuildCheck, CatalogueMetrics
from mpimatrix.osu_build import find_binary
from mpimatrix.osu_catalogue import (
    BY_NAME,
    CATALOGUE,
    PROFILES,
    expected_sizes,
    known_issues,
    options,
    supports_validation,
    version_from_path,
)


@rfm.simple_test
class OsuCheck(rfm.RunOnlyRegressionTest, BuildCheck, CatalogueMetrics):
    descr = "OSU Micro-Benchmarks"
    valid_prog_environs = ["+osu"]
    benchmark = parameter([b.name for b in CATALOGUE])

    #: The whole table, one mapping per row (size, latency/bandwidth/..., valid).
    curve = variable(typ.List[typ.Dict[str, float]], value=[])
    #: OSU version: of the install (before the run), as printed (after it).
    osu_version = variable(str, value="")
    #: "on", "off: <why>" or "n/a" (the benchmark or version cannot validate).
    validation = variable(str, value="")
    #: Known problems outside this project that shaped this run (catalogue).
    known_issue = variable(str, value="")

    @run_after("init")
    def _select(self):
        if self.profile not in PROFILES:
            raise ValueError(f"profile {self.profile!r}: choose one of {PROFILES} "
                             "(-S profile=...)")
        self.bench = BY_NAME[self.benchmark]
        self.ref_key = f"{self.benchmark}@{self.layout.name}"
        self.tags |= {"osu", f"osu-{self.bench.group}"}
        if self.bench.quick:
            self.tags.add("quick")
        if not self.bench.fits(self.layout.ranks) or (
                self.bench.group in ("pt2pt", "one-sided") and not self.layout.pair):
            self.valid_systems = []  # e.g. osu_latency needs exactly 2 ranks
        self.time_limit = "20m" if self.profile == "full" else "10m"

    def _issues(self, version):
        b = self.build
        return known_issues(self.bench, b.family, b.version, version, self.layout.nodes,
                            b.provenance)

    def _install(self):
        osu = self.build.benchmarks["osu"]
        return osu, osu.version or version_from_path(osu.bin_dir)

    def _executable(self, osu) -> str:
        path = find_binary(osu.bin_dir, self.bench.binary) if osu.bin_dir else None
        if path:
            return path
        if self.build.prepare_cmds:
            return self.bench.binary  # on PATH once the job has run `spack load`
        on_path = shutil.which(self.bench.binary)
        if on_path:
            return on_path
        self.skip(f"{self.bench.binary} not found below {osu.bin_dir or '(no bin_dir)'} nor "
                  f"on PATH for {self.build.name}: this OSU install lacks it")

    @run_before("run")
    def _command(self):
        osu, version = self._install()
        self.osu_version = version
        issues = self._issues(version)
        self.known_issue = "; ".join(k.reason for k in issues)
        for k in issues:
            if k.action == "skip":
                self.skip(f"known issue: {k.reason}")
        for k in issues:
            if k.action == "env":
                self.env_vars.update(dict(k.env))
        validate = supports_validation(self.bench, version)
        if validate and any(k.action == "no-validation" for k in issues):
            validate = False
            self.validation = "off: known issue"
        else:
            self.validation = "on" if validate else "n/a"
        self.executable = self._executable(osu)
        self.executable_opts = options(self.bench, self.profile, version, validate)
        self.env_vars.update(osu.env)
        self.prerun_cmds = [*self.prerun_cmds, self.hostname_probe_cmd()]

    def _run(self):
        return osu_output.parse(self.stdout_text() + "\n" + self.stderr_text())

    def results_complete(self, stdout):
        return osu_sanity.complete(osu_output.parse(stdout), self.bench,
                                   expected_sizes(self.bench, self.profile))

    @sanity_function
    def validate(self):
        run = self._run()
        self.curve = osu_sanity.curve(run)
        if run.version:
            self.osu_version = run.version
        issues = self._issues(self.osu_version)
        tolerate = tuple(t for k in issues if k.action == "no-finalize" for t in k.tolerate)
        errs = self.probed_host_problems()
        errs += osu_sanity.problems(
            run, self.bench, self.layout.ranks, expected_sizes(self.bench, self.profile),
            validate=self.validation == "on", exitcode=self.job.exitcode, tolerate=tolerate,
            osu_version=self._install()[1])
        if errs:
            tail = self.stderr_text().strip().splitlines()[-2:]
            if tail and not run.errors:
                errs.append("stderr: " + " / ".join(tail))
        return sn.assert_true(not errs, msg=f"{self.build.name} {self.layout.name}: "
                              + "; ".join(errs))

    def _metric(self, metric):
        run = self._run()
        if self.bench.kind == "init":
            value = run.init.get(metric.column) if run.init else None
        else:
            table = run.table
            value = table.value(metric.column, metric.size) if table else None
        if value is None:
            raise ValueError(f"no {metric.name} in {self.bench.binary} output "
                             f"({os.path.join(self.stagedir, 'rfm_job.out')})")
        return value
