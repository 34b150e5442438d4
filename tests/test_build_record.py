"""Build records: the contract between build sources and the ReFrame config."""

import json

import pytest

from mpimatrix.builds.builds_file import load_builds_file
from mpimatrix.builds.record import (
    BuildError,
    BuildRecord,
    environ_name,
    why_unusable,
)

BASE = dict(name="mpich-4.0.2-debian", family="mpich", version="4.0.2", provenance="debian",
            prefix="/usr", cc="/usr/bin/mpicc.mpich", launcher="/usr/bin/mpiexec.mpich",
            launcher_style="hydra")


def test_round_trip_and_names(tmp_path):
    rec = BuildRecord.from_dict({**BASE, "benchmarks": {"imb": {"bin_dir": "/x"}}})
    assert rec.environ_name == "mpich-4_0_2-debian"
    assert rec.benchmarks["imb"].suite == "imb"
    assert set(rec.features()) >= {"mpi", "mpich", "debian", "mpich_abi", "imb"}
    f = tmp_path / "builds.json"
    f.write_text(json.dumps({"builds": [rec.to_dict()]}))
    assert load_builds_file(f) == ([rec], [])
    assert environ_name("openmpi-5.0.8-ucx-gcc12") == "openmpi-5_0_8-ucx-gcc12"


def test_library_version_regex_is_exact():
    import re
    rx = BuildRecord.from_dict(BASE).library_version_regex
    assert re.search(rx, "MPICH Version:\t4.0.2|MPICH Release")
    assert not re.search(rx, "MPICH Version:\t4.0.21|")


@pytest.mark.parametrize("change,message", [
    ({"family": "lam"}, "family 'lam' is not one of"),
    ({"launcher_style": "aprun"}, "launcher_style 'aprun' is not one of"),
    ({"cc": ""}, "lacks cc; add them"),
    ({"colour": "blue"}, "unknown fields ['colour']"),
])
def test_bad_records_are_skipped_naming_the_file_and_the_fix(tmp_path, change, message):
    f = tmp_path / "site-builds.yaml"
    good = {**BASE, "name": "good-one"}
    f.write_text(json.dumps({"builds": [{**BASE, **change}, good]}))
    builds, skipped = load_builds_file(f)
    assert [b.name for b in builds] == ["good-one"]  # the good build of the file still runs
    assert len(skipped) == 1
    assert str(f) in skipped[0].reason and message in skipped[0].reason


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(BuildError, match="cannot read builds file"):
        load_builds_file(tmp_path / "nope.yaml")
    bad = tmp_path / "b.yaml"
    bad.write_text("builds: [unclosed")
    with pytest.raises(BuildError, match=f"{bad}: not valid YAML"):
        load_builds_file(bad)
    bad.write_text("just a string")
    with pytest.raises(BuildError, match="expected a list of builds"):
        load_builds_file(bad)


def test_why_a_vanished_prefix_is_unusable(tmp_path):
    rec = BuildRecord.from_dict({**BASE, "prefix": str(tmp_path / "gone")})
    assert why_unusable(rec) == [f"prefix {tmp_path / 'gone'} does not exist "
                                 "(was the build removed or moved?)"]
    rec = BuildRecord.from_dict({**BASE, "prefix": str(tmp_path),
                                 "launcher": str(tmp_path / "mpiexec")})
    assert why_unusable(rec)[-1] == (f"launcher {tmp_path / 'mpiexec'} is missing or not "
                                     "executable")
    rec = BuildRecord.from_dict({**BASE, "unusable": "not installed"})
    assert why_unusable(rec) == ["not installed"]
