"""The software each session ran on, kept by content hash in the results store.

    <results>/software/<id>.json            a session's software record (builds/software.py)
    <results>/software/locks/<sha256>.gz    a Spack lock the builds came from

A session names its record in its extras (software=<id>); unchanged nights give the
same record, so a year of them stores one file, and a lock is stored once per sha256.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

from ..atomic import atomic_write
from ..builds.spack.lockfile import Lock, LockError, parse_lock
from ..paths import results_dir


def software_dir(results: Path | None = None) -> Path:
    return (results or results_dir()) / "software"


def record_id(software: dict) -> str:
    text = json.dumps(software, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def store_software(software: dict, locks: list[Path], results: Path | None = None) -> str:
    """Keep a session's software record and the Spack locks it names; its id."""
    d = software_dir(results)
    ident = record_id(software)
    path = d / f"{ident}.json"
    if not path.exists():
        atomic_write(path, json.dumps(software, indent=1, sort_keys=True) + "\n")
    for lock in locks:
        raw = lock.read_bytes()
        dest = d / "locks" / f"{hashlib.sha256(raw).hexdigest()}.gz"
        if not dest.exists():
            atomic_write(dest, gzip.compress(raw, mtime=0))
    return ident


def stored_software(ident: str, results: Path | None = None) -> dict | None:
    """A stored software record; None when the store does not have it."""
    if not ident:
        return None
    try:
        data = json.loads((software_dir(results) / f"{ident}.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def stored_lock(sha256: str, results: Path | None = None) -> Lock | None:
    """A stored Spack lock; None when the store does not have it (or it is damaged)."""
    path = software_dir(results) / "locks" / f"{sha256}.gz"
    try:
        return parse_lock(gzip.decompress(path.read_bytes()), path)
    except (OSError, EOFError, LockError):
        return None


def store_size(results: Path | None = None) -> tuple[int, int]:
    """(files, bytes) of the software store."""
    files = [p for p in software_dir(results).rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)
