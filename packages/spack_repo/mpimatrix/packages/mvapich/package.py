# Copyright Spack Project Developers (the builtin recipe this extends).
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""mvapich (MVAPICH 4.x) whose configure arguments can be computed at all.

The builtin recipe (spack-packages v2025.11.0) was derived from mvapich2's:
its configure_args() still reads `spec.variants["ch3_rank_bits"]` and
`spec.variants["pmi_version"]`, variants mvapich does not declare, so every
`spack install mvapich` stops at the configure phase with KeyError. MVAPICH 4.x is
MPICH 4.3-based and ch4-only (`netmod=ofi|ucx`): --with-ch3-rank-bits does not
apply, and its PMI follows `process_managers` (auto: Hydra and MPICH's own PMI
client, PMI-1 by default; slurm: --with-pm=none --with-pmi=slurm), which the
builtin process_manager_options already passes. Here configure_args() is the
builtin one without those two arguments.

Verified with Spack 1.1.0 (`spack -e <env> python`, the concrete mvapich@4.1 of
the matrix's lock): the builtin configure_args() raises KeyError: 'ch3_rank_bits';
this one returns the arguments (docs/spack.md, "packages/"). Not built here: no
MVAPICH source on this machine.
"""

from spack_repo.builtin.packages.mvapich.package import Mvapich as BuiltinMvapich

from spack.package import *


class Mvapich(BuiltinMvapich):
    def configure_args(self):
        spec = self.spec
        args = [
            "--enable-shared",
            "--enable-romio",
            "--disable-silent-rules",
            "--disable-new-dtags",
            "--enable-fortran=all",
            f"--enable-threads={spec.variants['threads'].value}",
            "--enable-wrapper-rpath={0}".format("no" if "~wrapperrpath" in spec else "yes"),
        ]
        args.extend(self.enable_or_disable("alloca"))
        if spec.satisfies("+debug"):
            args.extend(["--disable-fast", "--enable-error-checking=runtime",
                         "--enable-error-messages=all", "--enable-g=dbg", "--enable-debuginfo"])
        else:
            args.append("--enable-fast=all")
        if spec.satisfies("+cuda"):
            args.extend(["--enable-cuda", f"--with-cuda={spec['cuda'].prefix}"])
        else:
            args.append("--disable-cuda")
        args.append("--{0}-registration-cache".format(
            "enable" if spec.satisfies("+regcache") else "disable"))
        rpaths = [*self.compiler.extra_rpaths, *self.compiler.implicit_rpaths()]
        if rpaths:
            args.append("LDFLAGS=" + " ".join(f"-Wl,-rpath,{p}" for p in rpaths))
        args.extend(self.process_manager_options)
        args.extend(self.network_options)
        args.extend(self.file_system_options)
        return args
