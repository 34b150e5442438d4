"""The versions a Spack site overlay provides as externals (shims.yaml, packages.yaml),
which the kit scope allows beside the kit's own versions (builds/spack/kit.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from mpimatrix.builds.spack.kit import _requirements
from mpimatrix.builds.spack.site_overlay import external_releases


def test_debian_local_has_the_debian_mpis_its_site_mpis_name():
    ext = external_releases("debian-local")
    assert ext["openmpi"] == ("4.1.4",) and ext["mpich"] == ("4.0.2",)
    definitions = (Path(__file__).resolve().parents[1]
                   / "site_config/spack/debian-local/definitions.yaml").read_text()
    assert "site_mpis: [openmpi@=4.1.4, mpich@=4.0.2]" in definitions


def test_a_site_of_its_own_shims_and_externals(tmp_path):
    site = tmp_path / "site_config" / "spack" / "mine"
    site.mkdir(parents=True)
    (site / "shims.yaml").write_text(yaml.safe_dump({"shims": {
        "ompi": {"package": "openmpi", "spec": "openmpi@=5.0.3+pmi fabrics=ucx"},
        "broken": "not a mapping"}}))
    (site / "packages.yaml").write_text(yaml.safe_dump({"packages": {
        "openmpi": {"externals": [{"spec": "openmpi@4.1.6~cuda", "prefix": "/opt/o"}]},
        "mpich": {"buildable": False},
        "gcc": {"externals": [{"spec": "gcc@13.3.0 languages:='c,c++'"}]}}}))
    ext = external_releases("mine", tmp_path)
    assert ext == {"openmpi": ("4.1.6", "5.0.3"), "gcc": ("13.3.0",)}
    req = _requirements({"openmpi": ["@=4.1.4-kit"], "mvapich2": ["@=2.3.7-1-kit"]}, ext)
    assert req == {"openmpi": {"require": [{"any_of": ["@=4.1.4-kit", "@=4.1.6", "@=5.0.3"]}]},
                   "mvapich2": {"require": "@=2.3.7-1-kit"}}


def test_a_site_without_overlay_files_has_no_externals(tmp_path):
    assert external_releases("nowhere", tmp_path) == {}
