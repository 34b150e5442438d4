"""MPI-IO end to end, for real: `mpimatrix run --mode full -t mpiio` on Debian's Open
MPI, 2 ranks on this node, 64 KiB per rank to the I/O cache, the three ways of writing,
contiguous and strided. The MpiioBenchBuild fixture compiles the program with the
build's wrapper; every case verifies what it wrote, and its median bandwidth, with the
spread over the trials, reaches the run record and the summary table. About 10 s.
(--mode full: the strided cases are not in the quick modes; the contiguous ones are.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import main_job_env

pytestmark = [pytest.mark.mpi, pytest.mark.reframe]

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
BUILD = "openmpi-4.1.4-debian"
CASES = r"^MpiioCheck%placement=intranode%mode=\w+%layout=\w+%sync=cache%size=65536%where=stage$"


def test_three_modes_contiguous_and_strided_pass_with_values(buildset, tmp_path):
    if BUILD not in {b.name for b in buildset.builds}:
        pytest.skip(f"no {BUILD} on this machine (apt install openmpi-bin libopenmpi-dev)")
    results = tmp_path / "results"
    env = main_job_env(results, None)
    proc = subprocess.run([MPIMATRIX, "run", "--mode", "full", "--no-confirm",
                           "--only", f"^{re.escape(BUILD)}$", "--",
                           "-t", "mpiio", "-n", CASES],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "1 probe build(s)" in proc.stdout, proc.stdout[-1500:]  # MpiioBenchBuild
    report = json.loads((results / "reports" / "latest.json").read_text())
    cases = {tc["benchmark"]: tc for r in report["runs"] for tc in r["testcases"]
             if tc["name"].startswith("MpiioCheck")}
    assert set(cases) == {f"mpiio-{m}-{lay}-cache" for m in ("shared", "perfile", "gather")
                          for lay in ("contiguous", "strided")}, sorted(cases)
    for name, tc in cases.items():
        assert tc["result"] == "pass", (name, tc["fail_reason"])
        assert {"mpiio", "intranode", "mpiio-stage"} <= set(tc["tags"])
        # the main job's subset: the three ways of writing, contiguous
        assert ("quick" in tc["tags"]) == ("-contiguous-" in name), (name, tc["tags"])
        values = {k.rsplit(":", 1)[-1]: v for k, v in tc["perfvalues"].items()}
        bw = values["write_bw_64KiB"]
        assert bw[0] > 0 and bw[4] == "MB/s", bw
        assert tc["perf_info"]["write_bw_64KiB"] == {
            "quantity": "write_bandwidth", "unit": "MB/s", "better": "higher",
            "size": "65536"}
        spread = {k: float(v) for k, v in tc["mpiio_summary"].items()}
        assert spread["trials"] == 20
        assert spread["bw_MBps_min"] <= bw[0] <= spread["bw_MBps_max"]
        assert spread["bw_MBps_median"] == pytest.approx(bw[0])
        # written in the stage directory, and nothing left there
        stage = Path(tc["io_dir"])
        assert results in stage.parents, stage
        assert not list(stage.glob("mpimatrix-mpiio.*"))
        row = re.search(rf"^{re.escape(BUILD)}\s+Mpiio {re.escape(name)}\s+default\s+"
                        r"intranode\s+pass\s+.*write_bw_64KiB=\S+MB/s", proc.stdout, re.M)
        assert row, proc.stdout[-3000:]
