"""Release tarballs of the benchmark suites, for a machine given no sources.

A connected machine downloads each suite's release once into the user cache,
${XDG_CACHE_HOME:-~/.cache}/mpimatrix/sources/<package>/<package>-<version>.tar.gz
(the layout of a Spack mirror and of the offline kit), and keeps it only if its
sha256 is the one Spack's recipe carries. MPIMATRIX_SOURCES_URL names a mirror in
that layout to download from instead of upstream; MPIMATRIX_DOWNLOAD=0 turns
downloads off. A machine without a network fails within the short timeout.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import urllib.error
import urllib.request
from pathlib import Path

from ..paths import user_cache_dir
from .bench_sources import SourceError
from .bench_suites import Suite
from .checksum import file_sha256

URL_ENV = "MPIMATRIX_SOURCES_URL"
DOWNLOAD_ENV = "MPIMATRIX_DOWNLOAD"
#: Seconds to wait for a connection or a read: a machine without a network fails fast.
TIMEOUT = 10.0


def downloads_dir() -> Path:
    return user_cache_dir() / "sources"


def download_path(suite: Suite) -> Path:
    return downloads_dir() / suite.package / suite.archive


def release_url(suite: Suite) -> str:
    base = os.environ.get(URL_ENV, "").strip()
    if base:
        return f"{base.rstrip('/')}/{suite.package}/{suite.archive}"
    return suite.release.url


def downloads_enabled() -> bool:
    return os.environ.get(DOWNLOAD_ENV, "1").strip().lower() not in ("0", "no", "false", "off")




def downloaded(suite: Suite) -> Path | None:
    """The release in the user cache, if it is there with the recipe's sha256."""
    path = download_path(suite)
    try:
        return path if file_sha256(path) == suite.release.sha256 else None
    except OSError:
        return None


def fetch(suite: Suite, timeout: float = TIMEOUT) -> Path:
    """The suite's release tarball: from the user cache, else downloaded and checked.
    A checksum mismatch is refused (the file is not kept); so is a download that fails."""
    have = downloaded(suite)
    if have is not None:
        return have
    url, dest = release_url(suite), download_path(suite)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    h = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(part, "wb") as out:
            for chunk in iter(lambda: resp.read(1 << 20), b""):
                h.update(chunk)
                out.write(chunk)
    except (OSError, ValueError, http.client.HTTPException) as err:
        part.unlink(missing_ok=True)
        why = err.reason if isinstance(err, urllib.error.URLError) else err
        raise SourceError(f"cannot download {suite.label} {suite.release.version} from "
                          f"{url}: {why}") from None
    actual = h.hexdigest()
    if actual != suite.release.sha256:
        part.unlink()
        raise SourceError(f"{suite.archive} from {url} refused: its sha256 is {actual}, "
                          f"expected {suite.release.sha256} (Spack's {suite.package}@"
                          f"{suite.release.version})")
    part.replace(dest)
    return dest
