"""`mpimatrix plan` on this machine: the builds, the system ReFrame selects, its partition,
the placements and test cases of a mode as ReFrame concretizes them, and no duration
estimate before any stored session (the estimate from stored nights: tests/test_site_path.py
on the emulated cluster)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
pytestmark = [pytest.mark.reframe, pytest.mark.mpi]


def plan(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPIMATRIX_RESULTS": str(tmp_path / "results")}
    env.pop("MPIMATRIX_STORE", None)
    return subprocess.run([MPIMATRIX, "plan", *args], env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_plan_of_the_quick_mode_here(tmp_path, buildset):
    proc = plan(tmp_path, "--mode", "quick")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"{len(buildset.builds)} usable" in out.splitlines()[0]
    assert "system local: This machine" in out
    assert "partition default: scheduler local, launcher build-mpiexec" in out
    total = int(re.search(r"mode quick: (\d+) test case\(s\)", out)[1])
    per_check = [int(n) for n in re.findall(r"^  \w+Check\s+(\d+) on", out, re.M)]
    # every placement of the partition: intranode, and the one- and four-rank runs NPB's
    # BT and SP need
    lines = re.findall(r"^  placements on \S+: (.*)$", out, re.M)
    placements = [int(n) for ln in lines for n in re.findall(r"\((\d+)\)", ln)]
    assert total == sum(per_check) == sum(placements) > 0, out
    n = len(buildset.builds)
    assert re.search(rf"^  MpiPlacementCheck\s+{n} on {n} build\(s\)$", out, re.M), out
    assert "duration: no stored session of mode quick on local" in out
    assert not (tmp_path / "results" / "db").exists()  # a plan runs nothing


def test_the_plan_follows_the_runs_selection(tmp_path, buildset):
    one = buildset.builds[0]
    proc = plan(tmp_path, "--only", f"^{re.escape(one.name)}$", "--", "-n",
                "MpiPlacementCheck")
    assert proc.returncode == 0, proc.stderr
    assert "mode quick: 1 test case(s)" in proc.stdout, proc.stdout
    proc = plan(tmp_path, "--only", "no-such-build")
    assert proc.returncode == 2 and "matches none of the builds" in proc.stderr
