"""The real node-exporter (textfile collector only), Prometheus (scraping it every second,
the given rules, alerting) and Alertmanager, each on a free port of 127.0.0.1 with its own
folder: tests can run side by side (pytest -n auto)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

from helpers import require_programs

PACKAGES = "prometheus prometheus-node-exporter prometheus-alertmanager"
#: seconds a server has to answer, a series to appear, an alert to arrive
TIMEOUT = 90


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str) -> dict | list:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)


class Stack:
    """`with Stack(folder, rules) as s`: the three servers; `s.textfile` is the file
    node-exporter reads."""

    def __init__(self, folder: Path, rules: Path):
        self.programs = require_programs("prometheus", "prometheus-node-exporter",
                                         "prometheus-alertmanager", package=PACKAGES)
        self.folder, self.rules = folder, rules
        self.textfile = folder / "textfile" / "mpimatrix.prom"
        self.ports = {name: free_port() for name in ("node", "prometheus", "alertmanager")}
        self.procs: list[subprocess.Popen] = []

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}"

    def __enter__(self) -> Stack:
        self.textfile.parent.mkdir(parents=True)
        am_config = self.folder / "alertmanager.yml"
        am_config.write_text("route: {receiver: none, group_wait: 1s}\n"
                             "receivers: [{name: none}]\n")
        prom_config = self.folder / "prometheus.yml"
        prom_config.write_text(json.dumps({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(self.rules)],
            "alerting": {"alertmanagers": [{"static_configs": [
                {"targets": [f"127.0.0.1:{self.ports['alertmanager']}"]}]}]},
            "scrape_configs": [{"job_name": "node", "static_configs": [
                {"targets": [f"127.0.0.1:{self.ports['node']}"]}]}]}))
        try:
            self._start("prometheus-node-exporter",
                        f"--web.listen-address=127.0.0.1:{self.ports['node']}",
                        "--collector.disable-defaults", "--collector.textfile",
                        f"--collector.textfile.directory={self.textfile.parent}")
            self._start("prometheus-alertmanager", f"--config.file={am_config}",
                        f"--storage.path={self.folder / 'am-data'}",
                        f"--web.listen-address=127.0.0.1:{self.ports['alertmanager']}",
                        "--cluster.listen-address=")
            self._start("prometheus", f"--config.file={prom_config}",
                        f"--storage.tsdb.path={self.folder / 'prom-data'}",
                        f"--web.listen-address=127.0.0.1:{self.ports['prometheus']}")
            for name, path in (("node", "/metrics"), ("alertmanager", "/-/ready"),
                               ("prometheus", "/-/ready")):
                self._until(lambda n=name, p=path: self._answers(n, p), f"{name} ready")
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self, program: str, *args: str) -> None:
        log = (self.folder / f"{program}.log").open("w")
        self.procs.append(subprocess.Popen([self.programs[program], *args], stdout=log,
                                           stderr=subprocess.STDOUT, cwd=self.folder))

    def _answers(self, name: str, path: str) -> bool:
        try:
            with urllib.request.urlopen(self.url(name) + path, timeout=2):
                return True
        except OSError:
            return False

    def _until(self, found, what: str):
        """found()'s first truthy answer within TIMEOUT seconds; else fail with the logs."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    raise AssertionError(f"{p.args[0]} exited {p.returncode}:\n{self.logs()}")
            got = found()
            if got:
                return got
            time.sleep(0.2)
        raise AssertionError(f"no {what} within {TIMEOUT} s:\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {f.name}\n{f.read_text()[-3000:]}"
                         for f in sorted(self.folder.glob("*.log")))

    def query(self, expr: str) -> list[dict]:
        """Prometheus' instant query (/api/v1/query): its result vector."""
        url = f"{self.url('prometheus')}/api/v1/query?" + urllib.parse.urlencode(
            {"query": expr})
        return get_json(url)["data"]["result"]

    def wait_for(self, expr: str) -> list[dict]:
        return self._until(lambda: self.query(expr), f"result of {expr}")

    def alerts(self, name: str) -> list[dict]:
        """The active alerts of that name in Alertmanager (/api/v2/alerts)."""
        url = f"{self.url('alertmanager')}/api/v2/alerts?" + urllib.parse.urlencode(
            {"filter": f'alertname="{name}"', "active": "true"})
        return get_json(url)

    def wait_for_alert(self, name: str) -> list[dict]:
        return self._until(lambda: self.alerts(name), f"alert {name} in Alertmanager")

    def __exit__(self, *_) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
