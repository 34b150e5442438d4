"""What changed between two sessions' software: the record each session keeps, the
store that keeps it once, and the difference per build.

The two locks are real: the project's kit rows (builds/spack/kit.py KIT_ROWS) concretized
with Spack 1.1.0 from the offline kit, debian-local overlay, into
fixtures/spack/kit-rows-v6.spack.lock; then the same rows with the MVAPICH2 row's IMB
built with `cflags=-O3` (`... ^mvapich2 fabrics=nemesis ^intel-mpi-benchmarks
cflags=-O3`) into kit-rows-imb-O3-v6.spack.lock. The Debian packages are this machine's,
read by dpkg-query; one test puts a dpkg-query in front of the real one that answers a
newer libucx0 (the package manager's answer is faked, the difference is not).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import FIXTURES

from mpimatrix.builds.software import SoftwareRecord, software_of
from mpimatrix.builds.spack.lock_builds import builds_from_lock
from mpimatrix.builds.spack.lockfile import read_lock
from mpimatrix.results.software_diff import MACHINE, SoftwareChange, software_changes
from mpimatrix.results.software_store import (
    Store,
    software_dir,
    store_software,
    stored_software,
)

BEFORE = FIXTURES / "spack" / "kit-rows-v6.spack.lock"
AFTER = FIXTURES / "spack" / "kit-rows-imb-O3-v6.spack.lock"
MVAPICH2 = "mvapich2-2.3.7-1-kit-nemesis-gcc12"


def _lock_record(path: Path) -> SoftwareRecord:
    builds, _ = builds_from_lock(path, spack=False, prefixes={})
    return software_of(builds)


def test_two_real_locks_name_the_one_changed_dependency_for_its_build_only():
    old, new = _lock_record(BEFORE), _lock_record(AFTER)
    assert sorted(new.builds) == ["mpich-4.0.2-ext-gcc12", MVAPICH2,
                                     "openmpi-4.1.4-ext-gcc12"]
    locks = {lk.sha256: lk for lk in map(read_lock, (BEFORE, AFTER))}
    changes = software_changes(old, new, locks.get)
    assert changes == [SoftwareChange(
        MVAPICH2, "intel-mpi-benchmarks@2021.7 (spack): cflags (none) -> -O3")]
    assert software_changes(old, old, locks.get) == []


def test_the_store_keeps_a_record_and_a_lock_once(tmp_path):
    record = _lock_record(AFTER)
    ident = store_software(record, [AFTER], tmp_path)
    files, size = _store_size(tmp_path)
    assert store_software(record, [AFTER], tmp_path) == ident  # the next unchanged night
    assert _store_size(tmp_path) == (files, size) and files == 2
    assert Store(tmp_path).software(ident) == record
    assert stored_software(ident, tmp_path) == record.to_json()  # as stored
    lock = Store(tmp_path).lock(read_lock(AFTER).sha256)
    assert lock is not None and lock.sha256 == read_lock(AFTER).sha256
    assert len(lock.nodes) == len(read_lock(AFTER).nodes)
    assert size < 12_000, size  # the lock gzipped (25 KB raw) and the record


def test_a_lock_missing_from_the_store_is_said_not_guessed(tmp_path):
    old, new = _lock_record(BEFORE), _lock_record(AFTER)
    after = read_lock(AFTER)
    changes = software_changes(old, new, {after.sha256: after}.get)
    texts = {c.text for c in changes}
    sha = read_lock(BEFORE).sha256[:12]
    assert len(texts) == 1, texts  # the same sentence for each build of the lock
    assert f"lock {sha} is not in the results store, so what changed in it cannot be " \
           "said" in texts.pop()


def _debian_builds(buildset) -> list:
    debian = [b for b in buildset.builds if b.provenance == "debian"]
    if not debian or not shutil.which("dpkg-query"):
        pytest.skip("no Debian MPI (apt install mpich openmpi-bin) or no dpkg-query")
    return buildset.builds


def fake_dpkg_query(directory: Path, package: str, version: str) -> Path:
    """A dpkg-query that answers as the real one, but `version` for `package`."""
    directory.mkdir(parents=True, exist_ok=True)
    real = shutil.which("dpkg-query")
    script = directory / "dpkg-query"
    script.write_text(f"#!/bin/sh\n{real} \"$@\" | sed 's/^{package}\\t.*/{package}\\t"
                      f"{version}/'\n")
    script.chmod(0o755)
    return directory


def test_a_debian_package_change_is_named_for_the_builds_that_load_it(buildset, tmp_path,
                                                                       monkeypatch):
    builds = _debian_builds(buildset)
    old = software_of(builds)
    mpich = old.builds["mpich-4.0.2-debian"]
    assert str(mpich.debs["libmpich12"]).startswith("4.0.2")
    loads_ucx = {name for name, b in old.builds.items() if "libucx0" in b.debs}
    assert "mpich-4.0.2-debian" in loads_ucx  # ch4:ucx
    fake = fake_dpkg_query(tmp_path / "bin", "libucx0", "1.99.0-1~test")
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    new = software_of(builds)
    changes = software_changes(old, new, lambda sha: None)
    was = mpich.debs["libucx0"]
    assert {c.build for c in changes} == loads_ucx, changes
    assert all(c.text == f"libucx0 (deb): {was} -> 1.99.0-1~test" for c in changes), changes
    # the PyPI wheels bundle their own libraries: they record the wheel, not libucx0
    wheels = {n: b.wheels for n, b in new.builds.items() if b.record["provenance"] == "pypi"}
    assert all(wheels.values()) and not set(wheels) & loads_ucx


def test_a_machine_change_is_every_builds(buildset):
    record = software_of(buildset.builds)
    newer = replace(record, machine={**record.machine, "kernel": "7.0.0-test"})
    changes = software_changes(record, newer, lambda sha: None)
    assert changes == [SoftwareChange(MACHINE, f"the machine's kernel: "
                                               f"{record.machine['kernel']} -> 7.0.0-test")]


def _store_size(results) -> tuple[int, int]:
    """(files, bytes) of the software store."""
    files = [p for p in software_dir(results).rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)
