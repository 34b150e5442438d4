"""`mpimatrix nightly`: the night in one command, for cron, scrontab, a systemd timer or a
CI pipeline. From the `nightly:` section of site_config/site.yaml:

  mpimatrix run --mode <mode> <args>        the session, judged, with its confirmation
  mpimatrix changes                         new steps in the history
  mpimatrix report --html --since <report_since> --name <report_name>

then the summary (<reports>/<report_name>.md, the night's verdict first) mailed to
`mail_to` and handed to `hook` on its standard input. Everything printed also goes to
<results>/nightly/<UTC time>.log; <results>/nightly/latest.json records the night.

One exit code: 0 green; 1 a regression, a failed test case or a new step for the worse;
2 bad input; 3 nothing ran or the store was busy; 4 the machine (HOST, or a session
other programs disturbed: run again on a quiet machine); 5 the night was judged but its
report, mail or hook failed; 128+N stopped by signal N.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

from ..atomic import atomic_write
from ..paths import reports_dir, results_dir
from ..results.night_verdict import BAD_INPUT, FAILED, MACHINE, NOT_RUN, OK, VERDICT_LINE
from ..run.lock import IN_USE
from ..site_settings import Nightly, current
from ..validation.command import MPIMATRIX

#: The night's own exit code beyond the run's: judged, but not delivered.
NOT_DELIVERED = 5
#: The run's exit code -> the night's verdict, where the run printed none.
RUN_VERDICTS = {OK: "GREEN", BAD_INPUT: "BAD INPUT", NOT_RUN: "NOT RUN", MACHINE: "MACHINE"}


def steps(n: Nightly) -> dict[str, list[str]]:
    """The night's commands (mpimatrix's arguments), in order."""
    return {
        "run": ["run", "--mode", n.mode, *n.args],
        "changes": ["changes"],
        "report": ["report", "--html", "--since", n.report_since, "--name", n.report_name],
    }


def tee(argv: list[str], log) -> tuple[int, list[str]]:
    """Run argv, its output to ours and to the log; its exit code and lines."""
    log.write(f"+ {shlex.join(argv)}\n")
    log.flush()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, errors="replace")
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        log.write(line)
        lines.append(line.rstrip("\n"))
    rc = proc.wait()
    log.write(f"(exit {rc})\n")
    log.flush()
    return rc, lines


def verdict(run_rc: int, run_lines: list[str], changes_rc: int) -> tuple[str, int]:
    """The night's verdict and exit code: the run's own (its `VERDICT:` line: GREEN,
    WATCH, REGRESSION, FAILED, XPASS, HOST, DISTURBED), NEW STEP where a green run's
    `changes` found a step for the worse, else what the run's exit code says."""
    if run_rc >= 128:
        return f"INTERRUPTED (signal {run_rc - 128})", run_rc
    said = next((ln.split()[1].rstrip(":") for ln in reversed(run_lines)
                 if ln.startswith(VERDICT_LINE) and len(ln.split()) > 1), "")
    if run_rc == OK and changes_rc == 1:
        return "NEW STEP", FAILED
    if said and run_rc in (OK, FAILED, MACHINE):
        return said, run_rc
    if run_rc == FAILED:
        regressed = any(line.startswith("REGRESSION") for line in run_lines)
        return ("REGRESSION" if regressed else "FAILED"), FAILED
    if run_rc in RUN_VERDICTS:
        return RUN_VERDICTS[run_rc], run_rc
    return f"FAILED (run exit {run_rc})", FAILED


def mail(to: tuple[str, ...], subject: str, body: str) -> str:
    """Send with the machine's sendmail; '' or why not."""
    sendmail = shutil.which("sendmail", path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/lib")
    if not sendmail:
        return ("no sendmail on this machine: install an MTA (Debian: `apt-get install "
                "postfix` or `msmtp-mta`), or use `hook:` instead of `mail_to:`")
    message = (f"To: {', '.join(to)}\nSubject: {subject}\nContent-Type: text/plain; "
               f"charset=utf-8\n\n{body}")
    proc = subprocess.run([sendmail, "-t", "-oi"], input=message, text=True,
                          capture_output=True, timeout=120)
    return "" if proc.returncode == 0 else f"sendmail exit {proc.returncode}: {proc.stderr.strip()}"


def run_hook(hook: str, body: str, env: dict[str, str], log) -> str:
    proc = subprocess.run(hook, shell=True, input=body, text=True, capture_output=True,
                          env={**os.environ, **env}, timeout=600)
    log.write(f"+ hook: {hook}\n{proc.stdout}{proc.stderr}(exit {proc.returncode})\n")
    return "" if proc.returncode == 0 else f"hook {hook!r} exit {proc.returncode}: " \
        f"{(proc.stderr or proc.stdout).strip()[-300:]}"


def deliver(n: Nightly, summary: str, env: dict[str, str], log) -> list[str]:
    problems = []
    if n.mail_to:
        subject = f"mpimatrix nightly: {env['MPIMATRIX_NIGHTLY_VERDICT']}"
        why = mail(n.mail_to, subject, summary)
        problems += [f"mail to {', '.join(n.mail_to)}: {why}"] if why else []
    if n.hook:
        why = run_hook(n.hook, summary, env, log)
        problems += [why] if why else []
    return problems


def cmd_nightly(args) -> int:
    settings = current()
    n = settings.nightly
    exe = MPIMATRIX
    plan = steps(n)
    if args.dry_run:
        print(f"site settings: {settings.path or 'none (site_config/site.yaml absent)'}")
        for argv in plan.values():
            print(shlex.join([exe, *argv]))
        print(f"summary: {reports_dir() / (n.report_name + '.md')}"
              + (f" mailed to {', '.join(n.mail_to)}" if n.mail_to else "")
              + (f", then hook: {n.hook}" if n.hook else ""))
        return OK
    logs = results_dir() / "nightly"
    logs.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    log_path = logs / f"{stamp}.log"
    codes: dict[str, int] = {}
    with open(log_path, "w") as log:
        run_rc, run_lines = tee([exe, *plan["run"]], log)
        codes["run"] = run_rc
        if run_rc >= 128 or run_rc in (BAD_INPUT, NOT_RUN):
            # stopped, refused, or the store busy with another night: nothing new to report
            word, code = verdict(run_rc, run_lines, 0)
        else:
            for step in ("changes", "report"):
                codes[step], _ = tee([exe, *plan[step]], log)
            word, code = verdict(run_rc, run_lines, codes["changes"])
        summary_path = reports_dir() / f"{n.report_name}.md"
        html = reports_dir() / f"{n.report_name}.html"
        body = f"mpimatrix nightly {stamp}: {word} (exit {code})\nlog: {log_path}\n"
        if codes.get("report") == 0 and summary_path.exists():
            body += f"report: {html}\n\n{summary_path.read_text()}"
        else:
            body += "\n" + "\n".join(run_lines[-40:]) + "\n"
        env = {"MPIMATRIX_NIGHTLY_EXIT": str(code), "MPIMATRIX_NIGHTLY_VERDICT": word,
               "MPIMATRIX_NIGHTLY_REPORT": str(html), "MPIMATRIX_NIGHTLY_LOG": str(log_path)}
        # a night that found the last one still running says so in its log alone
        busy = run_rc == NOT_RUN and any(IN_USE in line for line in run_lines)
        problems = deliver(n, body, env, log) if run_rc < 128 and not busy else []
        if codes.get("report", 0) != 0:
            problems.insert(0, f"the report failed (exit {codes['report']}); see {log_path}")
        for p in problems:
            line = f"mpimatrix nightly: {p}"
            print(line, file=sys.stderr)
            log.write(line + "\n")
        if problems and code == OK:
            code = NOT_DELIVERED
        line = f"mpimatrix nightly: {word} (exit {code}); log {log_path}"
        print(line, flush=True)
        log.write(line + "\n")
    record = {"time": stamp, "verdict": word, "exit": code, "steps": codes,
              "log": str(log_path), "report": str(html), "problems": problems}
    atomic_write(logs / "latest.json", json.dumps(record, indent=1) + "\n")
    return code


def register(sub) -> None:
    s = sub.add_parser(
        "nightly", help="the nightly in one command for a scheduler: run, changes, report, "
        "summary mailed or handed to a hook; one exit code",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--dry-run", action="store_true",
                   help="print the commands the night would run, and where its summary goes")
    s.set_defaults(func=cmd_nightly)
