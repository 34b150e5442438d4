"""URLs as mpimatrix's lines show them."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def shown_url(url: str) -> str:
    """The URL without a password it may hold (the user name stays: it says which
    account a line is about)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host_port = parts.netloc.rpartition("@")[2]  # as written: an IPv6 host's brackets stay
    netloc = f"{parts.username}@{host_port}" if parts.username else host_port
    return urlunsplit(parts._replace(netloc=netloc))
