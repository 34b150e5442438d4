"""Files the product writes are replaced whole, never seen half-written."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

#: Temporary files of writers killed this long ago are removed by the next writer.
STALE_SECONDS = 600


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write `text` to a temporary file in the same directory, flush it to disk,
    then rename it over `path`: readers (and a kill at any moment) see the old
    file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        try:
            if now - stale.stat().st_mtime > STALE_SECONDS:
                stale.unlink()
        except OSError:
            pass
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as fp:
            fp.write(text)
            fp.flush()
            os.fsync(fp.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
