# Copyright Spack Project Developers (the builtin recipe this extends).
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""intel-mpi-benchmarks with the benchmark variants honoured and a race-free build.

The builtin recipe (spack-packages v2025.11.0) passes the selected suites as
`make TARGET=MPI1 TARGET=NBC ...`: variable assignments, not goals, so the
top-level Makefile of 2021.x always builds its default goal `all`, i.e. every
suite whatever the variants say (`~mt` still compiles IMB-MT, which needs
OpenMP: Debian's clang fails with "'omp.h' file not found" unless libomp-dev is
installed). Under `make -j`, those suites' sub-makes also compile the objects
they share in src_cpp/ (imb.o, scope.o, args_parser.o ...) concurrently.

Here the suites are make goals (IMB-MPI1, IMB-NBC, ...) built one after the
other; each sub-make runs without a jobserver (the Makefile calls `make`, not
`$(MAKE)`), so this costs no parallelism.

Verified with Spack 1.1.0 on Debian 12 (docs/spack.md, "packages/"): builtin
`intel-mpi-benchmarks~mt~ext~io ^openmpi@4.1.4` ran the TARGET=MT, EXT and IO
sub-makes; with this recipe only IMB-MPI1, IMB-NBC, IMB-P2P and IMB-RMA were
built and installed.
The other candidate fix, `-DOMPI_SKIP_MPICXX` against Open MPI 4.1 with gcc 12,
is not needed: the builtin 2021.7 recipe builds there (-Wcast-function-type is a
warning, not an error).
"""

from spack_repo.builtin.packages.intel_mpi_benchmarks.package import (
    IntelMpiBenchmarks as BuiltinIntelMpiBenchmarks,
)

from spack.package import *

SUITES = ("MPI1", "EXT", "IO", "NBC", "P2P", "RMA", "MT")


class IntelMpiBenchmarks(BuiltinIntelMpiBenchmarks):
    # The kit's 2021.11 (a `git archive` of upstream's 2021.11 merge commit 1a7cada,
    # top folder mpi-benchmarks-IMB-v2021.11/): no release tarball reproduces it.
    version("2021.11-kit",
            sha256="082c9d040c01b01261b88c13e535b5c1996a071afd80bc1f10cf87dbfda10e57")

    @property
    def build_targets(self):
        if self.spec.satisfies("@:2019"):
            return super().build_targets
        goals = [f"IMB-{s}" for s in SUITES if self.spec.satisfies(f"+{s.lower()}")]
        cppflags = ["-DCHECK"] if self.spec.satisfies("+check") else []
        if self.spec.satisfies("@2021.11:"):
            # 2021.11 compiles src_cpp with -Werror; the MPI C++ bindings'
            # headers (Open MPI 4.1's cxx/op_inln.h: -Wcast-function-type with gcc
            # 12) then stop the build. IMB calls the C API only.
            cppflags += ["-DOMPI_SKIP_MPICXX", "-DMPICH_SKIP_MPICXX"]
        if cppflags:
            goals.append(f"CPPFLAGS={' '.join(cppflags)}")
        return goals

    @property
    def parallel(self):
        return False
