"""URLs as mpimatrix's lines show them."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def shown_url(url: str) -> str:
    """The URL without a password it may hold (the user name stays: it says which
    account a line is about)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    netloc = f"{parts.username}@{host}" if parts.username else host
    return urlunsplit(parts._replace(netloc=netloc + (f":{parts.port}" if parts.port else "")))
