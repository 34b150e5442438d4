# SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""mpimatrix-benchmarks: both benchmark suites of the matrix on one MPI build.

A bundle (nothing to build or install of its own): one root of spack.yaml's
matrix per MPI x fabric x compiler, so that each MPI build is concretized once
for both suites, instead of once under osu-micro-benchmarks and once under
intel-mpi-benchmarks. Within one root Spack chooses one `mpi` node, so OSU and
IMB are always built on the same MPI (the lock reader attaches them to it by
their `mpi` dependency, as before).

The compiler: the matrix writes `%%c,cxx=<compiler>` on this root. `%%` needs a
direct dependency, so the bundle declares c and cxx (build only; no compiler
runs for a bundle) and the preference reaches the suites and their MPI through
the link dependencies below.

Verified with Spack 1.1.0 and spack-packages v2025.11.0: the matrix of
spack.yaml concretizes with one root per MPI build (docs/spack.md).
"""

from spack_repo.builtin.build_systems.bundle import BundlePackage

from spack.package import *


class MpimatrixBenchmarks(BundlePackage):
    """OSU Micro-Benchmarks and Intel MPI Benchmarks on one MPI build."""

    homepage = "https://mvapich.cse.ohio-state.edu/benchmarks/"

    version("1.0")

    variant("osu", default=True, description="OSU Micro-Benchmarks")
    variant("imb", default=True, description="Intel MPI Benchmarks")

    depends_on("c", type="build")
    depends_on("cxx", type="build")

    depends_on("mpi")
    depends_on("osu-micro-benchmarks", when="+osu")
    # The suites the checks run (IMB-MPI1, -P2P, -NBC, -RMA): not IMB-EXT, -IO (MPI-IO)
    # and -MT (OpenMP), which the recipe builds by default and nothing runs.
    depends_on("intel-mpi-benchmarks+mpi1+p2p+nbc+rma~ext~io~mt", when="+imb")

    conflicts("~osu~imb", msg="mpimatrix-benchmarks needs at least one suite")
