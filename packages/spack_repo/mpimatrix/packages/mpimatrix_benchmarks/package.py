# SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""mpimatrix-benchmarks: the benchmark suites of the matrix on one MPI build.

A bundle (nothing to build or install of its own): one root of spack.yaml's
matrix per MPI x fabric x compiler, so that each MPI build is concretized once
for both suites, instead of once under osu-micro-benchmarks and once under
intel-mpi-benchmarks (and npb). Within one root Spack chooses one `mpi` node, so
OSU, IMB and NPB are always built on the same MPI (the lock reader attaches them to it by
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
    """OSU Micro-Benchmarks, Intel MPI Benchmarks and NPB on one MPI build."""

    homepage = "https://mvapich.cse.ohio-state.edu/benchmarks/"

    version("1.0")

    variant("osu", default=True, description="OSU Micro-Benchmarks")
    variant("imb", default=True, description="Intel MPI Benchmarks")
    # Off by default: NPB's kernels but IS are Fortran, so NPB needs an MPI with
    # Fortran bindings (spack.yaml turns it on for the rows that have them).
    variant("npb", default=False, description="NAS Parallel Benchmarks (MPI)")

    depends_on("c", type="build")
    depends_on("cxx", type="build")

    depends_on("mpi")
    depends_on("osu-micro-benchmarks", when="+osu")
    # The suites the checks run (IMB-MPI1, -P2P, -NBC, -RMA, -EXT one-sided, -IO
    # MPI-IO): not -MT (OpenMP), which the recipe builds by default and nothing runs.
    depends_on("intel-mpi-benchmarks+mpi1+p2p+nbc+rma+ext+io~mt", when="+imb")
    depends_on("npb implementation=mpi", when="+npb")

    conflicts("~osu~imb", msg="mpimatrix-benchmarks needs at least one suite")
