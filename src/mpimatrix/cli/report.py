"""`mpimatrix report`: the summary table of a session, or (--html) the HTML report of
stored sessions with its Markdown summary, for people and for mail or a CI log."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..paths import references_dir
from ..reference_file import ReferenceFileError
from ..results import summary
from ..results.measurements import load as load_session
from ..results.reference_set import ReferenceSet
from ..results.report import load, make_report, systems, write
from ..results.report.cost import PriceError, read_prices
from ..results.report.screenshot import ScreenshotError, screenshot
from ..results.sessions import SessionError
from ..run import central_store, session_index
from ..run.nights import (
    confirmations_of,
    disturbed_uuids,
    judge_stored,
    previous_nights,
    system_of,
    with_their_confirmations,
)
from ..run.report_sessions import ReportSessions, report_sessions
from ..site.systems import partition_prices
from .outputs import output_dir, output_name, write_failed
from .session_args import AGE, sessions_from_args, stored_uuids_from_args


def cmd_systems(args) -> int:
    """Systems side by side from the shared store."""
    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    if len(names) < 2 or len(set(names)) < len(names):
        raise SessionError(f"--systems {args.systems!r}: name two or more systems, A,B")
    since = args.since or "14d"
    if not AGE.fullmatch(since):
        raise SessionError(f"--since {since!r}: give an age such as 14d, 12h, 2w or 90m")
    seconds = int(since[:-1]) * {"m": 60, "h": 3600, "d": 86400, "w": 604800}[since[-1]]
    by_system = central_store.systems_series(names, time.time() - seconds)
    empty = [n for n, series in by_system.items() if not series]
    if empty:
        raise SessionError(f"no values of {', '.join(empty)} in the shared store in the last "
                           f"{since} (`mpimatrix store status` lists its systems)")
    print(systems.text(by_system, args.per_system))
    return 0


def cmd_report(args) -> int:
    if args.systems:
        return cmd_systems(args)
    if args.html:  # where it writes, checked before anything is read
        name = output_name(args.name) if args.name is not None else None
        out = output_dir(args.output_dir)
    if not args.html:
        for raw in sessions_from_args(args):
            session = load_session(raw)
            refset = references_of(args, system_of(session))
            night = judge_stored(session, confirmations_of([session]), refset)
            print(summary.format_table(session, night, width=args.width))
        return 0
    picked = stored_picked(args)
    sessions = [load_session(s) for s in
                (picked.sessions if picked else sessions_from_args(args))]
    sessions = with_their_confirmations(sessions)
    older = picked.older if picked else []
    data = load(sessions, older=older)  # one system, or a clear message
    refset = references_of(args, data.system)
    try:
        prices = {**partition_prices(), **(read_prices(args.prices) if args.prices else {})}
    except PriceError as err:
        raise SessionError(str(err)) from None
    name = name or output_name(default_name(data), "the report name")
    rep = make_report(sessions, name=name, references=refset, prices=prices,
                      baseline=args.baseline, max_trends=args.max_trends,
                      max_heatmaps=args.max_heatmaps,
                      earlier_nights=previous_nights(before=data.current.start),
                      disturbed=disturbed_uuids(),
                      series=picked.series if picked else stored_history(data.sessions),
                      older=older)
    try:
        html, md = write(out, name, rep.html, rep.markdown)
    except OSError as err:
        raise write_failed(out / f"{name}.html", err) from None
    print(rep.markdown)
    print(f"report: {html} ({len(rep.plots)} plots)")
    print(f"summary: {md}")
    if args.screenshot:
        try:
            print(f"screenshot: {screenshot(html, Path(args.screenshot))}")
        except (ScreenshotError, OSError) as err:
            print(f"mpimatrix report: {err}", file=sys.stderr)
            return 2
    return 0


def references_of(args, system: str) -> ReferenceSet:
    """The system's references with the policy bless recorded (`--references` names
    another file), as `mpimatrix run` judges with them."""
    ref_file = (Path(args.references) if args.references
                else references_dir() / f"{system}.yaml")
    try:
        return ReferenceSet.load(ref_file)
    except ReferenceFileError as err:
        raise SessionError(str(err)) from None


def stored_picked(args) -> ReportSessions | None:
    """The newest stored session whole, the older ones summarised and the history from
    the index, for stored sessions only (None: --report files or the latest report)."""
    uuids = stored_uuids_from_args(args)
    return report_sessions(uuids) if uuids is not None else None


def stored_history(sessions) -> list | None:
    """The sessions' history from the session index's values when it holds every one of
    them (the values of 14 nights of 40 builds: 1 s; decoded from the sessions: 12 s);
    None for sessions given as report files only: the report makes it from them."""
    uuids = [s.uuid for s in sessions]
    if not set(uuids) <= session_index.listed().keys():
        return None
    return session_index.values(uuids)[0]


def default_name(data) -> str:
    cur = data.current
    stamp = cur.date.replace("-", "").replace(" ", "T").replace(":", "")
    kind = "trend" if len(data.summaries) > 1 else cur.mode
    return f"{kind}-{stamp}"


def register(sub) -> None:
    s = sub.add_parser(
        "report", help="summarise a run; --html: the HTML report of stored sessions",
        description="Without --html: the summary table of each session. With --html: "
        "results/reports/<name>.html (plots embedded, opens without network) and "
        "<name>.md (the summary for mail or a CI log) from the sessions given.")
    s.add_argument("--session", action="append", metavar="SESSION",
                   help="stored session: a UUID, its first 8 characters, `latest`, or a "
                   "ReFrame time period such as now-7d:now (repeatable)")
    s.add_argument("--report", action="append", help="ReFrame JSON report (repeatable)")
    s.add_argument("--since", metavar="AGE", help="the stored sessions of the last AGE "
                   "(14d, 12h, 2w): a nightly trend")
    s.add_argument("--width", type=int, default=200, help="text table width")
    s.add_argument("--html", action="store_true", help="write the HTML report and summary")
    s.add_argument("--name", help="report name (default: <mode>-<time> of the newest "
                   "session, trend-<time> for several)")
    s.add_argument("--output-dir", help="where to write (default results/reports)")
    s.add_argument("--baseline", metavar="BUILD", help="build the others are compared to "
                   "(default: the first by name)")
    s.add_argument("--references", metavar="FILE", help="reference file (default "
                   "results/references/<system>.yaml)")
    s.add_argument("--prices", metavar="FILE", help="prices per node-hour: {system:partition:"
                   " {price_per_node_hour, currency, fabric}}, over the partitions' extras")
    s.add_argument("--max-trends", type=int, default=24, help="trend plots at most (24)")
    s.add_argument("--max-heatmaps", type=int, default=12,
                   help="build-vs-baseline heat maps at most, of the builds with the most "
                   "differences (12; 0: every build)")
    s.add_argument("--systems", metavar="A,B", help="systems side by side from the shared "
                   "store (monitoring.store_url): each value per system and the ratio to "
                   "the first, over --since (default 14d)")
    s.add_argument("--per-system", choices=systems.HOW, default="latest",
                   help="with --systems: each system's latest value, or the median over "
                   "the period (default latest)")
    s.add_argument("--screenshot", metavar="PNG", help="also a screenshot of the page's top "
                   "by headless Chromium")
    s.set_defaults(func=cmd_report)
