"""A real PostgreSQL cluster a test module starts: its own cluster folder, socket folder
and free port (modules run side by side), password authentication over TCP, run as
`nobody` when the tests run as root (PostgreSQL refuses root)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from helpers import skip_or_fail

PG_BIN = Path(os.environ.get("MPIMATRIX_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
PASSWORD = "s3cret-test"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user() -> tuple[list[str], int]:
    """The command prefix that runs PostgreSQL's programs unprivileged, and its uid."""
    if os.geteuid() != 0:
        return [], os.geteuid()
    nobody = pwd.getpwnam("nobody")
    return ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
            "--clear-groups"], nobody.pw_uid


@contextlib.contextmanager
def postgres_server() -> Iterator[tuple[str, int]]:
    """(host, port) of a running cluster whose user `mpimatrix` has PASSWORD; skipped (or
    failed where MPIMATRIX_REQUIRE_SERVERS=1) without PostgreSQL or psycopg."""
    if not (PG_BIN / "initdb").exists():
        skip_or_fail(f"PostgreSQL's server programs are not in {PG_BIN} (Debian: apt-get "
                     "install postgresql-15; or MPIMATRIX_TEST_PG_BIN)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        skip_or_fail("the PostgreSQL driver psycopg (pyproject.toml) is not installed: "
                     ".venv/bin/pip install -e .")
    prefix, uid = _as_server_user()
    if prefix and not shutil.which("setpriv"):
        skip_or_fail("running as root without setpriv: PostgreSQL refuses to run as root")
    base = Path(tempfile.mkdtemp(prefix="mpm-pg-"))  # short: a socket path
    os.chown(base, uid, -1)
    pwfile = base / "pw"
    pwfile.write_text(PASSWORD + "\n")
    os.chown(pwfile, uid, -1)
    port = free_port()
    run = dict(check=True, capture_output=True, text=True, timeout=120)
    subprocess.run([*prefix, str(PG_BIN / "initdb"), "-D", str(base / "data"), "-U",
                    "mpimatrix", f"--pwfile={pwfile}", "--auth=scram-sha-256", "-E", "UTF8",
                    "--no-sync"], **run)
    opts = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run([*prefix, str(PG_BIN / "pg_ctl"), "-D", str(base / "data"), "-o", opts,
                    "-l", str(base / "log"), "-w", "start"], **run)
    try:
        yield "127.0.0.1", port
    finally:
        subprocess.run([*prefix, str(PG_BIN / "pg_ctl"), "-D", str(base / "data"), "-m",
                        "immediate", "stop"], capture_output=True, timeout=120)
        shutil.rmtree(base, ignore_errors=True)


def new_database(server: tuple[str, int], name: str) -> str:
    """A new, empty database of the cluster named after `name`: its URL (without the
    password: PASSWORD goes in PGPASSWORD)."""
    import psycopg

    host, port = server
    db = "t_" + "".join(c if c.isalnum() else "_" for c in name)[:50].lower()
    with psycopg.connect(f"postgresql://mpimatrix:{PASSWORD}@{host}:{port}/postgres",
                         autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db}"')
        conn.execute(f'CREATE DATABASE "{db}"')
    return f"postgresql://mpimatrix@{host}:{port}/{db}"
