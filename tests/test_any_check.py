"""Checks that know nothing of mpimatrix (a site's own, ReFrame's library ones) run under
the generated configuration: the `build-mpiexec` launcher launches them with the build of
the environment they run in."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import FIXTURES, run_reframe

pytestmark = [pytest.mark.mpi, pytest.mark.reframe]


def test_a_check_that_knows_no_build_runs_with_its_environments_launcher(buildset, tmp_path):
    proc, report = run_reframe(tmp_path, "-c", str(FIXTURES / "checks" / "any_check.py"),
                               "--keep-stage-files", "-r", timeout=900)
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    cases = [tc for run in report["runs"] for tc in run["testcases"]]
    by_env = {tc["environ"]: tc for tc in cases}
    assert set(by_env) == {b.environ_name for b in buildset.builds}, proc.stdout[-3000:]
    for b in buildset.builds:
        tc = by_env[b.environ_name]
        assert tc["result"] == "pass", (b.name, tc.get("fail_reason"))
        script = (Path(tc["stagedir"]) / "rfm_job.sh").read_text()
        # the build's own launcher, with the job's two ranks on one node
        assert b.launcher in script and ("-np 2" in script or "-n 2" in script), script
