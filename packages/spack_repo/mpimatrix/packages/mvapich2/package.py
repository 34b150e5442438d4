# Copyright Spack Project Developers (the builtin recipe this extends).
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""mvapich2 that builds from a source tree with the site's autotools, and its
TCP nemesis fabric at all.

1. The builtin recipe (spack-packages v2025.11.0) pins `automake@1.15` because
   its fix-torque.patch edits hydra's configure.ac and the release's Makefile.in
   files were made by 1.15: `make` then re-runs that exact automake. Distributions
   ship newer ones (Debian 12: 1.16.5), and a git tree of the release has no
   `configure` at all (the offline kit's `2.3.7-1-kit`). Here `./autogen.sh`
   regenerates every build file with the autotools the site has, so any automake
   does and both kinds of source build.
2. `fabrics=nemesis` (ch3:nemesis, TCP between nodes, shared memory within one)
   does not compile in 2.3.7-1 with gcc 12: tcp_init.c tests `mpierrno`
   (undeclared; meant `mpi_errno`) and `if (!mpi_errno);` ends the retry loop on
   its first pass; tcp_getip.c passes an `in_addr` by value to inet_ntop() into an
   array of pointers. nemesis-tcp.patch fixes those lines.

Verified with Spack 1.1.0 on Debian 12 (docs/spack.md, "packages/").
"""

from spack_repo.builtin.packages.mvapich2.package import Mvapich2 as BuiltinMvapich2

from spack.package import *


class Mvapich2(BuiltinMvapich2):
    # The 2.3.7-1 tree as the offline kit packs it (`git archive` of a public mirror's
    # commit: no `configure`, another sha256 than the release tarball); see point 1.
    version("2.3.7-1-kit",
            sha256="0b26893a82aeff431d59eba717c7302acccc9da96d03fe6920f0b475b8a17d94")

    depends_on("autoconf", type="build")
    depends_on("libtool", type="build")
    depends_on("m4", type="build")

    patch("nemesis-tcp.patch", when="@2.3.7-1 fabrics=nemesis")

    def autoreconf(self, spec, prefix):
        which("sh")("./autogen.sh")


# Spack has no directive that removes an inherited dependency; the builtin's
# `automake@1.15` becomes `automake` (any version), see point 1 above.
for _deps in Mvapich2.dependencies.values():
    if "automake" in _deps:
        _deps["automake"].spec = Spec("automake")
