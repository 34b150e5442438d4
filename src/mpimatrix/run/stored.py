"""Sessions from ReFrame's results database, through ReFrame's own command line."""

from __future__ import annotations

import json
import subprocess

from ..results.sessions import SessionError
from .reframe_cmd import reframe_cmd


def stored_sessions(uuids: list[str]) -> list[dict]:
    out = []
    for uuid in uuids:
        proc = subprocess.run(reframe_cmd("--describe-stored-sessions", uuid),
                              capture_output=True, text=True)
        try:
            data = json.loads(proc.stdout)
        except ValueError:
            data = None
        sessions = data if isinstance(data, list) else [data] if isinstance(data, dict) else []
        if not sessions:
            why = (proc.stderr.strip().splitlines() or [""])[-1]
            raise SessionError(f"no stored session {uuid!r} in the results database"
                               f"{f' ({why})' if why else ''}; list them with: reframe -C "
                               "site_config/reframe_config.py --list-stored-sessions=all")
        out += sessions
    return out
