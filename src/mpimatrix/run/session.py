"""`mpimatrix run`: one ReFrame session in a mode, its confirmation, its verdict.

Exit codes: 0 every test passed and no value is a confirmed regression; 1 a test
failed or a regression was confirmed; 2 bad input; 3 nothing ran, or the session
was not stored in the results database; 4 values were outside their tolerance
but other programs loaded the machine during the session (not judged: run again),
or every build ran slower than its references at once (a HOST line: the machine);
128+N stopped by signal N (SIGTERM 143, SIGINT 130, SIGHUP 129): the run stops there
(a running ReFrame aborts its test case and stores what ran); no confirmation, no
verdict (run/child.py).

A results store on a full disk is bad input (2): the message names the store, the
file that could not be written and how to make room (run/full_disk.py).
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

from ..builds.bench_prepare import prepare_sources
from ..builds.software import software_of
from ..builds.sources import ONLY_ENV, load_builds, only_patterns
from ..paths import references_dir, reports_dir, results_db, results_dir
from ..reference_file import load_references
from ..results import summary
from ..results.measurements import Session, load
from ..results.night import to_confirm, to_confirm_again
from ..results.night_verdict import BAD_INPUT, NOT_RUN
from ..results.reference_set import ReferenceSet
from ..results.sessions import SessionError, load_report
from ..results.software_store import software_dir, store_software
from ..rfm.inject_spec import injection_for
from ..site.config import MODES
from . import central_store, machine, progress, session_index
from .child import GRACE, Interrupted, stop_on_signals
from .full_disk import DiskFull, drop_partial, guard, low_space
from .lock import session_locks
from .machine import LoadMeter
from .nights import judge_stored, load_record_path, system_of
from .prune import after_session, retention
from .publish import publish
from .reframe_cmd import reframe_cmd
from .selection import (
    ignored_under_mode,
    name_patterns,
    osu_note,
    select_partitions,
    setvar_args,
)
from .store_fs import check_store
from .stored import reframe_index

INTERRUPTED = 128  # + the signal's number
NOTHING_RAN = ("no test case ran (no usable build, or the selection matched nothing); "
               "`mpimatrix builds` lists the builds and why any were skipped")

#: Variables naming files or directories: made absolute before ReFrame starts
#: (ReFrame loads the configuration from site_config/, not from the caller's cwd).
PATH_VARIABLES = ("MPIMATRIX_BUILDS", "MPIMATRIX_LOCK", "MPIMATRIX_RESULTS", "MPIMATRIX_STORE",
                  "MPIMATRIX_HOME",
                  "MPIMATRIX_CACHE", "MPIMATRIX_SYSTEMS", "MPIMATRIX_OSU_SOURCE",
                  "RFM_SQLITE_DB_FILE", "RFM_REFERENCE_PREFIX")


def absolute_path_variables() -> None:
    for var in PATH_VARIABLES:
        value = os.environ.get(var)
        if value and not os.path.isabs(value):
            os.environ[var] = os.path.abspath(value)


def session_extras(extra: dict[str, str] | None = None) -> str:
    bs = load_builds()
    extras = {"builds_source": bs.source.split(":")[0],
              "builds": "+".join(b.environ_name for b in bs.builds)}
    if bs.lock_sha256:
        extras["spack_lock"] = bs.lock_sha256
    locks = [Path(bs.source.partition(":")[2])] if bs.source.startswith("lock:") else []
    problems: list[str] = []
    with guard(software_dir()):
        extras["software"] = store_software(software_of(bs.builds), locks, problems=problems)
    for p in problems:
        print(f"mpimatrix: WARNING: the software record could not be kept: {p}; the "
              "session runs and is stored without it (`mpimatrix diff` and the REGRESSION "
              "lines cannot say what changed in its software): make the store writable",
              flush=True)
    if bs.skipped:  # ReFrame splits the extras at commas
        extras["skipped_builds"] = " | ".join(
            f"{s.name}: {s.reason}" for s in bs.skipped).replace(",", ";")
    extras.update(extra or {})
    return ",".join(f"{k}={v}" for k, v in extras.items())


def report_path(mode: str, suffix: str = "") -> Path:
    """A report name no other session takes: mode, time and a random suffix."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    return reports_dir() / f"{mode}-{stamp}-{uuid.uuid4().hex[:6]}{suffix}.json"


def link_latest(report: Path) -> None:
    latest = reports_dir() / "latest.json"
    tmp = reports_dir() / f".latest.{os.getpid()}.tmp"
    with guard(latest):
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(report.name)
        tmp.replace(latest)


def mode_profile(mode: str) -> str:
    """The profile (quick or full) a mode sets, for its confirmation runs."""
    for m in MODES:
        if m["name"] == mode:
            for opt in m["options"]:
                if opt.startswith("--setvar=profile="):
                    return opt.split("=", 2)[2]
    return "quick"


def measured_run(cmd: list[str], report: Path) -> int:
    """Run ReFrame, and record how busy the machine (on batch partitions: the
    benchmarks' nodes) was with other programs."""
    meter = LoadMeter()
    try:
        rc = progress.call(cmd)
        full = low_space() if rc != 0 else None  # e.g. a benchmark's output cut short
        if full:
            raise full
    except DiskFull:
        drop_partial(report)
        raise
    measured = meter.stop()
    if report.exists():
        session = load(load_report(report))
        judged_load = machine.on_job_nodes([c.node_load for c in session.cases],
                                           meter.own_rate) or measured
        with guard(load_record_path()):
            machine.record(load_record_path(), session.uuid, judged_load)
    return rc


def confirm(report: Session, mode: str, repeats: int, references: ReferenceSet,
            setvars: list[str] | None = None) -> list[Session]:
    """Re-run, on every build, the test cases with a value outside its tolerance and
    those of a build outside its build tolerance, with the session's ReFrame variables
    (`setvars`: --setvar=... options); then, round after round up to the policy's
    confirm_rounds, those whose verdict is still close to its threshold. The rounds
    measured, in order."""
    rounds: list[Session] = []
    failing = to_confirm(report, references)
    if failing and repeats >= 1:
        print(f"\nmpimatrix: {len(failing)} test case(s) had a value outside its "
              f"tolerance; measuring them again ({repeats} more samples, every build)",
              flush=True)
    while failing and repeats >= 1:
        started = time.monotonic()
        conf = _measure_again(report, failing, mode, repeats, setvars)
        if conf is None:
            break
        rounds.append(conf)
        failing = to_confirm_again(report, rounds, references)
        if failing:
            print(f"\nmpimatrix: round {len(rounds)} of measuring again took "
                  f"{(time.monotonic() - started) / 60:.1f} min; {len(failing)} test "
                  "case(s) still close to their threshold: measuring them again (round "
                  f"{len(rounds) + 1} of at most {references.policy.confirm_rounds})",
                  flush=True)
    return rounds


def _measure_again(report: Session, cases: list, mode: str, repeats: int,
                   setvars: list[str] | None) -> Session | None:
    """One round of confirmation: the cases on every build, stored with confirms=<uuid>."""
    hashes = sorted({case.hashcode for case in cases})
    path = report_path(mode, "-confirm")
    cmd = reframe_cmd("-r", "--exec-policy=serial", f"--setvar=profile={mode_profile(mode)}",
                      *(setvars or []), f"--repeat={repeats}", "--report-file", str(path),
                      "--session-extras",
                      session_extras({"confirms": report.uuid, "mode": mode}),
                      *[a for h in hashes for a in ("-n", f"/{h}")])
    print("+ " + " ".join(cmd), flush=True)
    measured_run(cmd, path)
    return load(load_report(path)) if path.exists() else None


def check_inputs() -> None:
    """What would break every test case, before ReFrame starts."""
    injection_for("")  # a malformed MPIMATRIX_INJECT stops here, with its text
    retention()  # and so does a malformed MPIMATRIX_KEEP_FULL
    check_store(results_db().parent)  # a store on NFS, or where locks fail, is refused
    system_refs = references_dir()
    if system_refs.is_dir():
        for path in sorted(system_refs.glob("*.yaml")):
            if not path.name.endswith(".stats.yaml"):
                load_references(path)


def run_session(mode: str, only: list[str] | None, reframe_args: list[str],
                confirm_repeats: int = 3, wait: bool = True,
                partitions: list[str] | None = None, sources: list[str] | None = None) -> int:
    absolute_path_variables()
    os.environ.setdefault("RFM_REFERENCE_PREFIX", str(references_dir()))
    if only:
        os.environ[ONLY_ENV] = "\n".join(only)
        only_patterns()  # a bad regular expression stops here, with its name
    select_partitions(partitions)
    check_inputs()
    # OSU/IMB sources for the builds without them (a bad path stops here); what stays
    # missing is said once, below
    sources_note = prepare_sources(sources or [])
    try:
        with stop_on_signals(), session_locks(results_dir(), wait):
            return _run_locked(mode, reframe_args, confirm_repeats, sources_note)
    except Interrupted as stop:
        killed = (f"; ReFrame had not ended {GRACE:.0f} s after the signal: killed with its "
                  "jobs" if stop.killed else "")
        print(f"mpimatrix: interrupted by {stop.name}: the run stops here, no confirmation "
              f"and no verdict (exit {INTERRUPTED + stop.signum}){killed}", file=sys.stderr,
              flush=True)
        return INTERRUPTED + stop.signum
    except DiskFull as full:
        print(f"mpimatrix: {full}", file=sys.stderr, flush=True)
        return BAD_INPUT


def _run_locked(mode: str, reframe_args: list[str], confirm_repeats: int,
                sources_note: str = "") -> int:
    report_file = report_path(mode)
    with guard(reports_dir()):
        reports_dir().mkdir(parents=True, exist_ok=True)
    cmd = reframe_cmd("--mode", mode, "-r", "--report-file", str(report_file),
                      "--session-extras", session_extras({"mode": mode}),
                      *name_patterns(reframe_args))
    print("+ " + " ".join(cmd), flush=True)
    osu = "" if sources_note else osu_note()
    for note in (ignored_under_mode(reframe_args), sources_note or osu):
        if note:
            print(note, flush=True)
    rc = measured_run(cmd, report_file)
    if not report_file.exists():
        why = (NOTHING_RAN if rc == 0 else
               f"ReFrame ended with exit code {rc} before writing its report {report_file}")
        print(f"mpimatrix: {why}", file=sys.stderr)
        return NOT_RUN
    code = judge_report(report_file, mode, confirm_repeats, reframe_args, osu)
    note = after_session()
    if note:
        print(note, flush=True)
    return code


def judge_report(report_file: Path, mode: str, confirm_repeats: int,
                 reframe_args: list[str], osu: str = "") -> int:
    """The night after its ReFrame part: the report made `latest`, the values outside
    their tolerance measured again, the night judged against the references and the
    stored nights before it (nights.judge_stored), the summary printed; the exit code is
    the night's verdict's."""
    report = load(load_report(report_file))
    link_latest(report_file)
    central_store.judge_locally_when_unusable()
    references = ReferenceSet.load(references_dir() / f"{system_of(report)}.yaml")
    confs = confirm(report, mode, confirm_repeats, references, setvar_args(reframe_args))
    if not report.cases:
        print(f"mpimatrix: {NOTHING_RAN}", file=sys.stderr)
        return NOT_RUN
    if not stored_in_reframe_db(report):
        return NOT_RUN
    night = judge_stored(report, confs, references)
    publish(report, night)
    print()
    print(summary.format_table(report, night))
    if osu:
        print(osu)
    loads = machine.loads(load_record_path())
    busy = [loads.get(s.uuid, {}) for s in (report, *confs)]
    for b in busy:
        if b.get("disturbed"):
            print(f"DISTURBED: {machine.Load.from_record(b).text()}: the values measure "
                  "them too; verdicts not judged, run again on a quiet machine")
    print(f"report: {report_file}")
    return night.verdict.exit_code


def stored_in_reframe_db(report: Session) -> bool:
    """Whether ReFrame stored the session (else why not, on stderr); the session index
    then keeps it, from its report: the same session, already read."""
    try:
        stored = report.uuid in {u for u, _ in reframe_index()}
    except SessionError as err:
        stored, why = False, str(err)
    else:
        why = "ReFrame did not store it (look at its output above)"
    if not stored:
        print(f"mpimatrix: the session is not in the results database {results_db()}: "
              f"{why}", file=sys.stderr)
        return False
    session_index.add([report.raw])
    return True
