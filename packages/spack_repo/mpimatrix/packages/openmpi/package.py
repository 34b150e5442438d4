# Copyright Spack Project Developers (the builtin recipe this extends).
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""openmpi from the release trees an air-gapped site carries in.

The offline kit holds Open MPI 4.1.4 and 5.0.7 as Debian ships them
(`openmpi_<v>.orig.tar.xz`: the upstream release tree, with `configure`,
recompressed as xz), so another sha256 than the recipe's `.tar.bz2`: each is a
version of its own here, `4.1.4-kit` and `5.0.7-kit`, served from the site's
mirror by that sha256. `4.1.4-kit` satisfies `@4.1.4`, so every condition of the
builtin recipe on 4.1.4 applies to it, except the two patches it downloads
(ompi commits 8e6d9ba for 4.1.2-4.1.4 and d10e976 for 4.1.8 and 5.0.7): offline
they cannot be fetched, and the kit rows go without them (docs/spack.md says
what they fix and why that is safe for these rows). A connected site never sees
the kit versions: without the kit scope Spack takes the releases and fetches
them, patches included.

And a fix: Open MPI's configure (and its bundled PMIx's) looks for the libraries of
external Slurm PMI (4.1 `+pmi`), libevent, hwloc, zlib, UCX and libfabric in
<prefix>/lib and <prefix>/lib64 only ("PMI support requested ... neither libpmi,
libpmi2, or libpmix were found", "External libevent requested but not found", "ZLIB
SUPPORT REQUESTED AND NOT FOUND"); Debian keeps them in the multiarch directory
(/usr/lib/x86_64-linux-gnu), which is then passed as `--with-<pkg>-libdir`.

Verified with Spack 1.1.0 on Debian 12 (docs/spack.md, "packages/").
"""

from spack_repo.builtin.packages.openmpi.package import Openmpi as BuiltinOpenmpi
from spack_repo.mpimatrix.kit_versions import url_patches_for_releases_only

import glob
import os

from spack.package import *


class Openmpi(BuiltinOpenmpi):
    # Never fetched from this URL: the kit's archive is found in the site's mirror by
    # its sha256; the URL gives Spack the archive's kind (xz, not the releases' bz2).
    version("5.0.7-kit",
            sha256="97f10c04e9b9a1771db3fd005009e4c07afa3ce739f940e41eb0fc7397cb9473",
            url="file:///offline-kit/sources/debian/openmpi_5.0.7.orig.tar.xz")
    version("4.1.4-kit",
            sha256="ddaee7dbdb01eb4fab1fda5b5e03e8bbff026711806c095c1f39bb410f99f263",
            url="file:///offline-kit/sources/debian/openmpi_4.1.4.orig.tar.xz")

    def configure_args(self):
        args = super().configure_args()
        for dep, lib, option in (("slurm", "pmi2", "pmi"), ("libevent", "event_core", "libevent"),
                                 ("hwloc", "hwloc", "hwloc"), ("zlib-api", "z", "zlib"),
                                 ("ucx", "ucp", "ucx"), ("libfabric", "fabric", "ofi")):
            if dep == "slurm" and not self.spec.satisfies("+pmi"):
                continue
            if dep in self.spec and self.spec[dep].external:
                libdir = _multiarch_libdir(self.spec[dep].prefix, lib)
                if libdir:
                    args.append(f"--with-{option}-libdir={libdir}")
        return args


def _multiarch_libdir(prefix, lib):
    """<prefix>/lib/<multiarch triplet> when it, not <prefix>/lib or lib64, holds lib<lib>.so:
    Open MPI's configure looks in those two only ("External libevent requested but not
    found"), and Debian keeps its libraries in /usr/lib/x86_64-linux-gnu."""
    name = f"lib{lib}.so"
    if any(os.path.exists(join_path(d, name)) for d in (prefix.lib, prefix.lib64)):
        return None
    found = glob.glob(join_path(prefix.lib, "*-linux-gnu*", name))
    return os.path.dirname(found[0]) if found else None


url_patches_for_releases_only(
    Openmpi, ("4.1.4-kit", "5.0.7-kit"),
    {"@4.0.7,4.1.2:4.1.4": "@4.0.7,4.1.2:4.1.3,=4.1.4",
     "@4.1.8,5.0.7": "@4.1.8,=5.0.7"})
