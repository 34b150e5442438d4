"""The site's own ReFrame perflog handlers (site settings: monitoring.perflog), beside
mpimatrix's file log, and what mpimatrix sends to the site's httpjson endpoints.

ReFrame logs one perflog record per test case with all its performance values in it.
Its `perflog_multiline` option would log one per value, but then every handler gets
them: mpimatrix's file log would repeat each test case's line once per value. So it
stays off, and an httpjson handler without a json_formatter of the site's gets
`ValueRecords`, which splits the test case into one JSON record per value (what a
dashboard groups by: system, partition, build, spec, family, fabric, compiler,
benchmark, placement, message size) and posts them itself.

It posts itself because ReFrame's handler posts without a timeout: an endpoint that
accepts the connection and never answers would hang the night. `Poster` bounds each POST
(POST_TIMEOUT), the time spent on one URL (a budget), and stops at its first failure;
the formatter then returns None, which ReFrame takes as nothing to send.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..builds.record import BuildRecord
from ..results.measurements import Case
from ..urls import shown_url

#: Seconds one POST may take to connect, and then to be answered.
POST_TIMEOUT = 2.0
#: Seconds one ReFrame session spends posting to one URL at most (a few thousand
#: values to an endpoint that answers in milliseconds take a few seconds).
SESSION_BUDGET = 30.0
#: What every POST carries; the handler's extra_headers add to it.
JSON_HEADERS = {"Content-Type": "application/json", "Accept-Charset": "UTF-8"}


class Poster:
    """POSTs JSON records to one URL, each within POST_TIMEOUT, none started once
    `budget` seconds are spent (summed over calls: the last may end POST_TIMEOUT later);
    after its first failure it sends nothing more (`stopped` says why)."""

    def __init__(self, url: str, headers: Mapping[str, str] | None = None,
                 budget: float = SESSION_BUDGET):
        self.url = url
        self.headers = {**JSON_HEADERS, **(headers or {})}
        self.budget = budget
        self.spent = 0.0
        self.stopped = ""
        self._http = None

    def post(self, records: Iterable[dict]) -> int:
        """Send the records in order until one fails; how many were sent."""
        import requests  # ReFrame's dependency; only sessions that post need it

        if self.stopped:
            return 0
        if self._http is None:
            self._http = requests.Session()
        sent, started = 0, time.monotonic()
        try:
            for record in records:
                if self.spent + time.monotonic() - started >= self.budget:
                    self.stopped = f"its time budget of {self.budget:g} s is spent"
                    break
                response = self._http.post(self.url, data=json.dumps(record, default=str),
                                           headers=self.headers, timeout=POST_TIMEOUT)
                if not response.ok:
                    self.stopped = f"HTTP {response.status_code} {response.reason}"
                    break
                sent += 1
        except requests.ConnectTimeout:
            self.stopped = f"no connection within {POST_TIMEOUT:g} s"
        except requests.Timeout:
            self.stopped = f"no answer within {POST_TIMEOUT:g} s"
        except requests.ConnectionError as err:
            self.stopped = f"cannot connect ({_innermost(err)})"
        except requests.RequestException as err:
            self.stopped = f"{type(err).__name__}: {_innermost(err)}"
        finally:
            self.spent += time.monotonic() - started
        return sent


def _innermost(err: BaseException) -> BaseException:
    """The error at the bottom of requests' and urllib3's chain ([Errno 111] Connection
    refused), not their wrappers' long messages."""
    while err.__cause__ or err.__context__:
        err = err.__cause__ or err.__context__
    return err


def report_name(argv: Sequence[str]) -> str:
    """The session's report name (`--report-file` of the ReFrame command line, which
    `mpimatrix run` makes unique: quick-20261206T074456-af0d61), '' without one. The
    session's UUID is made only when ReFrame writes its report; the verdict records
    carry both."""
    for i, arg in enumerate(argv):
        if arg == "--report-file" and i + 1 < len(argv):
            return Path(argv[i + 1]).stem
        if arg.startswith("--report-file="):
            return Path(arg.partition("=")[2]).stem
    return ""


def build_fields(build: BuildRecord | None, case: Case) -> dict:
    """The build's name and axes from its record (spec and Spack hash where it has them);
    what the check recorded where the environment has no record."""
    if build is None:
        fields = {"build": case.build, **case.build_fields,
                  "spec": case.build_spec or "", "spack_hash": case.build_hash}
    else:
        fields = {"build": build.name, "family": build.family, "version": build.version,
                  "fabric": build.fabric, "compiler": build.compiler,
                  "provenance": build.provenance, "spec": build.spec,
                  "spack_hash": build.dag_hash}
    return {k: v for k, v in fields.items() if v or k in ("build", "family")}


def value_records(record, build: BuildRecord | None, report: str = "") -> list[dict]:
    """One record per performance value of a ReFrame perflog record (ReFrame's check_*
    attributes, read as the stored test case is: measurements.Case); one without a
    value for a test case that has none and did not pass (a failure shows too)."""
    tc = {k.removeprefix("check_"): v for k, v in vars(record).items()
          if k.startswith("check_")}
    case = Case(tc, "", 0)
    common = {"record": "value", "time": tc.get("job_completion_time"),
              "system": case.system, "partition": case.partition_name,
              "environ": case.environ, **build_fields(build, case), "check": case.check,
              "benchmark": case.benchmark, "placement": case.placement,
              "test": case.name, "result": case.result}
    if report:
        common["report"] = report
    out = []
    for pv in case.values:
        value = {"var": pv.var, "quantity": pv.quantity, "value": pv.value, "unit": pv.unit,
                 "reference": pv.ref, "lower_thres": pv.lower, "upper_thres": pv.upper,
                 "perf_result": pv.result}
        if pv.size is not None:
            value["size"] = pv.size
        out.append({**common, **value})
    if not out and case.result != "pass":
        out.append({**common, "fail_phase": case.fail_phase,
                    "fail_reason": case.fail_reason})
    return out


def with_extras(records: list[dict], extras: Mapping | None,
                ignore_keys: Iterable[str] = ()) -> list[dict]:
    """The handler's extras added to each record, keys it ignores left out (as ReFrame's
    own formatter does)."""
    ignored = set(ignore_keys or ())
    return [{k: v for k, v in {**r, **(extras or {})}.items()
             if k not in ignored and not k.startswith("_")} for r in records]


class ValueRecords:
    """mpimatrix's json_formatter of a site's httpjson handler: ReFrame calls it with each
    perflog record; it posts one record per value to the handler's URL (with its
    extra_headers) and returns None, so ReFrame's own handler sends nothing. With the
    handler's `debug` on, it returns the records for ReFrame to write to a file instead."""

    def __init__(self, handler: Mapping, builds: Mapping[str, BuildRecord]):
        self.poster = Poster(handler["url"], handler.get("extra_headers"))
        self.debug = bool(handler.get("debug"))
        self.builds = builds

    def __call__(self, record, extras, ignore_keys):
        # ReFrame catches only its LoggingError around a perflog handler: anything else
        # raised here would end the test case as an error
        if self.poster.stopped:
            return None
        try:
            records = with_extras(
                value_records(record, self.builds.get(getattr(record, "check_environ", "")),
                              report_name(sys.argv)), extras, ignore_keys)
            if self.debug:
                return json.dumps(records, default=str)
            self.poster.post(records)
            if self.poster.stopped:
                _warn(f"mpimatrix: perflog {shown_url(self.poster.url)}: {self.poster.stopped}; "
                      "no more performance records go there in this session (the run goes on)")
        except Exception as err:  # a record this code cannot read: said, never fatal
            _warn(f"mpimatrix: perflog {shown_url(self.poster.url)}: record not sent "
                  f"({type(err).__name__}: {err})")
        return None


def _warn(message: str) -> None:
    from reframe.core.logging import getlogger

    getlogger().warning(message)


def handler_line(handler: Mapping) -> str:
    """A perflog handler as `mpimatrix site` shows it (the names of its headers, never
    their values: they hold tokens)."""
    where = (shown_url(handler["url"]) if handler.get("url") else
             handler.get("address") or handler.get("name") or "")
    extras = ", ".join(map(str, handler.get("extras") or {}))
    headers = ", ".join(map(str, handler.get("extra_headers") or {}))
    sends = ("one record per value (mpimatrix's)" if handler["type"] == "httpjson"
             and not handler.get("json_formatter") else "")
    return ", ".join(x for x in (f"{handler['type']} {where}".strip(), sends,
                                 extras and f"extras {extras}",
                                 headers and f"headers {headers}") if x)


def perflog_handlers(handlers: Sequence[Mapping], builds: Sequence[BuildRecord]
                     ) -> list[dict]:
    """The site's perflog handlers as ReFrame's configuration takes them; an httpjson
    handler without a json_formatter of its own gets a ValueRecords."""
    by_environ = {b.environ_name: b for b in builds}
    out = []
    for handler in handlers:
        handler = dict(handler)
        if handler["type"] == "httpjson" and not handler.get("json_formatter"):
            handler["json_formatter"] = ValueRecords(handler, by_environ)
        out.append(handler)
    return out
