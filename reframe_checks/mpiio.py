"""MPI-IO write bandwidth, three ways of writing (after the Fujitsu MPI-IO study).

One shared file through MPI-IO (MPI_File_open on MPI_COMM_WORLD, a file view per rank,
MPI_File_write_at_all), one file per process (MPI_COMM_SELF), and MPI_Gather to rank 0
which writes with POSIX; each contiguous and strided (an MPI_Type_vector file view:
the ranks' 4 KiB blocks interleave), each timed to the I/O cache and with
MPI_File_sync/fsync; 64 KiB and 4 MiB per rank, 2 ranks (intranode, and internode
where a partition has 2+ nodes), `trials` trials per case (I/O varies: the median is
the value, min and max go to the record as `mpiio_summary`).

Where: the test case's stage directory (`where=stage`), and on a partition whose
extras name a shared file system (`extras: {shared_fs: /path}`) there too
(`where=shared_fs`; skipped elsewhere). docs/mpiio.md.

Sanity: the program read every rank's bytes back after each trial (a wrong byte fails
the case, it is never a value), it ran the variant asked for on the placement's hosts,
and it left no file behind. An MPI-IO layer that needs fcntl locks the file system does
not give (builds/known_faults.py FILE_LOCKS_REFUSED) is an expected failure.
Performance: write bandwidth (MB/s, higher is better), the median over the trials.
Tagged `mpiio`; the three ways of writing, contiguous, cache, 64 KiB, stage directory also
`quick` (the main job).
"""

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
from reframe.core.exceptions import ExpectedFailureError

from mpimatrix.builds.known_faults import FILE_LOCKS_REFUSED, known_fault
from mpimatrix.placement import rank_host_problems
from mpimatrix.rfm.build_check import BuildCheck
from mpimatrix.rfm.mpiio_build import MpiioBenchBuild
from mpimatrix.rfm.perf import CataloguePerformance
from mpimatrix.rfm.placements import current_partitions
from mpimatrix.suites.common import metric_value, stderr_tail
from mpimatrix.suites.mpiio import output as mpiio_output
from mpimatrix.suites.mpiio.output import LAYOUTS, MODES, SYNCS, MpiioBenchmark

#: Bytes per rank: a small write (latency-bound) and a large one.
SIZES = (64 << 10, 4 << 20)
#: The quick modes' subset (the main job): the seed's three ways of writing, contiguous,
#: to the I/O cache, 64 KiB per rank, in the stage directory (3 cases per build and pair
#: placement, about 2 s each with the 20 trials).
QUICK = {"layout": "contiguous", "sync": "cache", "size": 64 << 10, "where": "stage"}
#: Partition extra naming a directory on a file system all its nodes share.
SHARED_FS = "shared_fs"
LEFTOVER = "MPIIO leftover"


def _pairs(inherited):
    return [p for p in inherited if p.pair]


@rfm.simple_test
class MpiioCheck(rfm.RunOnlyRegressionTest, BuildCheck, CataloguePerformance):
    descr = "MPI-IO write bandwidth: shared file, file per process, gather to a writer"
    sourcesdir = None  # nothing to copy: the program comes from a fixture
    valid_prog_environs = ["+mpi"]
    placement = parameter([], inherit_params=True, filter_params=_pairs,
                          fmt=lambda p: p.name)
    mode = parameter(list(MODES))
    layout = parameter(list(LAYOUTS))
    sync = parameter(list(SYNCS))
    size = parameter(list(SIZES))
    where = parameter(["stage", SHARED_FS])
    bench_build = fixture(MpiioBenchBuild, scope="environment")
    tags = {"mpiio"}

    #: Trials per test case (the value is their median).
    trials = variable(int, value=20)
    #: "mpiio-shared-strided-cache": the variant (reports name the test case by it).
    benchmark = variable(str, value="")
    #: Spread over the trials (bw_MBps_min/median/max), trials, strided block size.
    mpiio_summary = variable(typ.Dict[str, str], value={})
    #: The directory written to (the stage directory or the shared file system's).
    io_dir = variable(str, value="")

    @run_after("init")
    def select_benchmark(self):
        self.bench = MpiioBenchmark(self.mode, self.layout, self.sync, self.size,
                                    self.where == SHARED_FS)
        self.benchmark = self.bench.name
        self.ref_key = f"{self.bench.name}@{self.placement.name}"
        self.tags |= {f"mpiio-{self.mode}", f"mpiio-{self.where}"}
        if all(getattr(self, k) == v for k, v in QUICK.items()):
            self.tags.add("quick")
        self.time_limit = "5m"
        if self.where == SHARED_FS:
            parts = current_partitions()
            if parts is not None:
                shared = {p.fullname for p in parts if (p.extras or {}).get(SHARED_FS)}
                self.valid_systems = [s for s in self.valid_systems if s in shared]

    @run_before("run")
    def prepare_run(self):
        if self.where == SHARED_FS:
            base = str(self.current_partition.extras[SHARED_FS])
        else:
            base = self.stagedir
        self.io_dir = base
        q = shlex.quote
        self.executable = q(self.bench_build.path())
        self.executable_opts = [self.mode, self.layout, self.sync, str(self.size),
                                str(self.trials), '"$MPIIO_DIR"']
        self.prerun_cmds = [*self.prerun_cmds,
                            f"MPIIO_DIR=$(mktemp -d {q(base)}/mpimatrix-mpiio.XXXXXX) || exit 1"]
        self.postrun_cmds = [f'ls -A "$MPIIO_DIR" | sed "s/^/{LEFTOVER} /"',
                             'rm -rf "$MPIIO_DIR"', *self.postrun_cmds]

    def parse_output(self):
        return mpiio_output.parse(self.stdout_text(), self.stderr_text())

    def results_complete(self):
        return self.parsed.finished

    @sanity_function
    def validate(self):
        run = self.parsed
        self.mpiio_summary = run.values()
        if run.hosts:
            self.hosts = sorted(set(run.hosts))
        errs = mpiio_output.mpiio_result_problems(run, self.bench, self.placement.ranks)
        if run.config:
            errs += rank_host_problems(run.hosts, self.placement)
        left = [ln.split(None, 2)[-1] for ln in self.stdout_text().splitlines()
                if ln.startswith(LEFTOVER)]
        if left and not errs:
            errs.append(f"files left in {self.io_dir}: {', '.join(left[:3])}")
        if errs and not run.errors and stderr_tail(self.stderr_text(), 2):
            errs.append(stderr_tail(self.stderr_text(), 2))
        fault = run.lock_failure and known_fault(self.build, self.placement.nodes,
                                                 FILE_LOCKS_REFUSED)
        if fault:
            # an expected failure (XFAIL): ReFrame keeps no reason of it, the variable does
            self.expected_failure = self.failure_message(
                [*errs, f"known fault of {self.build.name}: {fault.reason}"])
            raise ExpectedFailureError(self.expected_failure)
        return sn.assert_true(not errs, msg=self.failure_message(errs))

    def metric_value(self, metric):
        return metric_value(self.parsed, metric)
