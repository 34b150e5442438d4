"""The night's verdicts to the site's httpjson perflog handlers (site settings:
monitoring.perflog), after the gate: one JSON record for the night (its verdict, exit
code and counts) and one per judged value (its verdict, the value against its reference,
what changed since the build last passed, where known), each with the handler's extras
and extra_headers.

The night comes first, then its regressions and values on watch, then the rest: what a
short budget lets through is what matters most. All handlers together get BUDGET
seconds, each POST site.perflog.POST_TIMEOUT; a handler's first failure ends its
records. Nothing here changes the night's verdict or exit code."""

from __future__ import annotations

import time

from ..results.measurements import Case, Session
from ..results.night import Night
from ..results.status import Status
from ..results.value_verdict import ValueVerdict
from ..site.perflog import Poster, build_fields, report_name, shown_url, with_extras
from ..site_settings import current

#: Seconds all the site's handlers get, together, for one night's verdict records.
BUDGET = 5.0
#: The order values are sent in: what the night is about first.
ORDER = {Status.REGRESSION: 0, Status.WATCH: 1}
#: The verdicts whose reason is written (a value that passed needs none).
WHY = (Status.REGRESSION, Status.WATCH, Status.NOISE, Status.NOT_GATED)


def _session_fields(session: Session) -> dict:
    return {"session": session.uuid,
            "report": report_name(str(session.info.get("cmdline") or "").split()),
            "mode": session.mode,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(session.start))}


def night_record(night: Night) -> dict:
    """The night's verdict as one record."""
    v, n = night.verdict, night.verdict.counts
    return {"record": "night", **_session_fields(night.session),
            "systems": sorted(night.session.systems), "verdict": str(v.verdict),
            "exit_code": v.exit_code, "headline": v.headline(),
            "cases": n.cases, "failed": n.failed, "xpassed": n.xpassed,
            "regressions": n.regressions, "watched": n.watched, "slow_hosts": n.slow_hosts,
            "regressed_builds": sorted({b.build for b in night.judgement.builds
                                        if b.status == Status.REGRESSION}),
            "confirmations": [c.uuid for c in night.confirmations]}


def _changed(night: Night) -> dict[str, list[str]]:
    """Per regressed build, what changed since it last passed, as lines."""
    return {c.build: [c.heading(), *(ch.text for ch in c.changes or ())]
            for c in night.changed}


def value_record(v: ValueVerdict, case: Case | None, changed: list[str] | None = None
                 ) -> dict:
    """One judged value's verdict as one record."""
    system, _, partition = v.partition.partition(":")
    out = {"record": "value verdict", "system": system, "partition": partition,
           "environ": v.environ, **(build_fields(None, case) if case else {}),
           "build": v.build, "check": v.check, "placement": v.placement, "var": v.var,
           "quantity": v.quantity, "unit": v.unit, "verdict": str(v.status),
           "value": v.value, "samples": list(v.all_samples), "reference": v.reference,
           "tolerance": v.tolerance, "change": v.change}
    if v.status in WHY:
        out["why"] = v.why()
    if case is not None:
        out["benchmark"] = case.benchmark
    if v.size is not None:
        out["size"] = v.size
    if v.status in (Status.REGRESSION, Status.WATCH):
        out["line"] = v.line()
    if v.status == Status.REGRESSION and changed:
        out["changed"] = changed
    return out


def verdict_records(session: Session, night: Night) -> list[dict]:
    """The night's record, then one per judged value of the session, regressions and
    watches first."""
    cases = {case.value_key(pv.var): case for case in session.cases for pv in case.values}
    changed = _changed(night)
    common = _session_fields(session)
    values = sorted(night.judgement.verdicts, key=lambda v: ORDER.get(v.status, 2))
    return [night_record(night),
            *({**common, **value_record(v, cases.get(v.key), changed.get(v.build))}
              for v in values)]


def post_verdicts(session: Session, night: Night, budget: float = BUDGET) -> list[str]:
    """POST the night's verdict records to each httpjson handler of the site; a line per
    handler says what reached it."""
    handlers = [h for h in current().perflog if h["type"] == "httpjson"]
    if not handlers:
        return []
    records = verdict_records(session, night)
    deadline = time.monotonic() + budget
    lines = []
    for handler in handlers:
        url = shown_url(handler["url"])
        if handler.get("debug"):
            lines.append(f"{url}: the handler is in debug mode, {len(records)} record(s) "
                         "not sent")
            continue
        poster = Poster(handler["url"], handler.get("extra_headers"),
                        max(0.0, deadline - time.monotonic()))
        sent = poster.post(with_extras(records, handler.get("extras"),
                                       handler.get("ignore_keys") or ()))
        if sent == len(records):
            lines.append(f"posted {sent} verdict record(s) to {url}")
        else:
            why = poster.stopped or "stopped"
            lines.append(f"{url}: {why}, {len(records) - sent} record(s) not sent; the "
                         "night's verdict stands")
    return lines
