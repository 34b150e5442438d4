"""NAS Parallel Benchmarks 3.4 (MPI) on every build that can run them.

Eight kernels (IS, EP, CG, FT, MG, LU, BT, SP; suites/npb/catalogue.py) at classes S
and A, one test case per kernel, class, build and placement. NPB comes from the build
(a Spack build's npb) or from the project cache, where the NpbFromSource fixture builds
every kernel and class once per build from the configured source (`mpimatrix run
--sources`, MPIMATRIX_SOURCES or MPIMATRIX_NPB_SOURCE; `mpimatrix bench-build --suite
npb` builds it ahead). A build without Fortran bindings has IS only: its other kernels
are skipped, saying so.

Process counts: a power of two (2, 4 ...) for IS, EP, CG, FT, MG and LU; a square for
BT and SP (1, 4 ...): the placements of the session that fit, plus 1x1, 1x4 and 2x2
(where a partition has the nodes and cores). Sanity is NPB's own verification (a
wrong answer fails, it is never a value), the class and process count it ran with, and
the ranks' hosts against the placement. Performance: Mop/s total (higher is better)
and the time (s).
"""

import os
import shlex

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

from mpimatrix.builds.bench_npb import missing_reasons
from mpimatrix.placement import Placement
from mpimatrix.rfm.build_check import BuildCheck
from mpimatrix.rfm.fixtures import NpbFromSource, ProbeBuild
from mpimatrix.rfm.perf import CataloguePerformance
from mpimatrix.suites.common import metric_value, stderr_tail
from mpimatrix.suites.npb import output as npb_output
from mpimatrix.suites.npb.catalogue import BY_NAME, CLASSES, KERNELS, NpbBenchmark
from mpimatrix.suites.npb.sanity import npb_result_problems

#: Besides the session's placements: one rank and four (BT and SP need a square).
NPB_PLACEMENTS = (Placement(1, 1), Placement(1, 4), Placement(2, 2))
#: The classes in the quick profile's subset (`--tag=quick`, the main job): class S, every
#: kernel, on every build with NPB. A build without NPB from Spack gets it built once per
#: build and source by NpbFromSource (every kernel at S and A, 50-80 s a build with
#: Fortran on 2 cores), reused by every later session.
QUICK_CLASSES: tuple[str, ...] = ("S",)
#: Time limit per class (class A of LU, BT, SP on a few ranks: about a minute).
TIME_LIMITS = {"S": "10m", "A": "20m"}


def _with_npb_placements(inherited):
    names = {p.name for p in inherited}
    return [*inherited, *(p for p in NPB_PLACEMENTS if p.name not in names)]


@rfm.simple_test
class NpbCheck(rfm.RunOnlyRegressionTest, BuildCheck, CataloguePerformance):
    descr = "NAS Parallel Benchmarks (MPI)"
    sourcesdir = None  # nothing to copy: the programs come from the build or a fixture
    valid_prog_environs = ["+npb"]
    kernel = parameter([k.name for k in KERNELS])
    npb_class = parameter(list(CLASSES))
    placement = parameter([], inherit_params=True, filter_params=_with_npb_placements,
                          fmt=lambda p: p.name)
    npb = fixture(NpbFromSource, scope="environment")
    probes = fixture(ProbeBuild, scope="environment")

    #: "CG.S": kernel and class (reports name the test case by it).
    benchmark = variable(str, value="")
    #: NPB's version and where the install comes from (run record).
    npb_version = variable(str, value="")
    #: NPB's summary of the run: class, size, iterations, processes, rates, verification.
    npb_summary = variable(typ.Dict[str, str], value={})

    @run_after("init")
    def select_benchmark(self):
        self.bench = NpbBenchmark(BY_NAME[self.kernel], self.npb_class)
        self.benchmark = self.bench.name
        self.ref_key = f"{self.bench.name}@{self.placement.name}"
        self.tags |= {"npb", f"npb-{self.kernel.lower()}", f"npb-class-{self.npb_class}"}
        if self.npb_class in QUICK_CLASSES:
            self.tags.add("quick")
        if not self.bench.kernel.allows(self.placement.ranks):
            self.valid_systems = []  # e.g. BT on 2 ranks, CG on 1
        self.time_limit = TIME_LIMITS.get(self.npb_class, "20m")

    def _program(self, bin_dir: str) -> str:
        path = os.path.join(bin_dir, self.bench.binary)
        if os.path.exists(path) or not bin_dir:
            return path
        why = missing_reasons(bin_dir).get(self.bench.binary, "not built")
        self.skip_saying(f"NPB {self.bench.name} on {self.build.name}: {why}")

    @run_before("run")
    def prepare_run(self):
        install = self.build.benchmarks["npb"]
        version = self.npb.bench_version or install.version
        self.npb_version = " ".join(x for x in (version, f"({install.provenance})"
                                                if install.provenance else "") if x)
        self.executable = shlex.quote(self._program(self.npb.bin_dir or install.bin_dir))
        self.use_benchmark(install)
        self.inject_into_benchmark(self.probes.path(ProbeBuild.INJECTOR))
        self.prerun_cmds = [*self.prerun_cmds, self.hostname_probe_cmd()]

    def parse_output(self):
        return npb_output.parse(self.stdout_text(), self.stderr_text())

    def results_complete(self):
        return self.parsed.finished

    @sanity_function
    def validate(self):
        run = self.parsed
        self.npb_summary = {k: str(v) for k, v in run.values().items() if v not in (None, "")}
        errs = self.probed_host_problems()
        errs += npb_result_problems(run, self.bench, self.placement.ranks)
        if errs and not run.errors and stderr_tail(self.stderr_text(), 2):
            errs.append(stderr_tail(self.stderr_text(), 2))
        return sn.assert_true(not errs, msg=self.failure_message(errs))

    def metric_value(self, metric):
        return metric_value(self.parsed, metric)
