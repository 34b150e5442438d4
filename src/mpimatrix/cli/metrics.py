"""`mpimatrix metrics`: a stored night, judged as `mpimatrix run` judged it, as Prometheus
metrics (results/prometheus_text.py): to a text file for node-exporter's textfile collector,
to stdout, or served on /metrics (docs/prometheus.md)."""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ..results.measurements import Session
from ..results.measurements import load as load_session
from ..results.night import Night
from ..results.prometheus_text import exposition, night_families
from ..results.sessions import SessionError
from ..run.metrics_textfile import write_textfile
from ..run.nights import confirmations_of, judge_stored, system_of
from ..run.selectors import LATEST, parse, select_one, select_uuids
from .report import references_of

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def stored_night(args) -> Session:
    """The stored session --session names (default the latest night)."""
    session = load_session(select_one(args.session, "--session"))
    if session.confirms:
        raise SessionError(f"--session {args.session}: session {session.uuid} is a "
                           f"confirmation of session {session.confirms}: give that one")
    return session


def judged_night(args) -> Night:
    """The night --session names, judged as `mpimatrix run` judged it."""
    session = stored_night(args)
    return judge_stored(session, confirmations_of([session]),
                        references_of(args, system_of(session)))


def cmd_metrics(args) -> int:
    parse(args.session)  # a bad selector is said before anything is read
    serve = _address(args.serve) if args.serve else None
    if args.textfile is not None:
        path = Path(args.textfile)
        night = judged_night(args)
        try:
            count = write_textfile(path, night)
        except OSError as err:
            raise SessionError(f"--textfile {path}: cannot write ({err.strerror or err}): "
                               "name a file in a folder this user can write") from None
        print(f"wrote {count} series of session {night.session.uuid} to {path}")
    elif serve is None:
        sys.stdout.write(exposition(night_families(judged_night(args))))
    if serve is not None:
        _serve(args, *serve)
    return 0


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise SessionError(f"--serve {text!r}: give HOST:PORT, e.g. 127.0.0.1:9469")
    return host.strip("[]"), int(port)


class _Latest:
    """The night's text, judged again only when --session names another night than
    the last request found (`latest` after a new night)."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.uuid = ""
        self.text = ""

    def get(self) -> str:
        with self.lock:
            uuid = select_uuids([self.args.session])[0]
            if uuid != self.uuid:
                night = judged_night(self.args)
                self.text, self.uuid = exposition(night_families(night)), night.session.uuid
            return self.text


def _serve(args, host: str, port: int) -> None:
    latest = _Latest(args)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # http.server calls it by this name
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "only /metrics")
                return
            try:
                body = latest.get().encode()
            except SessionError as err:
                self.send_error(503, str(err))
                return
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):  # a scrape every few seconds: no line each
            pass

    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as err:
        raise SessionError(f"--serve {host}:{port}: {err.strerror or err}: give a free "
                           "port on an address of this host") from None
    print(f"serving http://{host}:{server.server_address[1]}/metrics", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def register(sub) -> None:
    s = sub.add_parser(
        "metrics", help="a stored night's values and verdicts as Prometheus metrics",
        description="The night judged as `mpimatrix run` judged it (its confirmations, "
        "the nights before it, the machine-load record) in Prometheus' text format: to "
        "--textfile (for node-exporter's textfile collector), served on --serve, or to "
        "stdout. docs/prometheus.md lists the series.")
    s.add_argument("--session", default=LATEST, metavar="SESSION",
                   help="stored session: a UUID, its first 8 characters or `latest` (the "
                   "default: the newest night)")
    s.add_argument("--textfile", metavar="PATH", help="write here, atomically (a *.prom "
                   "file in node-exporter's --collector.textfile.directory)")
    s.add_argument("--serve", metavar="HOST:PORT", help="serve /metrics here (judged "
                   "again when a new night is stored) until interrupted")
    s.add_argument("--references", metavar="FILE", help="reference file (default "
                   "results/references/<system>.yaml)")
    s.set_defaults(func=cmd_metrics)
