"""Intel MPI Benchmarks on every build that has an IMB it can run.

The Intel MPI wheel ships IMB-MPI1/P2P/NBC/RMA linked against libmpi.so.12;
through the MPICH ABI they also run on MPICH-family builds (the build record
says where its libmpi.so.12 is). Spack-built intel-mpi-benchmarks installs are
used as they are. One test case per benchmark and placement, so that one
benchmark dying never loses the others' results.
"""

import os

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable

from mpimatrix import imb_output, imb_sanity
from mpimatrix.checks_base import BuildCheck, CatalogueMetrics
from mpimatrix.imb_catalogue import BY_KEY, CATALOGUE, ITERATIONS, SIZES, metric_value


@rfm.simple_test
class ImbCheck(rfm.RunOnlyRegressionTest, BuildCheck, CatalogueMetrics):
    descr = "Intel MPI Benchmarks"
    valid_prog_environs = ["+imb"]
    benchmark = parameter([b.key for b in CATALOGUE])

    #: The whole size curve of every table of this benchmark (run record).
    curve = variable(typ.Dict[str, typ.List[typ.Dict[str, float]]], value={})

    @run_after("init")
    def _select(self):
        self.bench = BY_KEY[self.benchmark]
        self.ref_key = f"{self.benchmark}@{self.layout.name}"
        self.tags |= {"imb", self.bench.suite.lower()}
        if self.bench.quick:
            self.tags.add("quick")
        ranks = self.layout.ranks
        if ranks < self.bench.min_ranks or (self.bench.max_ranks and
                                            ranks > self.bench.max_ranks):
            self.valid_systems = []  # this benchmark cannot run with this many ranks

    @run_before("run")
    def _command(self):
        imb = self.build.benchmarks["imb"]
        self.executable = os.path.join(imb.bin_dir, self.bench.binary)
        sizes = SIZES[self.profile]
        self.prerun_cmds = [f"printf '%s\\n' {' '.join(map(str, sizes))} > imb_msglen.txt"]
        self.executable_opts = [self.bench.name, "-msglen", "imb_msglen.txt",
                                *ITERATIONS[self.profile], "-npmin", str(self.layout.ranks)]
        self.env_vars.update(imb.env)

    def results_complete(self, stdout):
        return imb_output.FINALIZE_MARK in stdout

    def _run(self):
        return imb_output.parse(self.stdout_text() + "\n" + self.stderr_text())

    @sanity_function
    def validate(self):
        run = self._run()
        self.curve = imb_sanity.curve(run, self.bench, self.layout.ranks)
        errs = imb_sanity.problems(run, self.bench, self.layout.ranks, SIZES[self.profile])
        errs += self._traffic_left_node(run)
        return sn.assert_true(not errs, msg=f"{self.build.name} {self.layout.name}: "
                              + "; ".join(errs))

    def _traffic_left_node(self, run):
        """Internode ping-pong/ping-ping on partitions that count NIC bytes: at least
        the bytes the table says were exchanged (warm-up not included) must have
        crossed the first node's interface, else the "nodes" shared memory."""
        if (self.net_bytes < 0 or self.layout.nodes < 2
                or self.bench.name not in ("PingPong", "PingPing")):
            return []
        table = run.find(self.bench.name, self.layout.ranks)
        if table is None or "#repetitions" not in table.columns:
            return []
        moved = int(sum(2 * r["#bytes"] * r["#repetitions"] for r in table.rows))
        if self.net_bytes >= moved:
            return []
        return [f"only {self.net_bytes} B crossed the first node's network interface while "
                f"the ranks exchanged {moved} B: the traffic did not leave the node"]

    def _metric(self, metric):
        run = self._run()
        mode = self.bench.modes[0] if self.bench.modes else None
        table = run.find(self.bench.name, self.layout.ranks, mode)
        value = metric_value(table, metric) if table else None
        if value is None:
            raise ValueError(f"no {metric.name} in IMB {self.bench.key} output")
        return value
