"""`mpimatrix nightly`: the night in one command (cli/nightly.py). The night's verdict and
exit code from what the run and `changes` said; a real night on this machine's MPIs with
its summary mailed (through a sendmail on the PATH that keeps what it is handed) and
given to a hook; a night whose builds file is broken says so the same ways, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpimatrix.cli.nightly import verdict

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")


@pytest.mark.parametrize("run_rc,lines,changes_rc,expected", [
    (0, [], 0, ("GREEN", 0)),
    (0, [], 1, ("NEW STEP", 1)),
    (1, ["REGRESSION mpich-4.0.2-debian (the whole build, local:default): +8%"], 0,
     ("REGRESSION", 1)),
    (1, ["FAILED ImbCheck ..."], 0, ("FAILED", 1)),
    (4, ["HOST local:default: every build +14% at once"], 1, ("MACHINE", 4)),
    # the run's own verdict line, where it printed one
    (0, ["VERDICT: WATCH: no regression: all 42 test case(s) passed; 1 value(s) on watch "
         "(exit 0)"], 0, ("WATCH", 0)),
    (4, ["VERDICT: HOST: no regression; the machine ran slow on every build at once: run "
         "again on a quiet machine (exit 4)"], 0, ("HOST", 4)),
    (1, ["REGRESSION mpich-4.0.2-debian (the whole build, local:default): +8%",
         "VERDICT: XPASS: 1 expected failure(s) passed (exit 1)"], 0, ("XPASS", 1)),
    (4, ["VERDICT: DISTURBED: 2 performance regression(s) on a night other programs "
         "disturbed: not judged, run again on a quiet machine (exit 4)"], 0, ("DISTURBED", 4)),
    (2, [], 0, ("BAD INPUT", 2)),
    (3, ["mpimatrix: the results store /x is in use by mpimatrix run pid 7"], 0,
     ("NOT RUN", 3)),
    (143, [], 0, ("INTERRUPTED (signal 15)", 143)),
    (7, [], 0, ("FAILED (run exit 7)", 1)),
])
def test_the_verdict_of_a_night(run_rc, lines, changes_rc, expected):
    assert verdict(run_rc, lines, changes_rc) == expected


@pytest.fixture
def night(tmp_path):
    """A site file, a sendmail that keeps each message, and the environment of a night
    whose results go to tmp_path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sendmail = bin_dir / "sendmail"
    sendmail.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/mail.args\n"
                        f"cat > {tmp_path}/mail.txt\n")
    sendmail.chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MPIMATRIX_", "RFM_"))}
    env.update({"PATH": f"{bin_dir}:{os.environ['PATH']}", "MPIMATRIX_MACHINE_LOCK": "",
                "MPIMATRIX_RESULTS": str(tmp_path / "results"),
                "MPIMATRIX_SITE_FILE": str(tmp_path / "site.yaml")})

    def site(builds: str = "") -> None:
        (tmp_path / "site.yaml").write_text(
            (f"builds: {builds}\n" if builds else "") +
            "nightly:\n  mode: quick\n"
            "  args: [--only, impi, --no-confirm, --, -n, "
            "'MpiPlacementCheck|intranode%benchmark=MPI1:PingPong$']\n"
            "  report_name: tonight\n  mail_to: [hpc-perf@example.org]\n"
            f"  hook: 'echo $MPIMATRIX_NIGHTLY_VERDICT $MPIMATRIX_NIGHTLY_EXIT > "
            f"{tmp_path}/hook.env; cat > {tmp_path}/hook.txt'\n")
    return env, site


@pytest.mark.mpi
@pytest.mark.reframe
def test_a_green_night_runs_judges_reports_mails_and_calls_the_hook(night, tmp_path):
    env, site = night
    site()
    proc = subprocess.run([MPIMATRIX, "nightly"], env=env, capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    record = json.loads((tmp_path / "results/nightly/latest.json").read_text())
    assert record["verdict"] == "GREEN" and record["exit"] == 0
    assert record["steps"] == {"run": 0, "changes": 0, "report": 0}
    log = Path(record["log"]).read_text()
    for step in (" run --mode quick --only impi --no-confirm -- -n 'MpiPlacementCheck|",
                 " changes", " report --html --since 14d --name tonight"):
        assert step in log
    assert log.splitlines()[-1] == proc.stdout.splitlines()[-1] == \
        f"mpimatrix nightly: GREEN (exit 0); log {record['log']}"
    assert (tmp_path / "results/reports/tonight.html").exists()
    mail = (tmp_path / "mail.txt").read_text()
    assert (tmp_path / "mail.args").read_text().split() == ["-t", "-oi"]
    assert "To: hpc-perf@example.org\nSubject: mpimatrix nightly: GREEN\n" in mail
    assert "# MPI regression report tonight" in mail and "**GREEN: no regression" in mail
    assert (tmp_path / "hook.env").read_text().split() == ["GREEN", "0"]
    assert (tmp_path / "hook.txt").read_text() == mail.split("\n\n", 1)[1]


def test_a_night_with_a_broken_builds_file_is_bad_input_and_says_so(night, tmp_path):
    env, site = night
    (tmp_path / "builds.yaml").write_text("builds: [{module: x}\n")  # unclosed
    site(str(tmp_path / "builds.yaml"))
    proc = subprocess.run([MPIMATRIX, "nightly"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    record = json.loads((tmp_path / "results/nightly/latest.json").read_text())
    assert record["verdict"] == "BAD INPUT" and record["steps"] == {"run": 2}
    mail = (tmp_path / "mail.txt").read_text()
    assert "Subject: mpimatrix nightly: BAD INPUT" in mail and str(tmp_path / "builds.yaml") \
        in mail
    assert (tmp_path / "hook.env").read_text().split() == ["BAD", "INPUT", "2"]


def test_a_dry_run_prints_the_night(night, tmp_path):
    env, site = night
    site()
    proc = subprocess.run([MPIMATRIX, "nightly", "--dry-run"], env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"site settings: {tmp_path / 'site.yaml'}"
    assert lines[1].endswith("mpimatrix run --mode quick --only impi --no-confirm -- -n "
                             "'MpiPlacementCheck|intranode%benchmark=MPI1:PingPong$'")
    assert "mailed to hpc-perf@example.org, then hook: echo" in lines[-1]
    assert not (tmp_path / "results" / "nightly").exists()
