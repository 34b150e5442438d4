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


#: A site's own ReFrame configuration (the shape of a site's reframe_settings.py): its
#: systems are taken, its environments replaced by the builds'.
SITE_CONFIG = '''
site_configuration = {
    "systems": [{
        "name": "daint-like",
        "descr": "the site's own",
        "hostnames": ["^login[0-9]+$"],
        "modules_system": "nomod",
        "partitions": [
            {"name": "normal", "scheduler": "slurm", "launcher": "srun",
             "access": ["-p normal"], "environs": ["PrgEnv-gnu"], "max_jobs": 100},
            {"name": "mpi", "scheduler": "squeue", "launcher": "mpirun",
             "access": ["-p mpi"], "environs": ["PrgEnv-gnu"]},
        ],
    }],
    "environments": [{"name": "PrgEnv-gnu", "cc": "cc"}],
}
'''


@pytest.mark.reframe
def test_a_sites_own_reframe_configuration_gives_its_systems(systems_dir, tmp_path,
                                                             monkeypatch, buildset):
    config = tmp_path / "site_settings.py"
    config.write_text(SITE_CONFIG)
    monkeypatch.setenv("MPIMATRIX_REFRAME_CONFIG", str(config))
    (system,) = site_systems(["openmpi-4_1_4-debian", "mpich-4_0_2-debian"])
    normal, mpi = system["partitions"]
    assert system["descr"] == "the site's own" and normal["access"] == ["-p normal"]
    assert normal["environs"] == mpi["environs"] == ["openmpi-4_1_4-debian",
                                                     "mpich-4_0_2-debian"]
    assert normal["max_jobs"] == 100  # the site's own setting stays
    assert normal["launcher"] == "srun" and mpi["launcher"] == "build-mpiexec"
    proc, _ = run_reframe(tmp_path, "--system=daint-like:mpi", "-n", "MpiPlacementCheck", "-l",
                          env={"MPIMATRIX_REFRAME_CONFIG": str(config)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "~daint-like:mpi+openmpi-4_1_4-debian" in proc.stdout, proc.stdout[-2000:]
    config.write_text("site_configuration = {'environments': []}\n")
    with pytest.raises(BuildError, match="no `systems` list") as err:
        site_systems(["e"])
    assert str(config) in str(err.value) and "MPIMATRIX_REFRAME_CONFIG" in str(err.value)
