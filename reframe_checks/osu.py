"""OSU Micro-Benchmarks on every build that has OSU.

The 41 MPI benchmarks of OSU (point-to-point, one-sided, blocking and
non-blocking collectives) plus osu_init and osu_hello, one test case per
benchmark, build and placement. OSU comes from the build: a Spack build loads
its osu-micro-benchmarks; a build of this machine uses the project cache's
install, which the OsuFromSource fixture builds once per build from the
configured source (`mpimatrix run --sources`, MPIMATRIX_SOURCES or
MPIMATRIX_OSU_SOURCE; `mpimatrix bench-build` builds it ahead). Point-to-point
and one-sided benchmarks run on the intranode/internode placements only,
collectives and startup on every placement the system offers.

OSU prints no hosts, so the job first launches `hostname` exactly like the
benchmark (same launcher, placement, environment) and the sanity checks the
hosts the ranks reported against the placement. A known fault of an MPI that
fails fast is an expected failure (XFAIL; a fixed MPI turns it into XPASS).
"""

import shlex
import shutil

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (
    fixture,
    parameter,
    run_after,
    run_before,
    sanity_function,
    variable,
)

from mpimatrix.builds.bench_suites import find_binary
from mpimatrix.rfm.build_check import BuildCheck
from mpimatrix.rfm.fixtures import OsuFromSource, ProbeBuild
from mpimatrix.rfm.perf import CataloguePerformance
from mpimatrix.suites.common import metric_value, stderr_tail
from mpimatrix.suites.osu import output as osu_output
from mpimatrix.suites.osu.catalogue import BY_NAME, CATALOGUE, version_from_path
from mpimatrix.suites.osu.known_issues import known_issues
from mpimatrix.suites.osu.options import PROFILES, expected_sizes, options, supports_validation
from mpimatrix.suites.osu.sanity import complete, osu_curve, osu_result_problems


@rfm.xfail("known fault of this MPI (the test case's known_issue says which)",
           lambda test: bool(test.expected_failure))
@rfm.simple_test
class OsuCheck(rfm.RunOnlyRegressionTest, BuildCheck, CataloguePerformance):
    descr = "OSU Micro-Benchmarks"
    sourcesdir = None  # nothing to copy: the programs come from the build or a fixture
    valid_prog_environs = ["+osu"]
    benchmark = parameter([b.name for b in CATALOGUE])
    osu = fixture(OsuFromSource, scope="environment")
    probes = fixture(ProbeBuild, scope="environment")

    #: The whole table: {"default": rows of size and canonical columns}.
    curve = variable(typ.Dict[str, typ.List[typ.Dict[str, float]]], value={})
    #: OSU version: of the install (before the run), as printed (after it).
    osu_version = variable(str, value="")
    #: "on" or "n/a" (the benchmark or version cannot validate).
    validation = variable(str, value="")
    #: Known problems outside this project that shaped this run.
    known_issue = variable(str, value="")
    #: Largest message size of the full sweep when above OSU's default (bytes; 0: the
    #: default): an acceptance requirement's size, e.g. allreduce at 32 MiB.
    max_size = variable(int, value=0)

    @run_after("init")
    def select_benchmark(self):
        if self.profile not in PROFILES:
            raise ValueError(f"profile {self.profile!r}: choose one of {PROFILES} "
                             "(-S profile=...)")
        self.bench = BY_NAME[self.benchmark]
        self.ref_key = f"{self.benchmark}@{self.placement.name}"
        self.tags |= {"osu", f"osu-{self.bench.group}"}
        if self.bench.quick:
            self.tags.add("quick")
        if not self.bench.fits(self.placement.ranks) or (
                self.bench.group in ("pt2pt", "one-sided") and not self.placement.pair):
            self.valid_systems = []  # e.g. osu_latency needs exactly 2 ranks
        self.time_limit = "20m" if self.profile == "full" else "10m"

    def _issues(self, version):
        b = self.build
        return known_issues(self.bench, b.family, b.version, version, self.placement.nodes,
                            b.fabric)

    def _install_version(self) -> str:
        return self.osu.bench_version or version_from_path(self.osu.bin_dir)

    def _executable(self) -> str:
        bin_dir = self.osu.bin_dir
        path = find_binary(bin_dir, self.bench.binary) if bin_dir else None
        if path:
            return shlex.quote(path)
        if self.build.prepare_cmds:
            return self.bench.binary  # on PATH once the job has run `spack load`
        on_path = shutil.which(self.bench.binary)
        if on_path:
            return shlex.quote(on_path)
        self.skip_saying(f"{self.bench.binary} not found below {bin_dir or '(no bin_dir)'} "
                         f"nor on PATH for {self.build.name}: this OSU install lacks it")

    @run_before("run")
    def prepare_run(self):
        version = self.osu_version = self._install_version()
        issues = self._issues(version)
        self.known_issue = "; ".join(k.reason for k in issues)
        for k in issues:
            if k.action == "skip":
                self.skip_saying(f"known issue: {k.reason}")
            elif k.action == "env":
                self.env_vars.update(dict(k.env))
            elif k.action == "xfail":
                self.expected_failure = k.reason
        validate = supports_validation(self.bench, version)
        self.validation = "on" if validate else "n/a"
        self.executable = self._executable()
        self.executable_opts = options(self.bench, self.profile, version, validate,
                                       self.max_size)
        osu = self.build.benchmarks.get("osu")
        if osu is not None:
            self.use_benchmark(osu)
        self.inject_into_benchmark(self.probes.path(ProbeBuild.INJECTOR),
                                   meter=self.bench.name != "init")
        self.prerun_cmds = [*self.prerun_cmds, self.hostname_probe_cmd()]

    def parse_output(self):
        return osu_output.parse(self.stdout_text(), self.stderr_text())

    def _sizes(self) -> list[int]:
        return expected_sizes(self.bench, self.profile, self.max_size)

    def results_complete(self):
        return complete(self.parsed, self.bench, self._sizes())

    @sanity_function
    def validate(self):
        run = self.parsed
        self.curve = osu_curve(run)
        if run.version:
            self.osu_version = run.version
        issues = self._issues(self.osu_version)
        tolerate = tuple(t for k in issues if k.action == "tolerate" for t in k.tolerate)
        errs = self.probed_host_problems()
        errs += osu_result_problems(
            run, self.bench, self.placement.ranks, self._sizes(),
            validate=self.validation == "on", exitcode=self.job.exitcode, tolerate=tolerate,
            osu_version=self._install_version())
        if errs and not run.errors and stderr_tail(self.stderr_text(), 2):
            errs.append(stderr_tail(self.stderr_text(), 2))
        return sn.assert_true(not errs, msg=self.failure_message(errs))

    def metric_value(self, metric):
        run = self.parsed
        if self.bench.kind == "init":
            return run.init.get(metric.column) if run.init else None
        return metric_value(run.table, metric)
