"""What a night hands to the site's monitoring once it is judged: each judged value's
verdict as a record to the site's httpjson perflog handlers (perflog_verdicts.py), the
night's values and verdicts as OpenMetrics for Prometheus (metrics_textfile.py), and the
session to the shared store (central_store.py). Each is best effort: a monitoring
endpoint or database that is away is said on stderr and never changes the night's
verdict or exit code; what did not reach the shared store goes up with a later command."""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..results.measurements import Session
from ..results.night import Night


def _each() -> list[tuple[str, Callable[[Session, Night], list[str]]]]:
    from . import central_store, metrics_textfile, perflog_verdicts

    return [("perflog", perflog_verdicts.post_verdicts),
            ("metrics", metrics_textfile.write_night),
            ("store", central_store.upload_night)]


def publish(session: Session, night: Night) -> None:
    """Hand the judged night to every outlet the site configured; say what each did."""
    for name, outlet in _each():
        try:
            lines = outlet(session, night)
        except Exception as err:
            lines = [f"failed ({type(err).__name__}: {err}); the night's verdict stands"]
        for line in lines:
            print(f"mpimatrix: {name}: {line}", file=sys.stderr)
