# Copyright Spack Project Developers (the builtin recipe this extends).
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""osu-micro-benchmarks with the 7.4 release tree as an air-gapped site's kit packs it.

OSU publishes release tarballs only; the offline kit this project is verified with
carries the 7.4 tree as a `git archive` of a public mirror's commit: the same
files, another tarball, so another sha256 than the recipe's 7.4. Spack checks
every archive against its recipe, so that packing is its own version here,
`7.4-kit` (it satisfies `@7.4`), served from the site's mirror by its sha256 like
any other. The debian-local overlay requires it; a connected site never sees it
(the overlay of a connected site leaves the version to Spack: the newest release).
"""

from spack_repo.builtin.packages.osu_micro_benchmarks.package import (
    OsuMicroBenchmarks as BuiltinOsuMicroBenchmarks,
)

from spack.package import *


class OsuMicroBenchmarks(BuiltinOsuMicroBenchmarks):
    version("7.4-kit",
            sha256="101b6cf4ea6126a8c32cab1dbe59969197944a044b16e6bb9ec828d1a1eb7266")
