"""The software each session ran on, kept by content hash in the results store.

    <results>/software/<id>.json            a session's software record (builds/software.py)
    <results>/software/locks/<sha256>.gz    a Spack lock the builds came from

A session names its record in its extras (software=<id>); unchanged nights give the
same record, so a year of them stores one file, and a lock is stored once per sha256.

Every read checks the file against its name (the record's id is the hash of its
content, the lock's name the sha256 of its bytes) and the shape of what it holds: a
file that does not match is damage, named and left out, never compared as if it were
the session's software. A run whose software has a damaged record writes it again.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..atomic import atomic_write
from ..builds.software import SoftwareRecord
from ..builds.spack.lockfile import Lock, LockError, parse_lock
from ..paths import results_dir

_SCALAR = (str, int, float, bool, type(None))
REWRITE = "the next `mpimatrix run` on the same software writes it again"


def software_dir(results: Path | None = None) -> Path:
    return (results or results_dir()) / "software"


def record_id(software: SoftwareRecord) -> str:
    """The id of a record: the start of the sha256 of its JSON."""
    return _content_id(software.to_json())


def _content_id(data: Mapping[str, object]) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _flat(value: object, where: str, kinds: tuple[type, ...] = _SCALAR) -> str:
    """'' when `value` is a mapping of names to plain values, else what is wrong."""
    if not isinstance(value, dict):
        return f"{where} is not a mapping"
    bad = sorted(str(k) for k, v in value.items() if not isinstance(v, kinds))
    return f"{where}[{bad[0]!r}] is not a plain value" if bad else ""


def _build_problems(name: str, b: object) -> list[str]:
    at = f"builds[{name!r}]"
    if not isinstance(b, dict):
        return [f"{at} is not a mapping"]
    out = [_flat(b.get(key) or {}, f"{at}.{key}")
           for key in ("record", "debs", "wheels", "modules")]
    out.append(_flat(b.get("env") or {}, f"{at}.env", (str,)))
    benches = b.get("benchmarks") or {}
    if not isinstance(benches, dict):
        return [*out, f"{at}.benchmarks is not a mapping"]
    out += [_flat(v, f"{at}.benchmarks[{s!r}]") for s, v in benches.items()]
    spack = b.get("spack") or {}
    if not isinstance(spack, dict):
        return [*out, f"{at}.spack is not a mapping"]
    out.append(_flat({k: v for k, v in spack.items() if k != "benchmarks"}, f"{at}.spack"))
    out.append(_flat(spack.get("benchmarks") or {}, f"{at}.spack.benchmarks"))
    return out


def shape_problem(data: object) -> str:
    """Why a software record is not one builds/software.py writes ('' when it is)."""
    if not isinstance(data, dict):
        return "not a mapping"
    builds = data.get("builds") or {}
    if not isinstance(builds, dict):
        return "builds is not a mapping"
    problems = [_flat(data.get("machine") or {}, "machine")]
    for name, b in builds.items():
        problems += _build_problems(name, b)
    return next((p for p in problems if p), "")


@dataclass
class Store:
    """Reads of one results store's software, with the damage they found
    ({path: why}) for the caller to name."""

    results: Path | None = None
    damage: dict[str, str] = field(default_factory=dict)

    def software(self, ident: str) -> SoftwareRecord | None:
        """A session's software record; None when the store lacks it or it is damaged."""
        data = self.software_json(ident)
        return None if data is None else SoftwareRecord.from_json(data)

    def software_json(self, ident: str) -> Mapping[str, object] | None:
        """A session's software record as stored (JSON), checked as `software` checks it."""
        if not ident:
            return None
        path = software_dir(self.results) / f"{ident}.json"
        data, why = _read_record(path, ident)
        if why:
            self.damage[str(path)] = why
        return data

    def lock(self, sha256: str) -> Lock | str | None:
        """A stored Spack lock; None when the store lacks it, the damage when damaged."""
        path = software_dir(self.results) / "locks" / f"{sha256}.gz"
        lock, why = _read_lock(path, sha256)
        if why:
            self.damage[str(path)] = why
            return f"is damaged in the results store ({why})"
        return lock

    def damage_lines(self) -> list[str]:
        return [f"damaged in the software store, left out: {p} ({why}); {REWRITE}"
                for p, why in self.damage.items()]


def _read_record(path: Path, ident: str) -> tuple[Mapping[str, object] | None, str]:
    """(the record, '') or (None, why it is damaged); (None, '') when absent."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None, ""
    except OSError as err:
        return None, f"cannot be read: {err.strerror}"
    except (ValueError, RecursionError) as err:
        return None, f"not valid JSON: {err}"
    problem = shape_problem(data)
    if problem:
        return None, f"not a software record: {problem}"
    if _content_id(data) != ident:
        return None, f"its content does not match its hash {ident} (edited or corrupted)"
    return data, ""


def _read_lock(path: Path, sha256: str) -> tuple[Lock | None, str]:
    try:
        raw = gzip.decompress(path.read_bytes())
    except FileNotFoundError:
        return None, ""
    except (OSError, EOFError, zlib.error) as err:
        return None, f"not a readable gzip file: {err}"
    if hashlib.sha256(raw).hexdigest() != sha256:
        return None, "its content does not match its sha256 (edited or corrupted)"
    try:
        return parse_lock(raw, path), ""
    except (LockError, ValueError, TypeError, AttributeError, KeyError,
            RecursionError) as err:
        return None, f"not a Spack lock: {err}"


def stored_software(ident: str, results: Path | None = None) -> Mapping[str, object] | None:
    """A stored software record as stored (JSON: for the tools that derive records from
    one, validation/year.py); None when the store does not have it (or it is damaged)."""
    return Store(results).software_json(ident)


def _keep(path: Path, data: bytes, good: bool, problems: list[str] | None) -> None:
    """Write `data` at `path` unless the file there is `good`; a write that fails is a
    problem (when the caller collects them) rather than an error, a full disk excepted."""
    if good:
        return
    try:
        atomic_write(path, data)
    except OSError as err:
        if problems is None or err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise
        problems.append(f"{err.filename or path}: {err.strerror or err}")


def store_software(software: SoftwareRecord | Mapping[str, object], locks: list[Path],
                   results: Path | None = None, problems: list[str] | None = None) -> str:
    """Keep a session's software record (or one as JSON, as validation/year.py derives
    them) and the Spack locks it names (a damaged copy is written again); its id. With
    `problems`, what could not be written is listed there and the rest kept."""
    d = software_dir(results)
    data = software.to_json() if isinstance(software, SoftwareRecord) else software
    ident = _content_id(data)
    path = d / f"{ident}.json"
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    _keep(path, text.encode(), _read_record(path, ident)[0] is not None, problems)
    for lock in locks:
        try:
            raw = lock.read_bytes()
        except OSError as err:
            if problems is None:
                raise
            problems.append(f"{err.filename or lock}: {err.strerror or err}")
            continue
        sha = hashlib.sha256(raw).hexdigest()
        dest = d / "locks" / f"{sha}.gz"
        _keep(dest, gzip.compress(raw, mtime=0), _read_lock(dest, sha)[0] is not None,
              problems)
    return ident
