# SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""The offline kit's MPI release trees as versions of their own, and the patches
Spack's recipes download from the web left off those versions only.

An air-gapped site has no web: a patch `patch("https://...", sha256=...)` of the
builtin recipe stops `spack install` at the fetch. A kit version ("4.1.4-kit")
satisfies every condition written for its release ("@4.1.4", "@4.1.2:4.1.4"), so
every other patch and condition of the recipe still applies; only the downloaded
patches are moved to conditions that name the releases themselves. Which patches
those are, and why the kit rows are safe without them, is in docs/spack.md
("packages/").
"""

from spack.package import Spec
from spack.patch import UrlPatch


def url_patches_for_releases_only(cls, kit_versions, release_conditions):
    """Move the recipe's downloaded patches off the kit versions.

    release_conditions maps the builtin recipe's `when` of each downloaded patch
    to the same condition without the kit versions ("@4.1.2:4.1.4" ->
    "@4.1.2:4.1.3,=4.1.4"). A downloaded patch whose condition is not in the map
    and could apply to a kit version is an error when the recipe loads: a newer
    builtin recipe must be looked at, not silently fetched from."""
    kit_specs = [Spec(f"{cls.name}@={v}") for v in kit_versions]
    patches = {}
    for when, plist in cls.patches.items():
        for patch in plist:
            new_when = when
            if isinstance(patch, UrlPatch):
                old = str(when).removeprefix(cls.name)
                if old in release_conditions:
                    new_when = Spec(f"{cls.name}{release_conditions[old]}")
                if any(k.intersects(new_when) for k in kit_specs):
                    raise ValueError(
                        f"{cls.name}: the builtin recipe downloads {patch.url} when "
                        f"{old}, which applies to a kit version; add its condition "
                        "without the kit versions to release_conditions")
            patches.setdefault(new_when, []).append(patch)
    cls.patches = patches
