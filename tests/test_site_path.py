"""The site path end to end, on the emulated cluster treated as a foreign one: root starts
the cluster (with cron on its login node) and plays the site's admins (the MPIs as Lmod
modules, a wheelhouse made on a connected machine); everything else is an ordinary
account created here, on the login node, as a site engineer would do it by the README's
path (b): its own checkout, `scripts/setup.sh` from the wheelhouse without root, a system
file written from the example (only its EDIT values filled), site_config/site.yaml from
its example, `mpimatrix site` and `plan`, then the nightly scheduled with `mpimatrix
schedule cron` in its crontab. Two nights later: each night's record and exit code, jobs
that ran through Slurm as the account, `changes`, the report, the hook; no file of the
account's it cannot write; nothing of it left behind.

Marked cluster (root, namespaces), reframe and mpi; needs Lmod and cron (Debian `lmod`,
`cron`), which CI installs."""

from __future__ import annotations

import calendar
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers import ROOT, require_lmod

from mpimatrix.paths import offline_kit
from mpimatrix.vcluster import cluster, privileges
from mpimatrix.vcluster.layout import Layout

pytestmark = [pytest.mark.cluster, pytest.mark.reframe, pytest.mark.mpi]

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
ACCOUNT = "mmsite"
#: The engineer's edits (run as the account, from its checkout)
FILL = "tests/fixtures/site_path/fill_edit_values.py"
#: Two judged nights take about 4 minutes here; cron starts one each minute.
NIGHTS_TIMEOUT = 1500
#: A night that finds the last one running ends within this many seconds (exit 3).
BUSY_NIGHT = 40


def _require():
    why = privileges.problems()
    if shutil.which("cron", path="/usr/sbin:/usr/bin:/sbin:/bin") is None:
        why.append("cron is not installed (apt-get install cron)")
    if why:
        msg = "site path on the emulated cluster unavailable: " + "; ".join(why)
        if os.environ.get("MPIMATRIX_REQUIRE_CLUSTER"):
            pytest.fail(msg + " (MPIMATRIX_REQUIRE_CLUSTER is set)")
        pytest.skip(msg)
    require_lmod()


def _remove_account() -> None:
    subprocess.run(["crontab", "-u", ACCOUNT, "-r"], capture_output=True)
    subprocess.run(["pkill", "-KILL", "-u", ACCOUNT], capture_output=True)
    subprocess.run(["userdel", "-r", "-f", ACCOUNT], capture_output=True)
    shutil.rmtree(f"/var/tmp/mpimatrix-{ACCOUNT}", ignore_errors=True)


def _copy_checkout(dest: Path) -> None:
    """The project as a clone of it has it (tracked and new files, nothing ignored)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.split(b"\0")
    for rel in (f.decode() for f in files if f):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


@pytest.fixture(scope="module")
def site():
    _require()
    _remove_account()
    top = Path(tempfile.mkdtemp(prefix="mms-", dir="/tmp"))
    top.chmod(0o755)
    lay = Layout.at(top / "c", 2)
    try:
        cluster.up(lay, cron=True)
        subprocess.run(["useradd", "-m", "-s", "/bin/bash", ACCOUNT], check=True)
        home = Path(pwd.getpwnam(ACCOUNT).pw_dir)
        # the site's admins: the MPIs as modules, readable by every account
        env = {**os.environ, "MPIMATRIX_PYPI_MPIS": str(top / "mpis")}
        subprocess.run([MPIMATRIX, "install-pypi-mpis", "impi"], env=env, check=True,
                       capture_output=True, timeout=900)
        subprocess.run([MPIMATRIX, "modules", "write", str(top / "modules")], env=env,
                       check=True, capture_output=True, timeout=300)
        # a connected machine makes the wheelhouse: the login node reaches no index
        subprocess.run([str(ROOT / "scripts" / "wheelhouse.sh"), str(top / "wheels")],
                       check=True, capture_output=True, timeout=900)
        subprocess.run(["chmod", "-R", "a+rX", str(top)], check=True)
        checkout = home / "mpimatrix"
        _copy_checkout(checkout)
        subprocess.run(["chown", "-R", f"{ACCOUNT}:", str(checkout)], check=True)
        yield {"lay": lay, "top": top, "home": home, "checkout": checkout}
    finally:
        _remove_account()
        cluster.down(lay)
        shutil.rmtree(top, ignore_errors=True)


def as_account(site: dict, script: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """`script` in bash as the account on the login node, in its checkout."""
    cmd = [MPIMATRIX, "cluster", "exec", "--dir", str(site["lay"].dir), "head", "--user",
           ACCOUNT, "--", "bash", "-c", f"cd {site['checkout']} && {script}"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_the_account_sets_up_from_the_wheelhouse_and_writes_its_site(site):
    top = site["top"]
    t0 = time.monotonic()
    proc = as_account(site, f"./scripts/setup.sh --no-system-packages --no-pypi-mpis "
                      f"--wheelhouse {top / 'wheels'} && du -sm .venv")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    print(f"\nthe account's setup from the wheelhouse: {time.monotonic() - t0:.0f} s, "
          f".venv {proc.stdout.split()[-2]} MB")
    kit = offline_kit()
    if kit is not None and as_account(site, f"test -r {kit}/README.md").returncode != 0:
        kit = None  # the account cannot read it where it is: no sources for Open MPI's IMB
    proc = as_account(site, f".venv/bin/python {FILL} {top / 'modules'} {kit or ''}")
    assert proc.returncode == 0, proc.stdout + proc.stderr

    proc = as_account(site, ".venv/bin/mpimatrix site")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "system emulated: partitions compute, compute_mpirun <- this host" in proc.stdout, \
        proc.stdout
    assert f"MPIMATRIX_STORE = /var/tmp/mpimatrix-{ACCOUNT}/db" in proc.stdout
    assert "locks work" in proc.stdout and "2 usable" in proc.stdout

    proc = as_account(site, ".venv/bin/mpimatrix plan --mode quick --partition 'compute$' "
                      "-- -x 2x2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "system emulated" in proc.stdout
    assert "partition compute: scheduler squeue-all, launcher srun, nodes 2" in proc.stdout
    assert "internode" in proc.stdout and "2x2" not in proc.stdout
    for env in ("openmpi-4_1_4-debian", "impi-2021_18_1-pypi"):
        assert env in proc.stdout
    assert "no stored session of mode quick on emulated" in proc.stdout


def _nights(checkout: Path) -> list[dict]:
    """The nights whose log ended, oldest first: verdict and exit from the last line."""
    out = []
    for log in sorted((checkout / "results" / "nightly").glob("*.log")):
        last = (log.read_text(errors="replace").strip().splitlines() or [""])[-1]
        if last.startswith("mpimatrix nightly: "):
            word, _, rest = last[len("mpimatrix nightly: "):].partition(" (exit ")
            out.append({"log": log, "verdict": word, "exit": int(rest.split(")")[0])})
    return out


def _running_for(checkout: Path) -> float:
    """Seconds the newest night has run, if it has not ended (0 otherwise)."""
    logs = sorted((checkout / "results" / "nightly").glob("*.log"))
    if not logs:
        return 0.0
    lines = logs[-1].read_text(errors="replace").strip().splitlines()
    if lines and lines[-1].startswith("mpimatrix nightly: "):
        return 0.0
    return time.time() - calendar.timegm(time.strptime(logs[-1].stem, "%Y%m%dT%H%M%SZ"))


def test_the_nightly_scheduled_by_cron_runs_judges_and_reports_twice(site):
    checkout, home = site["checkout"], site["home"]
    proc = as_account(site, "(crontab -l 2>/dev/null; .venv/bin/mpimatrix schedule cron "
                      "--every-minute) | crontab - && crontab -l")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"* * * * * cd {checkout} && .venv/bin/mpimatrix nightly" in proc.stdout
    deadline, scheduled = time.monotonic() + NIGHTS_TIMEOUT, True
    while time.monotonic() < deadline:
        judged = [n for n in _nights(checkout) if n["verdict"] != "NOT RUN"]
        if len(judged) >= 2:
            break
        if judged and scheduled and _running_for(checkout) > BUSY_NIGHT:
            # the second night runs (a busy one ends in seconds): no third
            subprocess.run(["crontab", "-u", ACCOUNT, "-r"], check=True)
            scheduled = False
        time.sleep(5)
    subprocess.run(["crontab", "-u", ACCOUNT, "-r"], capture_output=True)
    nights = _nights(checkout)
    judged = [n for n in nights if n["verdict"] != "NOT RUN"]
    assert len(judged) >= 2, [(n["log"].name, n["verdict"]) for n in nights]
    # a night cron started while the last ran: store busy, exit 3, nothing else done
    for n in nights:
        if n["verdict"] == "NOT RUN":
            assert n["exit"] == 3 and "is in use by" in n["log"].read_text()
    for n in judged[:2]:  # the night's time: from its start (the log's name) to its end
        start = calendar.timegm(time.strptime(n["log"].stem, "%Y%m%dT%H%M%SZ"))
        print(f"night {n['log'].stem}: {n['verdict']} in {n['log'].stat().st_mtime - start:.0f} s")
    # no reference yet: every value reported, none gated; the two nights pass
    for n in judged[:2]:
        text = n["log"].read_text()
        assert n["verdict"] == "GREEN" and n["exit"] == 0, text[-3000:]
        assert "+ " in text and " changes" in text and " report --html" in text
    # wait for a night cron may have started before its line was removed
    deadline = time.monotonic() + 600
    while subprocess.run(["pgrep", "-u", ACCOUNT, "-f", "mpimatrix nightly"],
                         capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "a nightly still runs 10 min after the last"
        time.sleep(5)

    latest = json.loads((checkout / "results/nightly/latest.json").read_text())
    assert latest["exit"] in (0, 3)
    # the jobs ran through Slurm, as the account, on both nodes
    jobs = cluster.run(site["lay"], "head", ["squeue", "-h", "-t", "all", "-u", ACCOUNT,
                                             "-o", "%u %N %T"])
    rows = [line.split() for line in jobs.stdout.splitlines()]
    assert rows and all(r[0] == ACCOUNT for r in rows), jobs.stdout + jobs.stderr
    assert any("node[1-2]" in r[1] or "node2" in r[1] for r in rows), jobs.stdout
    # the store on the local disk the site file names; the report over both nights
    assert (Path(f"/var/tmp/mpimatrix-{ACCOUNT}/db") / "results.db").exists()
    summary = (checkout / "results/reports/nightly.md").read_text()
    assert int(summary.split("Sessions in this report: ")[1].split()[0]) >= 2, summary
    assert (checkout / "results/reports/nightly.html").stat().st_size > 10_000
    hooks = (home / "hooks.txt").read_text()
    assert hooks.count("HOOK GREEN 0") >= 2 and "MPI regression report nightly" in hooks
    proc = as_account(site, ".venv/bin/mpimatrix changes --dry-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 new (0 for the worse)" in proc.stdout
    proc = as_account(site, ".venv/bin/mpimatrix plan --mode quick --partition 'compute$' "
                      "-- -x 2x2")
    assert "duration: about" in proc.stdout and "stored session(s) of mode quick on " \
        "emulated" in proc.stdout, proc.stdout

    # every file of the checkout and of the store is the account's own
    for where in (checkout, Path(f"/var/tmp/mpimatrix-{ACCOUNT}")):
        foreign = subprocess.run(["find", str(where), "!", "-user", ACCOUNT],
                                 capture_output=True, text=True).stdout.split()
        assert not foreign, foreign[:10]
    # nothing of the account's runs on after its nights
    left = subprocess.run(["pgrep", "-u", ACCOUNT, "-a"], capture_output=True, text=True)
    assert left.returncode == 1, left.stdout


def test_the_scrontab_jobs_options_are_taken_by_slurm(site):
    """Debian's Slurm 22.05 ships no `scrontab` command: the template's #SCRON options
    (sbatch's) are put to slurmctld with `sbatch --test-only`, as the account; its cron
    line is cron's, run above."""
    proc = as_account(site, ".venv/bin/mpimatrix schedule scrontab --at 03:17 --partition "
                      "compute --time-limit 90m")
    assert proc.returncode == 0, proc.stderr
    assert f"17 03 * * * cd {site['checkout']} && .venv/bin/mpimatrix nightly" in proc.stdout
    options = [line.split(None, 1)[1] for line in proc.stdout.splitlines()
               if line.startswith("#SCRON ")]
    assert "--time=90" in options and "--partition=compute" in options
    test = as_account(site, f"sbatch --test-only {' '.join(options)} --wrap true")
    assert test.returncode == 0 and "to start at" in test.stderr, test.stdout + test.stderr
