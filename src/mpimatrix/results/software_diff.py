"""The difference between the software of two sessions, per build, in the words of
its package manager: Spack specs (the build's own dependency graph in each lock),
Debian packages, wheels, and the build's record (compiler, launcher, environment,
benchmarks); the machine's (kernel, Slurm, ReFrame, the checks) apply to every build.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from ..builds.software import BuildSoftware, SoftwareRecord
from ..builds.spack.lock_dag import build_dag, build_roots
from ..builds.spack.lockfile import Lock

MACHINE = ""  # the build of a change to the machine: every build's


@dataclass(frozen=True)
class SoftwareChange:
    build: str  # MACHINE for a change every build shares
    text: str

    def line(self) -> str:
        return self.text if self.build == MACHINE else f"{self.build}: {self.text}"


def _shown(value: object) -> str:
    return "(none)" if value in (None, "") else str(value)


def _mapping(kind: str, old: Mapping[str, object], new: Mapping[str, object]) -> list[str]:
    """Entries added, removed or changed between two {name: version} mappings."""
    out = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        if a is None:
            out.append(f"{name}{kind}: added {_shown(b)}")
        elif b is None:
            out.append(f"{name}{kind}: removed (was {_shown(a)})")
        else:
            out.append(f"{name}{kind}: {_shown(a)} -> {_shown(b)}")
    return out


def machine_changes(old: SoftwareRecord, new: SoftwareRecord) -> list[SoftwareChange]:
    return [SoftwareChange(MACHINE, f"the machine's {t}")
            for t in _mapping("", old.machine, new.machine)]


def _without_install_paths(build: BuildSoftware) -> BuildSoftware:
    """A Spack build's record with its install prefix as <prefix> and without its
    benchmarks' install directories: a new DAG hash moves them, and the difference of
    the DAG names why."""
    if build.spack is None:
        return build
    rec = dict(build.record)
    prefix = str(rec.pop("prefix", "") or "\0")
    rec = {k: v.replace(prefix, "<prefix>") if isinstance(v, str) else v for k, v in rec.items()}
    env = {k: v.replace(prefix, "<prefix>") for k, v in build.env.items()}
    benches = {s: {k: v for k, v in b.items() if k != "bin_dir"}
               for s, b in build.benchmarks.items()}
    return replace(build, record=rec, env=env, benchmarks=benches)


def build_changes(name: str, old: BuildSoftware, new: BuildSoftware,
                  lock: Callable[[str], Lock | str | None]) -> list[str]:
    """What changed in one build between two software records (lock: sha256 -> the
    stored Spack lock, None when the store lacks it, or why it cannot be used)."""
    old, new = _without_install_paths(old), _without_install_paths(new)
    out = _mapping("", old.record, new.record)
    out += [f"environment {t}" for t in _mapping("", old.env, new.env)]
    ob, nb = old.benchmarks, new.benchmarks
    for suite in sorted(set(ob) | set(nb)):
        if suite not in ob or suite not in nb:
            out.append(f"{suite.upper()}: {'added' if suite in nb else 'removed'}")
            continue
        out += [f"{suite.upper()} {t}" for t in _mapping("", ob[suite], nb[suite])]
    out += _mapping(" (deb)", old.debs, new.debs)
    out += _mapping(" (wheel)", old.wheels, new.wheels)
    out += _mapping(" (modulefile sha256)", old.modules, new.modules)
    out += spack_changes(old, new, lock)
    return out


def spack_changes(old: BuildSoftware, new: BuildSoftware,
                  lock: Callable[[str], Lock | str | None]) -> list[str]:
    """The build's dependency graph in the old lock against the new one (`old`, `new`:
    the build's software records): packages added or removed, and each fact (version,
    variant, flags, compiler, external prefix, recipe) that differs."""
    so, sn = old.spack, new.spack
    if so is None and sn is None:
        return []
    if so is None or sn is None:
        return [f"Spack lock: {'added' if sn else 'removed'}"]
    if so == sn:
        return []
    shas = so.lock, sn.lock
    locks = lock(shas[0]), lock(shas[1])
    if not all(isinstance(lk, Lock) for lk in locks):
        missing = [s[:12] for s, lk in zip(shas, locks, strict=True) if lk is None]
        damaged = [f"lock {s[:12]} {lk}" for s, lk in zip(shas, locks, strict=True)
                   if isinstance(lk, str)]
        why = damaged + ([f"lock {', '.join(missing)} is not in the results store"]
                         if missing else [])
        return [f"Spack lock {shas[0][:12]} -> {shas[1][:12]}: {'; '.join(why)}, so what "
                "changed in it cannot be said"]
    dags = []
    for lk, spack, rec in zip(locks, (so, sn), (old, new), strict=True):
        assert isinstance(lk, Lock)  # both are (the check above)
        compiler = rec.record.get("compiler", "")
        roots = build_roots(lk, spack.dag_hash, compiler if isinstance(compiler, str) else "")
        roots += [h for h in spack.benchmarks.values() if h not in roots]
        dags.append(build_dag(lk, roots))
    a, b = dags
    out = []
    for pkg in sorted(set(a) | set(b)):
        if pkg not in a or pkg not in b:
            nodes = b.get(pkg) or a[pkg]
            versions = ", ".join(n["version"] for n in nodes)
            out.append(f"{pkg} (spack): {'added' if pkg in b else 'removed'} @{versions}")
        elif a[pkg] != b[pkg]:
            if len(a[pkg]) == len(b[pkg]) == 1:
                fa, fb = a[pkg][0], b[pkg][0]
                at = f"{pkg}@{fb['version']} (spack)"
                for fact in sorted(set(fa) | set(fb), key=lambda f: (f != "version", f)):
                    if fa.get(fact) != fb.get(fact):
                        what = "version" if fact == "version" else fact
                        out.append(f"{at}: {what} {_shown(fa.get(fact))} -> "
                                   f"{_shown(fb.get(fact))}")
            else:
                out.append(f"{pkg} (spack): {len(a[pkg])} node(s) -> {len(b[pkg])} node(s), "
                           "not the same")
    return out


def software_changes(old: SoftwareRecord, new: SoftwareRecord,
                     lock: Callable[[str], Lock | str | None]) -> list[SoftwareChange]:
    """Every change between two sessions' software records: the machine's first, then
    each build's (a build in one record only is added or removed)."""
    out = machine_changes(old, new)
    ob, nb = old.builds, new.builds
    for name in sorted(set(ob) | set(nb)):
        if name not in ob or name not in nb:
            out.append(SoftwareChange(name, "build added" if name in nb else "build removed"))
            continue
        out += [SoftwareChange(name, t) for t in build_changes(name, ob[name], nb[name], lock)]
    return out


def changes_for(changes: list[SoftwareChange], build: str) -> list[SoftwareChange]:
    """The changes that can affect one build: its own and the machine's."""
    return [c for c in changes if c.build in (build, MACHINE)]
