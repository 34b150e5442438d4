#!/usr/bin/env python3
"""What a site's httpjson perflog handler adds to a night of 40 builds, when its endpoint
is fine, down, answers HTTP 500, or accepts connections and never answers.

The night: the recorded real `--mode compare` session of 5 builds
(tests/fixtures/reports/compare-local-5builds.json.gz: 3 passes of 42 test cases with
values, 84 values a pass) with each build copied 8 times under other names: 40 builds,
1008 ReFrame perflog records (test cases) and 2016 values. The handlers are the ones the
generated configuration (site_config/reframe_config.py, loaded by ReFrame's own loader)
makes of a site settings file naming the four endpoints, each made by ReFrame's own
factory (whose start-up connection check is timed too) with mpimatrix's json_formatter
(site/perflog.py: one POST per value). Each test case goes to it as ReFrame's perflog
logger hands it over: a LogRecord with its check_* attributes. After it, the night's
verdict records (one per distinct value, and the night's: 673) go through the same
Poster with the budget run/perflog_verdicts.py gives them (PERFLOG_VERDICT_BUDGET).

Endpoints on 127.0.0.1: fine (answers 200), down (a closed port), 500 (answers 500) and
hang (accepts, reads, never answers). Prints per endpoint the seconds each part took
and how many records arrived. `--reframe-own` also shows ReFrame's own formatter against
the hanging endpoint: its POST has no timeout (given up on after 10 s here).

    .venv/bin/python measure/perflog_cost.py [--copies 8] [--reframe-own]
"""

from __future__ import annotations

import argparse
import copy
import gzip
import http.server
import json
import logging
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

from reframe.core.config import load_config
from reframe.core.logging import _create_httpjson_handler

from mpimatrix.validation.api import PERFLOG_VERDICT_BUDGET, load

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "reports" / "compare-local-5builds.json.gz"
CONFIG = ROOT / "site_config" / "reframe_config.py"
ENDPOINTS = ("fine", "down", "500", "hang")


def night_of(copies: int) -> dict:
    """The fixture's session with each build copied `copies` times."""
    report = json.load(gzip.open(FIXTURE))
    for run in report["runs"]:
        cases = [tc for tc in run["testcases"] if tc.get("perfvalues")]
        run["testcases"] = []
        for i in range(copies):
            for tc in cases:
                tc = copy.deepcopy(tc)
                tc["environ"] += f"-c{i}"
                tc["build_name"] += f"-c{i}"
                run["testcases"].append(tc)
    return report


def log_records(report: dict) -> list[logging.LogRecord]:
    """Each test case as ReFrame's perflog logger hands it to a handler."""
    out = []
    for run in report["runs"]:
        for tc in run["testcases"]:
            r = logging.LogRecord("reframe", logging.INFO, __file__, 0, "sent", None, None)
            for k, v in tc.items():
                setattr(r, f"check_{k}", v)
            r.check_tags = list(tc.get("tags") or [])
            out.append(r)
    return out


def verdict_records(report: dict) -> list[dict]:
    """Records of the size and number of the night's verdict records: the night's, and
    one per distinct value of the session."""
    session = load(report)
    values = {}
    for case in session.cases:
        for pv in case.values:
            values[case.value_key(pv.var)] = {
                "record": "value verdict", "session": session.uuid, "build": case.build,
                "check": case.check, "placement": case.placement, "var": pv.var,
                "size": pv.size, "unit": pv.unit, "value": pv.value, "reference": pv.ref,
                "verdict": "pass", "samples": [pv.value] * 3, "change": 0.01}
    return [{"record": "night", "session": session.uuid, "verdict": "GREEN"},
            *values.values()]


class Receiver(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Elasticsearch answers
    status = 200
    received: list = []

    def do_POST(self):
        self.received.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(self.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def serve(status: int) -> tuple[int, list, object]:
    handler = type("R", (Receiver,), {"status": status, "received": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1], handler.received, server.shutdown


def silent() -> tuple[int, list, object]:
    """Accepts connections, reads what comes, never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held = []

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1], [], listener.close


def closed() -> tuple[int, list, object]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port, [], lambda: None


def site_config(urls: list[str], tmp: Path):
    """ReFrame's site configuration as `mpimatrix run` generates it, with a site settings
    file naming one httpjson handler per URL (handlers_perflog/1, /2, ...)."""
    site = tmp / "site.yaml"
    site.write_text(json.dumps({"monitoring": {"perflog": [
        {"type": "httpjson", "url": url, "extras": {"facility": "mpimatrix"},
         "extra_headers": {"Authorization": "ApiKey x"}} for url in urls]}}))
    os.environ.update(MPIMATRIX_SITE_FILE=str(site), MPIMATRIX_RESULTS=str(tmp / "results"))
    config = load_config(str(CONFIG))
    config.select_subconfig("local")
    return config


def one_endpoint(name: str, config, i: int, received: list, records, verdicts) -> None:
    prefix = f"logging/0/handlers_perflog/{i}"
    t0 = time.monotonic()
    handler = _create_httpjson_handler(config, prefix)
    t1 = time.monotonic()
    for r in records if handler else ():
        handler.emit(r)
    t2 = time.monotonic()
    # the verdicts: the Poster run/perflog_verdicts.py posts them with, a fresh one
    poster_class = type(config.get(f"{prefix}/json_formatter").poster)
    poster = poster_class(config.get(f"{prefix}/url"), config.get(f"{prefix}/extra_headers"),
                          PERFLOG_VERDICT_BUDGET)
    sent = poster.post(verdicts)
    t3 = time.monotonic()
    print(f"{name:5} start check {t1 - t0:4.2f} s ({'on' if handler else 'skipped'}), "
          f"{len(records)} perflog records {t2 - t1:5.2f} s, {len(verdicts)} verdict records "
          f"{t3 - t2:5.2f} s ({sent} sent{': ' + poster.stopped if poster.stopped else ''}); "
          f"added {t3 - t0:5.2f} s; {len(received)} records received")


def reframe_own_hangs(records) -> None:
    port, _, stop = silent()
    with tempfile.TemporaryDirectory() as tmp:
        config = site_config([f"http://127.0.0.1:{port}/perf/_doc"], Path(tmp))
        config.get("logging/0/handlers_perflog/1")["json_formatter"] = None
        handler = _create_httpjson_handler(config, "logging/0/handlers_perflog/1")
    done = threading.Event()
    threading.Thread(target=lambda: (handler.emit(records[0]), done.set()),
                     daemon=True).start()
    answered = done.wait(10)
    stop()
    print(f"ReFrame's own formatter, hanging endpoint: one record "
          f"{'sent' if answered else 'still waiting after 10 s'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--copies", type=int, default=8, help="copies of each of the 5 builds")
    ap.add_argument("--reframe-own", action="store_true")
    args = ap.parse_args()
    report = night_of(args.copies)
    records = log_records(report)
    verdicts = verdict_records(report)
    print(f"{5 * args.copies} builds: {len(records)} perflog records, "
          f"{sum(len(r.check_perfvalues) for r in records)} values; "
          f"{len(verdicts)} verdict records")
    endpoints = {"fine": serve(200), "down": closed(), "500": serve(500), "hang": silent()}
    with tempfile.TemporaryDirectory() as tmp:
        config = site_config([f"http://127.0.0.1:{port}/perf/_doc"
                              for port, _, _ in endpoints.values()], Path(tmp))
        for i, (name, (_, received, stop)) in enumerate(endpoints.items(), 1):
            one_endpoint(name, config, i, received, records, verdicts)
            stop()
    if args.reframe_own:
        reframe_own_hangs(records)


if __name__ == "__main__":
    main()
