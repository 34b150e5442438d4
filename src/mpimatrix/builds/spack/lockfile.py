"""Reading a Spack lock file (spack.lock, lockfile-version 6 and 7).

Version 6 (Spack 1.0, 1.1) and 7 (Spack 1.2: roots carry `group`) share the
node format (spec file v5: compilers are build dependencies providing the
c/cxx/fortran virtuals). Included concrete environments are read too.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..record import BuildError

SUPPORTED_VERSIONS = {6: "Spack 1.0/1.1", 7: "Spack 1.2"}


class LockError(BuildError):
    """A Spack lock that cannot be read; the message names the file and the fix."""


# -- the lock ------------------------------------------------------------------------------
@dataclass
class Node:
    hash: str
    data: dict

    @property
    def name(self) -> str:
        return self.data.get("name", "?")

    @property
    def version(self) -> str:
        return str(self.data.get("version", ""))

    @property
    def params(self) -> dict:
        return self.data.get("parameters") or {}

    @property
    def external_path(self) -> str:
        ext = self.data.get("external") or {}
        return ext.get("path") or ""

    @property
    def is_external(self) -> bool:
        return bool(self.data.get("external"))

    def variant(self, name: str, default=None):
        """A single-valued variant (a one-element list, as externals record `device:=ch4`,
        gives its element)."""
        v = self.params.get(name, default)
        if isinstance(v, list):
            return v[0] if len(v) == 1 else ",".join(map(str, v))
        return v

    def values(self, name: str) -> list[str]:
        v = self.params.get(name)
        if v is None:
            return []
        return [str(x) for x in v] if isinstance(v, list) else [str(v)]

    def deps(self) -> list[tuple[str, list[str], list[str]]]:
        """(hash, deptypes, virtuals) of each dependency edge."""
        out = []
        for d in self.data.get("dependencies") or []:
            p = d.get("parameters") or {}
            out.append((d.get("hash", ""), list(p.get("deptypes") or []),
                        list(p.get("virtuals") or [])))
        return out

    def dep_providing(self, virtual: str) -> str | None:
        for h, _, virtuals in self.deps():
            if virtual in virtuals:
                return h
        return None


@dataclass
class Lock:
    path: Path
    sha256: str
    version: int
    spack: dict
    roots: list[dict]
    nodes: dict[str, Node]

    def node(self, h: str) -> Node:
        try:
            return self.nodes[h]
        except KeyError:
            raise LockError(f"{self.path}: inconsistent lock: hash {h} is referenced but not "
                            "in concrete_specs; re-concretize (`spack concretize -f`)") from None


def read_lock(path: str | os.PathLike) -> Lock:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise LockError(f"{path}: cannot read Spack lock file: {err.strerror}; check "
                        "MPIMATRIX_LOCK (or SPACK_ENV) and run `spack concretize` in that "
                        "environment") from None
    return parse_lock(raw, path)


def parse_lock(raw: bytes, path: Path) -> Lock:
    """A lock from its bytes; `path` names it in errors."""
    sha = hashlib.sha256(raw).hexdigest()
    try:
        data = json.loads(raw)
    except ValueError as err:
        raise LockError(f"{path}: not a valid Spack lock file (invalid JSON: {err}); "
                        "re-create it with `spack -e <env> concretize -f`") from None
    meta = data.get("_meta") if isinstance(data, dict) else None
    if not isinstance(meta, dict) or meta.get("file-type") != "spack-lockfile":
        raise LockError(f"{path}: not a Spack lock file (no _meta.file-type "
                        "'spack-lockfile'); MPIMATRIX_LOCK must name an environment's "
                        "spack.lock")
    version = meta.get("lockfile-version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise LockError(f"{path}: _meta.lockfile-version is {version!r}, not a number; the "
                        "file was edited or is not from Spack: re-create it with "
                        "`spack -e <env> concretize -f`")
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(f"{v} ({w})" for v, w in SUPPORTED_VERSIONS.items())
        hint = ("it was written by Spack < 1.0: re-concretize with Spack 1.x "
                "(`spack -e <env> concretize -f`)" if version < 6
                else "it was written by a newer Spack: use Spack 1.1/1.2 for this "
                "environment, or extend mpimatrix.builds.spack.lockfile")
        raise LockError(f"{path}: lockfile-version {version!r} is not supported "
                        f"(supported: {supported}); {hint}")
    nodes: dict[str, Node] = {}
    roots: list[dict] = []
    _collect(data, nodes, roots, path)
    return Lock(path, sha, version, data.get("spack") or {}, roots, nodes)


def _collect(data: dict, nodes: dict[str, Node], roots: list[dict], path: Path) -> None:
    """Roots and nodes, including those of included concrete environments."""
    specs = data.get("concrete_specs") or {}
    if not isinstance(specs, dict):
        raise _malformed(path, "concrete_specs is not a mapping of hashes to specs")
    for h, d in specs.items():
        _check_node(path, h, d)
        nodes.setdefault(h, Node(h, d))
    listed = data.get("roots") or []
    if not isinstance(listed, list) or not all(isinstance(r, dict) for r in listed):
        raise _malformed(path, "roots is not a list of {hash, spec} mappings")
    roots.extend(listed)
    included = data.get("include_concrete") or {}
    if not isinstance(included, dict):
        raise _malformed(path, "include_concrete is not a mapping")
    for inc in included.values():
        if isinstance(inc, dict):
            _collect(inc, nodes, roots, path)


def _check_node(path: Path, h: object, d: object) -> None:
    if not isinstance(d, dict) or not isinstance(d.get("name"), str):
        raise _malformed(path, f"concrete_specs[{h!r}] is not a spec with a name")
    for key, kind in (("parameters", dict), ("dependencies", list), ("arch", dict),
                      ("external", dict)):
        if d.get(key) is not None and not isinstance(d[key], kind):
            raise _malformed(path, f"concrete_specs[{h!r}].{key} is not a {kind.__name__}")
    for dep in d.get("dependencies") or []:
        if not isinstance(dep, dict) or not isinstance(dep.get("hash"), str) or \
                not isinstance(dep.get("parameters") or {}, dict):
            raise _malformed(path, f"concrete_specs[{h!r}].dependencies has an entry "
                             "without a hash")


def _malformed(path: Path, what: str) -> LockError:
    return LockError(f"{path}: malformed Spack lock: {what}; re-create it with "
                     "`spack -e <env> concretize -f`")
