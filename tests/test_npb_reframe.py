"""NPB end to end, for real: the main job (`mpimatrix run`, quick mode) with the offline
kit as the source, every kernel at class S on Debian's Open MPI. The NpbFromSource
fixture builds NPB into the cache (once per build and source: about a minute here; later
runs reuse it), every kernel passes NPB's verification, and the Mop/s and times reach
the run record and the summary table."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import main_job_env, offline_kit_or_skip

pytestmark = [pytest.mark.mpi, pytest.mark.reframe]

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
BUILD = "openmpi-4.1.4-debian"
#: The quick mode's NPB on a 2-core node: powers of two on 2 ranks, BT and SP on 1.
CASES = r"^NpbCheck%"
KERNELS = ("IS", "EP", "CG", "FT", "MG", "LU", "BT", "SP")


def test_the_main_job_runs_and_verifies_every_npb_kernel_at_class_s(buildset, tmp_path):
    kit = offline_kit_or_skip()
    if not (kit / "sources" / "npb").is_dir():
        pytest.skip(f"the offline kit {kit} has no sources/npb (NPB3.4.tar.gz)")
    if BUILD not in {b.name for b in buildset.builds}:
        pytest.skip(f"no {BUILD} on this machine (apt install openmpi-bin libopenmpi-dev)")
    env = main_job_env(tmp_path / "results", tmp_path / "cache")
    proc = subprocess.run([MPIMATRIX, "run", "--no-confirm", "--sources", str(kit), "--only",
                           f"^{re.escape(BUILD)}$", "--", "-n", CASES],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    report = json.loads((tmp_path / "results" / "reports" / "latest.json").read_text())
    cases = {tc["benchmark"]: tc for r in report["runs"] for tc in r["testcases"]
             if tc["name"].startswith("NpbCheck")}
    assert sorted(cases) == sorted(f"{k}.S" for k in KERNELS), sorted(cases)
    for name, tc in cases.items():
        assert tc["result"] == "pass", (name, tc["fail_reason"])
        assert tc["npb_summary"]["verification"] == "SUCCESSFUL"
        square = name[:2] in ("BT", "SP")  # a square count of ranks: 1 on 2 cores
        assert tc["npb_summary"]["total_processes"] == ("1" if square else "2"), (
            name, tc["npb_summary"])
        assert tc["npb_version"] == "3.4 (mpimatrix bench-build)"
        assert {"npb", "npb-class-S", "quick"} <= set(tc["tags"])
        values = {k.rsplit(":", 1)[-1]: v for k, v in tc["perfvalues"].items()}
        assert values["mops_total"][0] > 0 and values["mops_total"][4] == "Mop/s"
        assert values["time"][0] >= 0 and values["time"][4] == "s"
        assert tc["perf_info"]["mops_total"]["better"] == "higher"
        placement = "1x1" if square else "intranode"
        row = re.search(rf"^{re.escape(BUILD)}\s+Npb {re.escape(name)}\s+default\s+"
                        rf"{placement}\s+pass\s+.*mops_total=\S+Mop/s time=\S+s",
                        proc.stdout, re.M)
        assert row, proc.stdout[-3000:]
