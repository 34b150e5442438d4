# Copyright Spack Project Developers (the builtin recipe this extends).
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""mpich from the release tree an air-gapped site carries in.

The offline kit holds MPICH 4.0.2 as Debian ships it (`mpich_4.0.2.orig.tar.xz`:
the upstream release tree, with `configure`, recompressed as xz), so another
sha256 than the recipe's `.tar.gz`: it is a version of its own here,
`4.0.2-kit`, served from the site's mirror by that sha256. It satisfies `@4.0.2`,
so every condition of the builtin recipe on 4.0.2 applies to it (the local
CFI configure fix included), except the two patches it downloads (mpich commits
3a1f618 for 4.0-4.0.2 and d901a0b for 3.2.2-4.1.1): offline they cannot be
fetched, and the kit rows go without them (docs/spack.md says what they fix and
why that is safe for these rows). A connected site never sees the kit version.

Verified with Spack 1.1.0 on Debian 12 (docs/spack.md, "packages/").
"""

from spack_repo.builtin.packages.mpich.package import Mpich as BuiltinMpich
from spack_repo.mpimatrix.kit_versions import url_patches_for_releases_only

from spack.package import *


class Mpich(BuiltinMpich):
    # Never fetched from this URL: the kit's archive is found in the site's mirror by
    # its sha256; the URL gives Spack the archive's kind (xz, not the release's gz).
    version("4.0.2-kit",
            sha256="b27039f964afeb6b8a3e009c56b441cbe368c26d6d6476ad3bb7190996875860",
            url="file:///offline-kit/sources/debian/mpich_4.0.2.orig.tar.xz")


url_patches_for_releases_only(
    Mpich, ("4.0.2-kit",),
    {"@4.0:4.0.2": "@4.0:4.0.1,=4.0.2",
     "@3.2.2:4.1.1": "@3.2.2:4.0.1,=4.0.2,4.0.3:4.1.1"})
