"""`mpimatrix accept`: the verdict on each acceptance requirement from stored sessions,
and the acceptance record (HTML and PDF) to sign. `mpimatrix run --mode acceptance
--requirements FILE` measures what the file needs, then does the same."""

from __future__ import annotations

import re
import time
from pathlib import Path

from ..paths import references_dir, reports_dir
from ..reference_file import stats_path
from ..results.acceptance.record import verdict_lines, write_record
from ..results.acceptance.requirements import Requirements, load_requirements
from ..results.acceptance.verdicts import (
    INCONCLUSIVE,
    MET,
    NOT_MET,
    exit_code,
    judge_all,
    samples_needed,
)
from ..results.measurements import Session, load
from ..results.report.screenshot import ScreenshotError, print_pdf
from ..suites.osu.catalogue import LARGE_BW
from .session_args import sessions_from_args


def evaluate(reqs: Requirements, sessions: list[Session], out_dir: Path, name: str,
             pdf: bool = True) -> int:
    """Print the verdicts, write the record; the exit code of the verdicts."""
    verdicts = judge_all(reqs, sessions)
    print("\n".join(verdict_lines(verdicts)))
    refs = references_dir() / f"{reqs.system}.yaml"
    html = write_record(reqs, verdicts, sessions, out_dir / f"{name}.html",
                        [refs, stats_path(refs)])
    print(f"record: {html}")
    if pdf:
        try:
            print(f"record PDF: {print_pdf(html, html.with_suffix('.pdf'))}")
        except ScreenshotError as err:
            print(f"mpimatrix accept: no PDF: {err}")
    n = {v: sum(rv.verdict == v for rv in verdicts) for v in (MET, NOT_MET, INCONCLUSIVE)}
    print(f"{len(verdicts)} requirement(s): {n[MET]} met, {n[NOT_MET]} not met, "
          f"{n[INCONCLUSIVE]} inconclusive, {len(verdicts) - sum(n.values())} not measured")
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
    reqs = load_requirements(Path(args.requirements))
    sessions = [load(s) for s in sessions_from_args(args)]
    out = Path(args.output_dir) if args.output_dir else reports_dir()
    return evaluate(reqs, sessions, out, args.name or record_name(reqs), not args.no_pdf)


def register(sub) -> None:
    s = sub.add_parser("accept", help="verdicts on the acceptance requirements from stored "
                       "sessions, and the acceptance record (HTML, PDF)")
    s.add_argument("--requirements", required=True, metavar="FILE",
                   help="site_config/acceptance/<system>.yaml")
    s.add_argument("--session", action="append", metavar="UUID|PERIOD",
                   help="stored session (repeatable); their samples are pooled")
    s.add_argument("--report", action="append", help="ReFrame JSON report (repeatable)")
    s.add_argument("--since", metavar="AGE", help="the stored sessions of the last AGE")
    s.add_argument("--name", help="record name (default acceptance-<system>-<time>)")
    s.add_argument("--output-dir", help="where to write (default results/reports)")
    s.add_argument("--no-pdf", action="store_true", help="no PDF (Chromium prints it)")
    s.set_defaults(func=cmd_accept)
