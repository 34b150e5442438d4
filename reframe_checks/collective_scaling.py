"""Collectives against the process count: the seeds' scaling study.

osu_allreduce (4 B, 8 B, 1 KiB, 32 KiB) and osu_alltoall (1, 4, 16, 32 KiB) on every
build with OSU and every placement a partition allows: nodes 1..N x ranks per node
1..cores, 2 ranks or more (suites/osu/scaling.py). One OSU run per case sweeps the seed
range with -m min:max; the performance variables are the seed sizes only
(allreduce_t_4B ... alltoall_t_32KiB, us, lower is better), the whole table is kept in
the run record (`curve`, with OSU's min/max over the ranks). The report's section
"Collectives against processes" plots them (results/report/scaling.py, docs/scaling.md).

Everything else is OsuCheck's (reframe_checks/osu.py): the install, the launch with the
build's launcher and placement, the hostname probe, the known issues of the MPI and OSU
version, the options per OSU version (validation, datatype), the parser and the sanity.

Tag `scaling`; never `quick`: it runs in the nightly, full and acceptance modes (alone
there with `-t scaling`; the quick modes' --tag=quick leaves it out). Iterations: the
quick profile's (-i 100 -x 10) in the quick profile (nightly), OSU's own in the full one,
-i 10 -x 2 where the placement oversubscribes the cores (never gated: no reference).
"""

import os

import reframe as rfm
import reframe.utility as rfm_util
from reframe.core.builtins import parameter, run_after, run_before

from mpimatrix.rfm.placements import current_partitions, partition_shape
from mpimatrix.suites.osu.options import QUICK_COLL_ITERATIONS, expected_sizes, options
from mpimatrix.suites.osu.scaling import BENCHMARKS, TAG, scaling_benchmark, scaling_placements

# The OSU check's module, as ReFrame's loader loads it (the same module object: its
# OsuCheck is registered once, in its own file).
_osu = rfm_util.import_module_from_file(os.path.join(os.path.dirname(__file__), "osu.py"))


#: -i/-x on a placement with more busy ranks than cores.
OVERSUBSCRIBED_ITERATIONS = ("-i", "10", "-x", "2")


def _scaling_placements(_inherited):
    parts = current_partitions()
    shapes = [partition_shape(p) for p in parts] if parts else [(2, 1)]
    return list(scaling_placements(shapes))


@rfm.simple_test
class CollectiveScalingCheck(_osu.OsuCheck):
    descr = "OSU collectives against the process count (the seeds' scaling study)"
    benchmark = parameter(list(BENCHMARKS))
    placement = parameter([], inherit_params=True, filter_params=_scaling_placements,
                          fmt=lambda p: p.name)

    @run_after("init")
    def select_benchmark(self):
        _osu.OsuCheck.select_benchmark(self)  # profile, known limits, time limit
        self.bench = scaling_benchmark(self.benchmark)
        self.ref_key = f"{self.benchmark}-scaling@{self.placement.name}"
        self.tags.discard("quick")
        self.tags |= {TAG, f"{TAG}-{self.benchmark}"}

    @run_before("run")
    def sweep_the_seed_sizes(self):
        """The seed range (-m min:max) in every profile; OSU's own iterations in the
        full profile, the quick profile's in the others, few on an oversubscribed
        placement (its times measure the OS scheduler: 20-60 ms a call with 4 busy
        ranks on 2 cores, 2 minutes a case at 100 iterations)."""
        opts = options(self.bench, "quick", self.osu_version, self.validation == "on")
        i = next(k for k in range(len(opts))
                 if tuple(opts[k:k + len(QUICK_COLL_ITERATIONS)]) == QUICK_COLL_ITERATIONS)
        its = (OVERSUBSCRIBED_ITERATIONS if self.oversubscribed
               else () if self.profile == "full" else QUICK_COLL_ITERATIONS)
        opts[i:i + len(QUICK_COLL_ITERATIONS)] = its
        self.executable_opts = opts

    def _sizes(self) -> list[int]:
        return expected_sizes(self.bench, "quick")
