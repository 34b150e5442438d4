"""Known faults belong to the MPI, not to a build's name or provenance: the same MPI
found on the machine, as a Spack external or built by Spack with the same fabric has
the same faults (builds/known_faults.py, suites/osu/known_issues.py). And the launch
environment's workaround for Debian's Open MPI 4.1 one-sided defaults follows the MCA
file that build reads (rfm/launchers.py rank_env). Records only; no MPI runs."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from helpers import FIXTURES

from mpimatrix.builds import discovery as discover
from mpimatrix.builds.known_faults import HANG_AFTER_RESULTS, known_fault
from mpimatrix.builds.record import BuildRecord
from mpimatrix.builds.spack.lock_builds import builds_from_lock
from mpimatrix.rfm.launchers import OSC_VAR, mca_params_file, osc_setting, rank_env
from mpimatrix.suites.osu.catalogue import BY_NAME
from mpimatrix.suites.osu.known_issues import known_issues

LOCK = FIXTURES / "spack" / "debian-local-v6.spack.lock"
DEBIAN_MCA = Path("/etc/openmpi/openmpi-mca-params.conf")


def _script(path: Path, text: str) -> None:
    path.write_text(f"#!/bin/sh\n{text}\n")
    path.chmod(0o755)


@pytest.fixture(scope="module")
def discovered(tmp_path_factory) -> BuildRecord:
    """Debian's MPICH 4.0.2 as discovery records it (a stand-in bin directory whose
    mpichversion answers as Debian's does)."""
    bindir = tmp_path_factory.mktemp("debian-bin")
    _script(bindir / "mpichversion", "printf 'MPICH Version:    \\t4.0.2\\n"
                                     "MPICH Device:    \\tch4:ucx\\n'")
    for tool in ("mpicc.mpich", "mpiexec.mpich"):
        _script(bindir / tool, "exit 0")
    builds, _ = discover.debian_builds(str(bindir))
    (rec,) = builds
    assert (rec.name, rec.provenance, rec.fabric) == ("mpich-4.0.2-debian", "debian", "ch4:ucx")
    return rec


@pytest.fixture(scope="module")
def spack_rows(tmp_path_factory) -> dict[str, BuildRecord]:
    """The lock's rows: the Debian MPICH 4.0.2 external, and the MPICH 4.3.2 source
    builds (ch4:ucx, ch4:ofi, ch3:tcp) relabelled 4.0.2, as MPICH 4.0.2 built by Spack
    with each device would be recorded."""
    data = json.loads(LOCK.read_text())
    for node in data["concrete_specs"].values():
        if node["name"] == "mpich" and node["version"] == "4.3.2":
            node["version"] = "4.0.2"
    lock = tmp_path_factory.mktemp("lock") / "spack.lock"
    lock.write_text(json.dumps(data))
    recs, _ = builds_from_lock(lock, spack=False, prefixes={})
    return {r.name: r for r in recs}


# -- the MPICH 4.0 finalize hang ----------------------------------------------------------------
def test_the_finalize_hang_is_known_for_mpich_4_0_ch4_ucx_whatever_its_provenance(
        discovered, spack_rows):
    ext = spack_rows["mpich-4.0.2-ext-gcc12"]  # Debian's MPICH as a Spack external
    built = spack_rows["mpich-4.0.2-ucx-gcc12"]  # MPICH 4.0.2 ch4:ucx built by Spack
    assert (ext.provenance, ext.fabric) == ("spack", "ch4:ucx")
    assert (built.provenance, built.fabric, built.dag_hash != ext.dag_hash) == (
        "spack", "ch4:ucx", True)
    for rec in (discovered, ext, built):
        fault = known_fault(rec, 2, HANG_AFTER_RESULTS)
        assert fault is not None, rec.name
        assert fault.reason.startswith("MPICH 4.0.x (ch4:ucx) hangs in MPI_Finalize")
        assert "gdb" in fault.evidence and "Debian mpich 4.0.2" in fault.evidence
        assert known_fault(rec, 4, HANG_AFTER_RESULTS) is fault
        assert known_fault(rec, 1, HANG_AFTER_RESULTS) is None  # intranode: new
        assert known_fault(rec, 2, "crash") is None
    # with several netmods, ucx among them
    assert known_fault(dataclasses.replace(discovered, fabric="ch4:ofi+ucx"), 2,
                       HANG_AFTER_RESULTS)


def test_the_finalize_hang_is_not_known_for_other_devices_versions_or_families(spack_rows):
    # ch3 and ch4:ofi close no UCX endpoints in MPI_Finalize: a hang there is new
    for name in ("mpich-4.0.2-ch3-tcp-gcc12", "mpich-4.0.2-ofi-gcc12"):
        rec = spack_rows[name]
        assert rec.version == "4.0.2" and known_fault(rec, 2, HANG_AFTER_RESULTS) is None, name
    later = dataclasses.replace(spack_rows["mpich-4.0.2-ucx-gcc12"], version="4.3.2")
    assert known_fault(later, 2, HANG_AFTER_RESULTS) is None
    assert known_fault(spack_rows["openmpi-4.1.4-ext-gcc12"], 2, HANG_AFTER_RESULTS) is None
    # a record that does not say its fabric (a builds file without one) is not assumed
    unsaid = BuildRecord("site-mpich", "mpich", "4.0.2", "site", "/opt/mpich",
                         "/opt/mpich/bin/mpicc", "/opt/mpich/bin/mpiexec", "hydra")
    assert known_fault(unsaid, 2, HANG_AFTER_RESULTS) is None
    assert known_fault(dataclasses.replace(unsaid, fabric="ch4:ucx"), 2, HANG_AFTER_RESULTS)


def test_osu_known_issues_of_mpich_4_0_follow_the_mpi_too(discovered, spack_rows):
    """osu_init is skipped between nodes (it hangs in MPI_Finalize), osu_acc_latency's
    validation failure is expected, on every MPICH 4.0 ch4:ucx row, not on ch3."""
    for rec in (discovered, spack_rows["mpich-4.0.2-ext-gcc12"],
                spack_rows["mpich-4.0.2-ucx-gcc12"]):
        (skip,) = known_issues(BY_NAME["init"], rec.family, rec.version, "7.4", 2, rec.fabric)
        assert skip.action == "skip", rec.name
        assert not known_issues(BY_NAME["init"], rec.family, rec.version, "7.4", 1,
                                rec.fabric)
        (acc,) = known_issues(BY_NAME["acc_latency"], rec.family, rec.version, "7.4", 1,
                              rec.fabric)
        assert acc.action == "xfail", rec.name
    ch3 = spack_rows["mpich-4.0.2-ch3-tcp-gcc12"]
    for bench in ("init", "acc_latency"):
        assert not known_issues(BY_NAME[bench], "mpich", "4.0.2", "7.4", 2, ch3.fabric)


# -- Open MPI 4.1's one-sided component between nodes ---------------------------------------------
def _openmpi(prefix: Path, version: str = "4.1.8", **kw) -> BuildRecord:
    return BuildRecord(f"openmpi-{version}-x", "openmpi", version, "spack", str(prefix),
                       str(prefix / "bin" / "mpicc"), str(prefix / "bin" / "mpirun"),
                       "openmpi", **kw)


@pytest.mark.parametrize("conf,env", [
    ("osc = ^ucx,pt2pt", {OSC_VAR: "^ucx"}),  # Debian's: pt2pt allowed, ucx still not
    ("# comment\nosc=^pt2pt   # the only exclusion\n", {OSC_VAR: ""}),  # "" = all
    ("osc = sm,rdma\n", {OSC_VAR: "sm,rdma,pt2pt"}),
    ("osc = ^ucx\n", {}),  # pt2pt is allowed already
    ("osc = sm,pt2pt\n", {}),
    ("btl = ^openib\n", {}),  # no osc setting: Open MPI's default, every component
])
def test_open_mpi_4_whose_mca_defaults_exclude_pt2pt_gets_it_back(tmp_path, monkeypatch,
                                                                  conf, env):
    monkeypatch.delenv(OSC_VAR, raising=False)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "openmpi-mca-params.conf").write_text(conf)
    rec = _openmpi(tmp_path)
    assert mca_params_file(rec) == tmp_path / "etc" / "openmpi-mca-params.conf"
    assert rank_env(rec) == env
    # Open MPI 5 has no pt2pt (osc/rdma runs over TCP there); other MPIs read no such file
    assert rank_env(_openmpi(tmp_path, "5.0.8")) == {}
    assert rank_env(dataclasses.replace(rec, family="mpich", launcher_style="hydra")) == {}


def test_an_osc_setting_of_the_user_or_the_record_wins(tmp_path, monkeypatch):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "openmpi-mca-params.conf").write_text("osc = ^ucx,pt2pt\n")
    monkeypatch.delenv(OSC_VAR, raising=False)
    assert rank_env(_openmpi(tmp_path, env={OSC_VAR: "rdma"})) == {}
    assert rank_env(_openmpi(tmp_path / "nothing-here")) == {}  # no file
    monkeypatch.setenv(OSC_VAR, "pt2pt")
    assert rank_env(_openmpi(tmp_path)) == {}
    assert osc_setting("osc = a\nosc = ^b\n") == "^b" and osc_setting("oscx = a") is None


@pytest.mark.skipif(not (DEBIAN_MCA.exists() and Path("/usr/bin/mpirun.openmpi").exists()),
                    reason="Debian's Open MPI not installed")
def test_debian_open_mpi_found_or_as_spack_external_reads_etc_openmpi(spack_rows, tmp_path,
                                                                      monkeypatch):
    """Both rows of Debian's Open MPI 4.1.4 read /etc/openmpi's defaults (openmpi-bin
    4.1.4-3: `osc = ^ucx,pt2pt`) and get pt2pt back; the external through a prefix of
    links (the shims `mpimatrix spack shims` makes)."""
    monkeypatch.delenv(OSC_VAR, raising=False)
    builds, _ = discover.debian_builds()
    found = next(b for b in builds if b.family == "openmpi")
    shim = tmp_path / "shim"
    (shim / "bin").mkdir(parents=True)
    (shim / "bin" / "mpirun").symlink_to("/usr/bin/mpirun.openmpi")
    (shim / "lib").symlink_to(Path(found.prefix) / "lib")
    ext = dataclasses.replace(spack_rows["openmpi-4.1.4-ext-gcc12"], prefix=str(shim),
                              launcher=str(shim / "bin" / "mpirun"))
    expected = rank_env(_debian_like(tmp_path))
    for rec in (found, ext):
        assert mca_params_file(rec) == DEBIAN_MCA, rec.name
        assert rank_env(rec) == expected, rec.name
    if osc_setting(DEBIAN_MCA.read_text()) == "^ucx,pt2pt":  # as shipped
        assert expected == {OSC_VAR: "^ucx"}


def _debian_like(tmp_path: Path) -> BuildRecord:
    """A build of its own whose MCA file is a copy of Debian's."""
    (tmp_path / "copy" / "etc").mkdir(parents=True)
    shutil.copy(DEBIAN_MCA, tmp_path / "copy" / "etc" / "openmpi-mca-params.conf")
    return _openmpi(tmp_path / "copy", "4.1.4")
