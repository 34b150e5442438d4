"""Files the product writes are replaced whole, never seen half-written, with the mode
the umask gives a new file (a temporary file is made 0600 first)."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

#: Temporary files of writers killed this long ago are removed by the next writer.
STALE_SECONDS = 600


def umask() -> int:
    """The process's umask (from /proc, else set and put back)."""
    try:
        with open("/proc/self/status") as fp:
            for line in fp:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
            os.fchmod(fp.fileno(), 0o666 & ~umask())
            fp.write(text)
            fp.flush()
            os.fsync(fp.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
