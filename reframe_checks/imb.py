"""Intel MPI Benchmarks on every build that has an IMB it can run.

The Intel MPI wheel ships IMB-MPI1/P2P/NBC/RMA linked against libmpi.so.12;
through the MPICH ABI they also run on MPICH-family builds (the build record
says where its libmpi.so.12 is). Spack-built intel-mpi-benchmarks installs are
used as they are. Any other build (Open MPI) uses the project cache's install,
which the ImbFromSource fixture builds once per build from the configured source
(`mpimatrix run --sources`, MPIMATRIX_SOURCES or MPIMATRIX_IMB_SOURCE). One test
case per benchmark and placement, so that one benchmark dying never loses the
others' results.

IMB-EXT (one-sided MPI-2: Unidir/Bidir Put and Get, Accumulate, Window) and IMB-IO
(MPI-IO: S_/P_/C_ Write and Read; its files in the stage directory) run in the full
profile only (tags imb-ext, imb-io). The Intel MPI wheel has neither program: its
builds' cases are skipped, saying so and what gives the program.
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

from mpimatrix.builds.bench_install import PROVENANCE
from mpimatrix.rfm.build_check import BuildCheck
from mpimatrix.rfm.fixtures import ImbFromSource, ProbeBuild
from mpimatrix.rfm.perf import CataloguePerformance
from mpimatrix.suites.common import metric_value
from mpimatrix.suites.imb import output as imb_output
from mpimatrix.suites.imb.catalogue import BY_KEY, CATALOGUE, SIZES
from mpimatrix.suites.imb.sanity import imb_curve, imb_result_problems


@rfm.simple_test
class ImbCheck(rfm.RunOnlyRegressionTest, BuildCheck, CataloguePerformance):
    descr = "Intel MPI Benchmarks"
    sourcesdir = None  # nothing to copy: the programs come from the build or a fixture
    valid_prog_environs = ["+imb"]
    benchmark = parameter([b.key for b in CATALOGUE])
    imb = fixture(ImbFromSource, scope="environment")
    probes = fixture(ProbeBuild, scope="environment")

    #: The whole size curve of every table of this benchmark (run record): per
    #: table ("default", or the RMA mode), rows of size and canonical columns.
    curve = variable(typ.Dict[str, typ.List[typ.Dict[str, float]]], value={})

    #: IMB version and where the install comes from (run record, for reports).
    imb_version = variable(str, value="")

    #: IMB options in place of the profile's -iter/-time, for experiments
    #: (`-S ImbCheck.iterations='-iter 200 -time 1'`; measure/noise_sources.py
    #: compares settings); "" = the profile's.
    iterations = variable(str, value="")

    @run_after("init")
    def select_benchmark(self):
        self.bench = BY_KEY[self.benchmark]
        self.ref_key = f"{self.benchmark}@{self.placement.name}"
        suite = self.bench.suite.lower()
        # IMB-EXT and IMB-IO: imb-ext, imb-io (a bare "io" would be MPI-IO's mpiio too)
        self.tags |= {"imb", f"imb-{suite}" if suite in ("ext", "io") else suite}
        if self.bench.quick:
            self.tags.add("quick")
        ranks = self.placement.ranks
        if ranks < self.bench.min_ranks or (self.bench.max_ranks and
                                            ranks > self.bench.max_ranks):
            self.valid_systems = []  # this benchmark cannot run with this many ranks

    @run_before("run")
    def prepare_run(self):
        imb = self.build.benchmarks["imb"]
        version = self.imb.bench_version or imb.version
        self.imb_version = " ".join(x for x in (version, f"({imb.provenance})"
                                                if imb.provenance else "") if x)
        self.executable = shlex.quote(self._program(self.imb.bin_dir or imb.bin_dir, imb))
        sizes = SIZES[self.profile]
        self.prerun_cmds = [f"printf '%s\\n' {' '.join(map(str, sizes))} > imb_msglen.txt"]
        iterations = shlex.split(self.iterations) or self.bench.iterations(self.profile)
        self.executable_opts = [self.bench.name, "-msglen", "imb_msglen.txt", *iterations,
                                "-npmin", str(self.placement.ranks)]
        if self.bench.suite == "IO":  # its files (hundreds of MB) even if the case fails
            self.postrun_cmds = [*self.postrun_cmds, "rm -f IMB_out IMB_out_*"]
        self.use_benchmark(imb)
        self.inject_into_benchmark(self.probes.path(ProbeBuild.INJECTOR))

    def _program(self, bin_dir, imb):
        """The benchmark's program; skips the case when the build's IMB lacks it (the
        Intel MPI wheel has no IMB-EXT and IMB-IO), saying what gives it."""
        path = os.path.join(bin_dir, self.bench.binary)
        if not bin_dir or os.path.exists(path):
            return path
        prog, build = self.bench.binary, self.build.name
        where = f"{bin_dir}{f' ({imb.provenance})' if imb.provenance else ''}"
        if imb.provenance == PROVENANCE:
            fix = ("the install predates IMB-EXT and IMB-IO in mpimatrix's IMB build; "
                   f"build it again: mpimatrix bench-build --suite imb --build {build} "
                   "(or run with --sources: the session's fixture does)")
        elif "wheel" in imb.provenance:
            fix = ("the Intel MPI wheel ships IMB-MPI1, -NBC, -RMA, -P2P and -MT only; an "
                   "IMB built from source has it (mpimatrix bench-build --suite imb, for "
                   "a build without an IMB of its own; Spack's intel-mpi-benchmarks)")
        else:
            fix = ("build IMB with it (mpimatrix bench-build --suite imb --build "
                   f"{build} --force)")
        self.skip_saying(f"{self.bench.key} on {build}: {where} has no {prog}: {fix}")

    def parse_output(self):
        return imb_output.parse(self.stdout_text(), self.stderr_text())

    def results_complete(self):
        return self.parsed.finalized

    @sanity_function
    def validate(self):
        run = self.parsed
        self.curve = imb_curve(run, self.bench, self.placement.ranks)
        errs = imb_result_problems(run, self.bench, self.placement.ranks, SIZES[self.profile])
        errs += self._traffic_left_node(run)
        return sn.assert_true(not errs, msg=self.failure_message(errs))

    def _traffic_left_node(self, run):
        """Internode ping-pong/ping-ping on partitions that count NIC bytes: at least
        the bytes the table says were exchanged (warm-up not included) must have
        crossed the first node's interface, else the "nodes" shared memory."""
        if (self.net_bytes < 0 or self.placement.nodes < 2
                or self.bench.name not in ("PingPong", "PingPing")):
            return []
        table = run.find(self.bench.name, self.placement.ranks)
        if table is None or "#repetitions" not in table.columns:
            return []
        moved = int(sum(2 * r["#bytes"] * r["#repetitions"] for r in table.rows))
        if self.net_bytes >= moved:
            return []
        return [f"only {self.net_bytes} B crossed the first node's network interface while "
                f"the ranks exchanged {moved} B: the traffic did not leave the node"]

    def metric_value(self, metric):
        mode = self.bench.modes[0] if self.bench.modes else None
        table = self.parsed.find(self.bench.name, self.bench.table_procs(self.placement.ranks),
                                 mode)
        return metric_value(table, metric)
