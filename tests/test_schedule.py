"""`mpimatrix schedule`: the scheduler files of site_config/schedule/ filled in for this
checkout, each checked by the tool that reads it where this machine has one (cron's
line by tests/test_site_path.py on the emulated cluster, and scrontab by Slurm there;
systemd's units by systemd-analyze; GitLab's pipeline as YAML against what GitLab
requires of a job)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mpimatrix.paths import project_root

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
NIGHTLY = f"cd {project_root()} && .venv/bin/mpimatrix nightly"


def schedule(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([MPIMATRIX, "schedule", *args], capture_output=True, text=True)


def test_cron_runs_the_nightly_from_this_checkout_at_the_time_given():
    proc = schedule("cron", "--at", "2:05")
    assert proc.returncode == 0, proc.stderr
    lines = [x for x in proc.stdout.splitlines() if x and not x.startswith("#")]
    assert lines == [f"05 02 * * * {NIGHTLY}"]
    assert "@" not in proc.stdout.replace("hpc-perf@example.org", "")
    every = schedule("cron", "--every-minute").stdout.splitlines()[-1]
    assert every == f"* * * * * {NIGHTLY}"


def test_scrontab_names_its_partition_time_limit_and_output():
    out = schedule("scrontab", "--at", "23:59", "--partition", "service", "--time-limit",
                   "2h").stdout
    assert "#SCRON --partition=service" in out and "#SCRON --time=120" in out
    assert f"59 23 * * * {NIGHTLY}" in out and "/nightly/scrontab-%j.out" in out


@pytest.mark.parametrize("args,words", [
    (["cron", "--at", "25:00"], "give the time as HH:MM"),
    (["cron", "--time-limit", "forever"], "give minutes or hours"),
])
def test_a_bad_time_is_refused(args, words):
    proc = schedule(*args)
    assert proc.returncode == 2 and words in proc.stderr


def test_the_systemd_units_are_valid(tmp_path):
    out = schedule("systemd", "--at", "01:30", "--time-limit", "90m").stdout
    parts = out.split("# ---- ")
    units = {p.splitlines()[0]: "\n".join(p.splitlines()[1:]) + "\n" for p in parts[1:]}
    assert set(units) == {"mpimatrix-nightly.service", "mpimatrix-nightly.timer"}
    service = units["mpimatrix-nightly.service"]
    assert f"ExecStart={project_root()}/.venv/bin/mpimatrix nightly" in service
    assert "TimeoutStartSec=5400" in service and "SuccessExitStatus=1 4 5" in service
    assert "OnCalendar=*-*-* 01:30:00" in units["mpimatrix-nightly.timer"]
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (Debian systemd): the units' text is "
                    "checked, not their syntax")
    for name, text in units.items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run([analyze, "verify", "--man=no", *(str(tmp_path / n) for n in units)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_gitlab_pipeline_is_a_scheduled_job_keeping_its_report():
    pipeline = yaml.safe_load(schedule("gitlab", "--runner-tag", "login01").stdout)
    job = pipeline["mpimatrix-nightly"]
    assert job["tags"] == ["login01"]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "schedule"'}]
    assert job["script"][-1] == ".venv/bin/mpimatrix nightly"
    assert job["allow_failure"] == {"exit_codes": [4]} and job["timeout"] == "6h"
    assert "results/reports/nightly.html" in job["artifacts"]["paths"]
