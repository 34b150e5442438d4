"""The judged night as a Prometheus text file for node-exporter's textfile collector, at
the path MPIMATRIX_METRICS_TEXTFILE names (site settings: `monitoring: metrics_textfile`).
Written to a temporary file in the same folder and renamed over it, as node-exporter's
documentation asks: the collector never reads half a night."""

from __future__ import annotations

import os
from pathlib import Path

from ..atomic import atomic_write
from ..results.measurements import Session
from ..results.night import Night
from ..results.prometheus_text import exposition, night_families, series_count

ENV = "MPIMATRIX_METRICS_TEXTFILE"


def textfile() -> Path | None:
    """The text file the site configured, None for none."""
    path = os.environ.get(ENV, "").strip()
    return Path(path).expanduser() if path else None


def write_textfile(path: Path, night: Night) -> int:
    """Write the night to `path` (atomically); the number of series written. OSError
    when the folder cannot be written."""
    families = night_families(night)
    atomic_write(path, exposition(families))
    return series_count(families)


def write_night(session: Session, night: Night) -> list[str]:
    """After `mpimatrix run` judged a night: write it where the site said, and say so;
    a folder that cannot be written is said, never raised (the night's verdict stands)."""
    path = textfile()
    if path is None:
        return []
    if not path.name.endswith(".prom"):
        return [f"{ENV}={path}: node-exporter's textfile collector reads only *.prom "
                "files: name the file <something>.prom"]
    try:
        count = write_textfile(path, night)
    except OSError as err:
        return [f"could not write {path} ({err.strerror or err}): make {path.parent} "
                "writable by this user, or change monitoring: metrics_textfile"]
    return [f"wrote {count} series to {path}"]
