"""`mpimatrix accept`: the verdict on each acceptance requirement from stored sessions,
and the acceptance record (HTML and PDF) to sign. `mpimatrix run --mode acceptance
--requirements FILE` measures what the file needs, then does the same (accept_run.py)."""

from __future__ import annotations

import re
import time
from pathlib import Path

from ..paths import references_dir
from ..reference_file import stats_path
from ..results.acceptance.record import verdict_lines, write_record
from ..results.acceptance.requirements import Requirements, load_requirements
from ..results.acceptance.scope import Scope, SessionLoad
from ..results.acceptance.verdicts import Verdict, exit_code, judge_all, samples_needed
from ..results.measurements import Session, load
from ..results.report.screenshot import ScreenshotError, print_pdf
from ..run import machine
from ..run.nights import load_record_path
from ..suites.osu.catalogue import LARGE_BW
from .outputs import output_dir, output_name, write_failed
from .session_args import sessions_from_args


def session_loads() -> dict[str, SessionLoad]:
    """The machine load `mpimatrix run` recorded per session (a damaged entry is left
    out: its session reads as not recorded)."""
    out = {}
    for uuid, rec in machine.loads(load_record_path()).items():
        try:
            load = machine.Load.from_record(rec)
            out[str(uuid)] = SessionLoad(bool(rec.get("disturbed", load.disturbed)),
                                         load.text())
        except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError):
            continue
    return out


def evaluate(reqs: Requirements, sessions: list[Session], out_dir: Path, name: str,
             pdf: bool = True, scope: Scope | None = None) -> int:
    """Print the verdicts, write the record; the exit code of the verdicts."""
    scope = scope or Scope()
    for s in sessions:
        load = scope.disturbed(s.uuid)
        if load:
            print(f"DISTURBED session {s.uuid}: {load.text}"
                  + ("; counted (--include-disturbed)" if scope.include_disturbed else
                     "; a verdict resting on its samples is at most inconclusive"))
    verdicts = judge_all(reqs, sessions, scope)
    print("\n".join(verdict_lines(verdicts)))
    refs = references_dir() / f"{reqs.system}.yaml"
    path = out_dir / f"{output_name(name)}.html"
    try:
        html = write_record(reqs, verdicts, sessions, path, [refs, stats_path(refs)], scope)
    except OSError as err:
        raise write_failed(path, err) from None
    print(f"record: {html}")
    if pdf:
        try:
            print(f"record PDF: {print_pdf(html, html.with_suffix('.pdf'))}")
        except ScreenshotError as err:
            print(f"mpimatrix accept: no PDF: {err}")
    n = {v: sum(rv.verdict == v for rv in verdicts) for v in Verdict}
    print(f"{len(verdicts)} requirement(s): {n[Verdict.MET]} met, {n[Verdict.NOT_MET]} not "
          f"met, {n[Verdict.INCONCLUSIVE]} inconclusive, {n[Verdict.UNMEASURED]} not measured")
    return exit_code(verdicts)


def run_options(reqs: Requirements) -> list[str]:
    """ReFrame options for a session measuring the requirements: their test cases only,
    enough passes for the strictest confidence, OSU sizes beyond the full sweep."""
    passes = max(samples_needed(r.confidence) for r in reqs.requirements)
    opts = [a for r in reqs.requirements for a in ("-n", r.name_pattern)]
    opts.append(f"--reruns={passes - 1}")
    if reqs.osu_max_size() > LARGE_BW:
        opts.append(f"--setvar=OsuCheck.max_size={reqs.osu_max_size()}")
    return opts


def record_name(reqs: Requirements) -> str:
    return f"acceptance-{re.sub(r'[^A-Za-z0-9._-]', '_', reqs.system)}-" \
           f"{time.strftime('%Y%m%dT%H%M')}"


def cmd_accept(args) -> int:
    name = output_name(args.name) if args.name is not None else None
    out = output_dir(args.output_dir)
    reqs = load_requirements(Path(args.requirements))
    sessions = [load(s) for s in sessions_from_args(args)]
    scope = Scope(loads=session_loads(), include_disturbed=args.include_disturbed)
    return evaluate(reqs, sessions, out, name or record_name(reqs), not args.no_pdf, scope)


def register(sub) -> None:
    s = sub.add_parser("accept", help="verdicts on the acceptance requirements from stored "
                       "sessions, and the acceptance record (HTML, PDF)")
    s.add_argument("--requirements", required=True, metavar="FILE",
                   help="site_config/acceptance/<system>.yaml")
    s.add_argument("--session", action="append", metavar="SESSION",
                   help="stored session: UUID, its first 8 characters, `latest` or a period "
                   "such as now-7d:now (repeatable); their samples are pooled")
    s.add_argument("--report", action="append", help="ReFrame JSON report (repeatable)")
    s.add_argument("--since", metavar="AGE", help="the stored sessions of the last AGE")
    s.add_argument("--name", help="record name (default acceptance-<system>-<time>)")
    s.add_argument("--output-dir", help="where to write (default results/reports)")
    s.add_argument("--no-pdf", action="store_true", help="no PDF (Chromium prints it)")
    s.add_argument("--include-disturbed", action="store_true",
                   help="count the samples of sessions other programs disturbed as any "
                   "other (by default a verdict resting on them is at most inconclusive)")
    s.set_defaults(func=cmd_accept)
