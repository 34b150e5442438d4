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

Here each selected suite's sub-make runs directly (`make -C src_cpp TARGET=MPI1`,
...), one after the other, with Spack's -j: the top-level Makefile calls a literal
`make`, not `$(MAKE)`, so no jobserver reaches the sub-makes and `make -jN` there
compiles one file at a time (2021.11, six suites on 2 cores: 28 s that way, 15 s
this way).

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

    def _cppflags(self):
        flags = ["-DCHECK"] if self.spec.satisfies("+check") else []
        if self.spec.satisfies("@2021.11:"):
            # 2021.11 compiles src_cpp with -Werror; the MPI C++ bindings'
            # headers (Open MPI 4.1's cxx/op_inln.h: -Wcast-function-type with gcc
            # 12) then stop the build. IMB calls the C API only.
            flags += ["-DOMPI_SKIP_MPICXX", "-DMPICH_SKIP_MPICXX"]
        return flags

    def build(self, spec, prefix):
        if spec.satisfies("@:2019"):  # the builtin recipe's build
            with working_dir(self.build_directory):
                make(*self.build_targets)
            return
        cppflags = self._cppflags()
        extra = [f"CPPFLAGS={' '.join(cppflags)}"] if cppflags else []
        with working_dir(self.build_directory):
            # MT last: the top Makefile orders it after MPI1 (`IMB-MT: | IMB-MPI1`)
            for suite in SUITES:
                if not spec.satisfies(f"+{suite.lower()}"):
                    continue
                folder = "src_c/P2P" if suite == "P2P" else "src_cpp"
                make("-C", folder, "-f", "Makefile", f"TARGET={suite}", *extra)
                copy(join_path(folder, f"IMB-{suite}"), f"IMB-{suite}")
