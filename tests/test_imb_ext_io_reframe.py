"""IMB-EXT and IMB-IO end to end, for real: `mpimatrix run --mode full -t imb-ext|imb-io`
(they are not in the quick modes) with the offline kit as IMB's source, one benchmark of
each (EXT Unidir_Put; IO S_Read_Indv, whose table is a single process's) on Debian's Open
MPI, whose IMB the ImbFromSource fixture builds, and on the Intel MPI wheel, whose IMB has
neither program: those cases are skipped, naming why and what gives them. IMB is built
into a cache of the test's own (about a minute), then the cases run (about 30 s)."""

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
BUILD, IMPI = "openmpi-4.1.4-debian", "impi-2021.18.1-pypi"
BENCHMARKS = ("EXT:Unidir_Put", "IO:S_Read_Indv")
CASES = r"^ImbCheck%placement=intranode%benchmark=(EXT:Unidir_Put|IO:S_Read_Indv)$"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_ext_and_io_pass_with_values_and_skip_on_the_intel_wheel(buildset, tmp_path):
    kit = offline_kit_or_skip()
    if not (kit / "sources" / "intel-mpi-benchmarks").is_dir():
        pytest.skip(f"the offline kit {kit} has no sources/intel-mpi-benchmarks")
    names = {b.name for b in buildset.builds}
    if BUILD not in names:
        pytest.skip(f"no {BUILD} on this machine (apt install openmpi-bin libopenmpi-dev)")
    builds = [BUILD] + [IMPI] * (IMPI in names)
    results = tmp_path / "results"
    env = main_job_env(results, tmp_path / "cache")
    only = "^(" + "|".join(re.escape(b) for b in builds) + ")$"
    proc = subprocess.run([MPIMATRIX, "run", "--mode", "full", "--no-confirm", "--sources",
                           str(kit), "--only", only, "--",
                           "-t", "^imb-(ext|io)$", "-n", CASES],
                          env=env, capture_output=True, text=True, timeout=600)
    out = ANSI.sub("", proc.stdout + proc.stderr)
    assert proc.returncode == 0, out[-4000:]
    report = json.loads((results / "reports" / "latest.json").read_text())
    cases = {(tc["environ"], tc["benchmark"]): tc for r in report["runs"]
             for tc in r["testcases"] if tc["name"].startswith("ImbCheck")}
    env_of = {b.name: b.environ_name for b in buildset.builds}
    assert set(cases) == {(env_of[b], n) for b in builds for n in BENCHMARKS}, sorted(cases)

    for name in BENCHMARKS:
        tc = cases[(env_of[BUILD], name)]
        assert tc["result"] == "pass", (name, tc["fail_reason"])
        suite = name.split(":")[0].lower()
        assert {"imb", f"imb-{suite}", "intranode"} <= set(tc["tags"])
        assert "quick" not in tc["tags"]
        assert tc["imb_version"].endswith("(mpimatrix bench-build)"), tc["imb_version"]
        values = {k.rsplit(":", 1)[-1]: v for k, v in tc["perfvalues"].items()}
        small = "latency_8B" if suite == "ext" else "t_avg_8B"
        assert set(values) == {small, "bandwidth_4MiB"}, values
        assert values[small][0] > 0 and values[small][4] == "us"
        assert values["bandwidth_4MiB"][0] > 0 and values["bandwidth_4MiB"][4] == "MB/s"
        assert tc["perf_info"]["bandwidth_4MiB"]["better"] == "higher"
        row = re.search(rf"^{re.escape(BUILD)}\s+Imb {re.escape(name)}\s+default\s+"
                        rf"intranode\s+pass\s+.*{small}=\S+us bandwidth_4MiB=\S+MB/s", out,
                        re.M)
        assert row, out[-3000:]

    # the whole curves: both modes of Unidir_Put, 1 B and 2 B as 4 B rows; one table
    # of one process for S_Read_Indv (a Read has no NON-AGGREGATE table), 1 B .. 4 MiB
    put = cases[(env_of[BUILD], "EXT:Unidir_Put")]["curve"]
    assert set(put) == {"NON-AGGREGATE", "AGGREGATE"}
    assert [r["size"] for r in put["NON-AGGREGATE"]][:4] == [4, 4, 4, 8]
    assert put["NON-AGGREGATE"][-1]["size"] == 4194304
    read = cases[(env_of[BUILD], "IO:S_Read_Indv")]["curve"]
    assert set(read) == {"AGGREGATE"} and len(read["AGGREGATE"]) == 23
    assert all(r["bandwidth"] >= 0 and r["t"] > 0 for r in read["AGGREGATE"])

    if IMPI in names:
        for name in BENCHMARKS:
            tc = cases[(env_of[IMPI], name)]
            assert tc["result"] == "skip", (name, tc["result"])
            prog = f"IMB-{name.split(':')[0]}"
            line = next((ln for ln in out.splitlines() if "SKIP" in ln and name in ln
                         and env_of[IMPI] in ln), "")
            assert f"{name} on {IMPI}: " in line and f"has no {prog}: the Intel MPI wheel " \
                "ships IMB-MPI1, -NBC, -RMA, -P2P and -MT only" in line, out[-3000:]
            assert "mpimatrix bench-build --suite imb" in line
            # the run record keeps the reason (ReFrame's report has no skip message)
            why = tc["skip_reason"]
            assert f"{name} on {IMPI}: " in why and f"has no {prog}: the Intel MPI " in why, why
