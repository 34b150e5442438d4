# Copyright Spack Project Developers (the builtin recipe this extends).
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""npb with the NPB 3.4 release as an air-gapped site's kit packs it, built the way
gfortran 12 and the MPI wrappers of any build need.

The builtin recipe (spack-packages v2025.11.0) knows 3.3.1 and 3.4.1 from NASA's
site. The offline kit carries NPB 3.4 (NPB3.4/NPB3.4-MPI) from a public mirror that
keeps the releases in git: another archive, so its own version here, `3.4-kit`.

What differs from the builtin build of the MPI implementation:
- make.def names the MPI's wrappers only (MPIFC/FLINK = mpif90, MPICC/CLINK =
  mpicc): the builtin adds `spec["mpi"].libs` and `-I<prefix>/include`, which an
  external MPI given as a prefix of wrapper links (debian-local's shims) does not
  have; the wrappers add both themselves.
- gfortran 10 and later refuse NPB's Fortran until FFLAGS gains
  -fallow-argument-mismatch (MPI buffers of different types) and, for 3.4,
  -fallow-invalid-boz (X'...' constants of common/randi8.f): the builtin adds the
  first only.
- The classes default to S and A (the checks run those; class D and beyond need
  more memory than a test node has), `names` to the eight kernels IS, EP, CG, FT,
  MG, LU, BT, SP (DT is not run).
- A kernel that does not build stops the install: `make suite` goes on after a
  failed kernel, so the builtin install can succeed without the kernels asked for.
  Every bin/<kernel>.<class>.x asked for must exist.

Verified with Spack 1.1.0 on Debian 12 (docs/npb.md, "Spack"): `npb@3.4-kit` on
Debian's Open MPI 4.1.4 (external) with gcc 12.
"""

import os

from spack_repo.builtin.packages.npb.package import Npb as BuiltinNpb

from spack.package import *

KERNELS = ("is", "ep", "cg", "ft", "mg", "lu", "bt", "sp")


class Npb(BuiltinNpb):
    version("3.4-kit",
            sha256="b3d8de0db91d296dfa0d908643dc22fa086efb2c2e84cd758bee926c7c3f82c9")

    variant("names", default=",".join(KERNELS), values=BuiltinNpb.valid_names, multi=True,
            description="Benchmark names (comma separated list)")
    variant("classes", default="S,A", values=BuiltinNpb.valid_classes, multi=True,
            description="Benchmark classes (comma separated list)")

    @property
    def build_directory(self):
        if self.spec.satisfies("@3.4-kit implementation=mpi"):
            return "NPB3.4-MPI"
        return super().build_directory

    def edit(self, spec, prefix):
        super().edit(spec, prefix)
        if not spec.satisfies("implementation=mpi"):
            return
        fflags = ["-O3"]
        if spec.satisfies("%fortran=gcc@10:"):
            fflags += ["-fallow-argument-mismatch", "-fallow-invalid-boz"]
        mpi = spec["mpi"]
        definitions = {
            "MPIFC": mpi.mpifc, "FLINK": mpi.mpifc,
            "FFLAGS": " ".join(fflags), "FLINKFLAGS": " ".join(fflags),
            "MPICC": mpi.mpicc, "CLINK": mpi.mpicc,
            "CFLAGS": "-O3", "CLINKFLAGS": "-O3",
            "CC": f"{spack_cc} -g", "BINDIR": prefix.bin, "RAND": "randi8",
            "CONVERTFLAG": "-DFORTRAN_REC_SIZE=1",
        }
        with working_dir(self.build_directory):
            with open("config/make.def", "w") as make_def:
                for key, value in definitions.items():
                    make_def.write(f"{key} = {value}\n")

    def install(self, spec, prefix):
        super().install(spec, prefix)
        if not spec.satisfies("implementation=mpi"):
            return
        wanted = [f"{name}.{cls}.x" for name in spec.variants["names"].value
                  for cls in spec.variants["classes"].value]
        missing = [w for w in wanted if not os.path.exists(join_path(prefix.bin, w))]
        if missing:
            raise InstallError(f"NPB: {', '.join(missing)} not built (see the build log: "
                               "`make suite` goes on after a failed kernel)")
