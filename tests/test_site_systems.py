"""A site's own Slurm systems (site_config/systems/*.yaml) in the generated config."""

from __future__ import annotations

import shutil

import pytest
from helpers import ROOT, run_reframe

from mpimatrix.builds.record import BuildError
from mpimatrix.site.systems import site_systems

EXAMPLE = ROOT / "site_config" / "systems" / "slurm-cluster.yaml.example"


@pytest.fixture
def systems_dir(tmp_path, monkeypatch):
    d = tmp_path / "systems"
    d.mkdir()
    monkeypatch.setenv("MPIMATRIX_SYSTEMS", str(d))
    return d


def test_example_gets_every_build_and_node_features(systems_dir):
    shutil.copy(EXAMPLE, systems_dir / "mycluster.yaml")
    (system,) = site_systems(["openmpi-5_0_8-ucx-gcc12", "mvapich2-2_3_7-1-mrail-gcc12"])
    compute, mpirun = system["partitions"]
    assert compute["environs"] == ["openmpi-5_0_8-ucx-gcc12", "mvapich2-2_3_7-1-mrail-gcc12"]
    assert mpirun["environs"] == ["openmpi-5_0_8-ucx-gcc12"]  # environs_match
    assert compute["max_jobs"] == 1 and "nodes8" in compute["features"]
    assert compute["launcher"] == "srun" and mpirun["launcher"] == "build-mpiexec"


@pytest.mark.parametrize("text, message", [
    ("name: x\nhostnames: [a]\n", "missing partitions"),
    ("name: x\nhostnames: [a]\npartitions: [{name: p}]\n", "partition p: missing scheduler"),
    ("- just a list\n", "expected one ReFrame system"),
    ("name: [unclosed\n", "cannot read the ReFrame system"),
    ("name: x\nhostnames: [a]\npartitions: [{name: p, scheduler: slurm, launcher: mpirun}]\n",
     "partition p: launcher 'mpirun': use srun .* or build-mpiexec"),
])
def test_bad_system_file_names_the_file(systems_dir, text, message):
    bad = systems_dir / "broken.yaml"
    bad.write_text(text)
    with pytest.raises(BuildError, match=message) as err:
        site_systems(["e"])
    assert str(bad) in str(err.value)


@pytest.mark.reframe
def test_reframe_accepts_the_site_system_and_generates_its_layouts(systems_dir, tmp_path,
                                                                    buildset):
    """ReFrame validates the generated system and the placement parameter grows
    the collective layouts the partitions can host (8 nodes x 64 cores)."""
    shutil.copy(EXAMPLE, systems_dir / "mycluster.yaml")
    proc, _ = run_reframe(tmp_path, "--system=mycluster:compute", "-n", "MpiPlacementCheck",
                          "-l")
    assert proc.returncode == 0, proc.stderr[-2000:]
    for layout in ("intranode", "internode", "8x1", "8x64", "4x32", "1x64"):
        assert f"%placement={layout}" in proc.stdout, proc.stdout[-2000:]
