"""What a build runs on, named as its package managers name it: the software record
a session keeps, so that two sessions can be compared (results/software_diff.py).

Per build: the fields of its record that decide what runs (version, compiler,
fabric, launcher, environment, the benchmarks and where they came from); the
Debian packages of every shared library its MPI loads (`ldd` of the MPI library
and of Open MPI's components, which it loads at run time, then `dpkg-query`);
the wheels installed beside a PyPI MPI; and for a build from a Spack lock the
lock's sha256 and the DAG hashes, which name its dependency graph in that lock.
Per machine: the kernel, Slurm's srun, ReFrame and the checks' git commit.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import project_root
from ..shell import expand_value
from .record import BuildRecord

#: The fields of a build record that change what runs (its name identifies it).
RECORD_FIELDS = ("family", "version", "provenance", "prefix", "compiler", "fabric", "pmi",
                 "launcher", "launcher_style")
#: The MPI library's name by family: in /usr/lib of Debian, libmpi.so is Open MPI's
#: (an alternative) also when the build is MPICH, whose library is libmpich.so.
_MPI_LIBRARY = {"mpich": "mpich", "mvapich2": "mpich|mpi", "mvapich": "mpich|mpi"}
_LDD_LINE = re.compile(r"=>\s+(/\S+)\s+\(|^\s*(/\S+)\s+\(")

#: A value of the stored record (JSON): the store accepts any of these (software_store).
Scalar = str | int | float | bool | None
#: {name: value}: a build record's fields, the machine's, {package: version}
Versions = Mapping[str, Scalar]


def _versions(raw: object) -> Versions:
    """A stored {name: value} (null or absent: empty); the store checked its shape."""
    return raw if isinstance(raw, Mapping) else {}


@dataclass(frozen=True)
class SpackSoftware:
    """Where a Spack build comes from: its lock and the DAG hashes of its nodes in it."""

    lock: str  # the lock's sha256
    dag_hash: str  # the MPI's node
    benchmarks: Mapping[str, str] = field(default_factory=dict)  # suite -> its node

    def to_json(self) -> dict[str, object]:
        return {"lock": self.lock, "dag_hash": self.dag_hash,
                "benchmarks": dict(self.benchmarks)}

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> SpackSoftware:
        return cls(str(raw.get("lock", "")), str(raw.get("dag_hash", "")),
                   {s: str(h) for s, h in _versions(raw.get("benchmarks")).items()})


@dataclass(frozen=True)
class BuildSoftware:
    """One build's part of the software record."""

    record: Versions  # RECORD_FIELDS of the build record
    env: Mapping[str, str]
    benchmarks: Mapping[str, Versions]  # suite -> version, provenance, bin_dir
    spack: SpackSoftware | None = None  # a build from a Spack lock
    wheels: Versions = field(default_factory=dict)  # beside a PyPI MPI
    modules: Versions = field(default_factory=dict)  # module -> its modulefile's sha256[:12]
    debs: Versions = field(default_factory=dict)  # of the libraries its MPI loads

    def to_json(self) -> dict[str, object]:
        """As stored: the optional parts only when there is something in them."""
        out: dict[str, object] = {
            "record": dict(self.record), "env": dict(self.env),
            "benchmarks": {s: dict(b) for s, b in self.benchmarks.items()}}
        if self.spack is not None:
            out["spack"] = self.spack.to_json()
        for key, part in (("wheels", self.wheels), ("modules", self.modules),
                          ("debs", self.debs)):
            if part:
                out[key] = dict(part)
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> BuildSoftware:
        benches = raw.get("benchmarks")
        spack = raw.get("spack")
        return cls(_versions(raw.get("record")),
                   {k: str(v) for k, v in _versions(raw.get("env")).items()},
                   {s: _versions(b) for s, b in _versions(benches).items()},
                   SpackSoftware.from_json(spack) if isinstance(spack, Mapping) and spack
                   else None,
                   _versions(raw.get("wheels")), _versions(raw.get("modules")),
                   _versions(raw.get("debs")))


@dataclass(frozen=True)
class SoftwareRecord:
    """What a session ran on: the machine's software and each build's (the record the
    results store keeps as JSON: results/software_store.py)."""

    machine: Versions
    builds: Mapping[str, BuildSoftware]

    def to_json(self) -> dict[str, object]:
        return {"machine": dict(self.machine),
                "builds": {n: b.to_json() for n, b in self.builds.items()}}

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> SoftwareRecord:
        """From the stored JSON, whose shape the store checked (shape_problem)."""
        builds = raw.get("builds")
        return cls(_versions(raw.get("machine")),
                   {n: BuildSoftware.from_json(b) for n, b in _versions(builds).items()
                    if isinstance(b, Mapping)})


def build_software(rec: BuildRecord, debs: Mapping[str, str] | None = None
                   ) -> BuildSoftware:
    """The build's software record (the Debian packages: software_of's)."""
    spack = None
    if rec.lock_sha256:
        spack = SpackSoftware(rec.lock_sha256, rec.dag_hash,
                              {s: b.spec_hash for s, b in sorted(rec.benchmarks.items())
                               if b.spec_hash})
    # each module with the start of its modulefile's sha256
    modules = {m: rec.module_files.get(m, "")[:12] or "(file not found)" for m in rec.modules}
    return BuildSoftware(
        record={k: getattr(rec, k) for k in RECORD_FIELDS},
        env=dict(sorted(rec.env.items())),
        benchmarks={s: {"version": b.version, "provenance": b.provenance,
                        "bin_dir": b.bin_dir} for s, b in sorted(rec.benchmarks.items())},
        spack=spack, wheels=installed_wheels(Path(rec.prefix)), modules=modules,
        debs=dict(sorted((debs or {}).items())))


def machine_software() -> dict[str, str]:
    """What every build on this machine shares."""
    out = {"kernel": platform.release()}
    srun = shutil.which("srun")
    if srun:
        out["slurm"] = _first_line([srun, "--version"])
    try:
        from importlib.metadata import version

        out["reframe"] = version("reframe-hpc")
    except Exception:  # not installed as a distribution: not recorded
        pass
    commit = _first_line(["git", "-C", str(project_root()), "rev-parse", "--short=12", "HEAD"])
    if commit:
        out["checks"] = f"mpimatrix {commit}"
    return out


def software_of(builds: list[BuildRecord]) -> SoftwareRecord:
    """The whole record of a session's builds: the machine's and each build's."""
    libraries = {b.name: loaded_libraries(b) for b in builds}
    owners = deb_owners(sorted({p for paths in libraries.values() for p in paths}))
    versions = deb_versions(sorted(set(owners.values())))
    records = {}
    for b in builds:
        debs = {owners[p]: versions[owners[p]] for p in libraries[b.name]
                if owners.get(p) in versions}
        records[b.name] = build_software(b, debs)
    return SoftwareRecord(machine_software(), records)


def mpi_library_files(rec: BuildRecord) -> list[Path]:
    """The MPI library of a build and the components it loads at run time
    (Open MPI's mca_*.so, libfabric providers beside Intel MPI)."""
    prefix = Path(rec.prefix)
    libdirs = [prefix / "lib", prefix / "lib64", prefix / "lib" / "x86_64-linux-gnu",
               prefix / "lib" / "release"]
    library = re.compile(rf"lib({_MPI_LIBRARY.get(rec.family, 'mpi')})\.so(\.\d+)*$")
    out = []
    for d in libdirs:
        if not d.is_dir():
            continue
        out += [p for p in sorted(d.iterdir()) if library.match(p.name)]
        for sub in sorted(d.iterdir()):
            if sub.is_dir() and re.match(r"(openmpi\d*|libfabric|prov)$", sub.name):
                out += sorted(sub.glob("*.so"))
    return out


def loaded_libraries(rec: BuildRecord) -> list[str]:
    """The shared libraries the build's MPI loads (its own files included), by `ldd`
    in the build's environment; [] when there is no MPI library to look at."""
    files = mpi_library_files(rec)
    if not files or not shutil.which("ldd"):
        return []
    env = dict(os.environ)
    for k, v in rec.env.items():
        env[k] = expand_value(v, env)
    proc = subprocess.run(["ldd", *map(str, files)], capture_output=True, text=True,
                          env=env, timeout=120)
    paths = {str(f) for f in files} | {m.group(1) or m.group(2)
                                      for m in map(_LDD_LINE.search, proc.stdout.splitlines())
                                      if m}
    return sorted(paths)


def deb_owners(paths: list[str]) -> dict[str, str]:
    """{path: Debian package} for the files a Debian package installed (the others
    are left out); {} without dpkg."""
    if not paths or not shutil.which("dpkg-query"):
        return {}
    # dpkg knows a file by the path its package installed: /lib/... on Debian 12 for
    # what ldd finds through /lib, and the target of a link for the link's target
    asked = {}
    for p in paths:
        for alias in (p, os.path.realpath(p)):
            asked.setdefault(alias, p)
            if alias.startswith("/usr/lib/"):
                asked.setdefault(alias[4:], p)
            elif alias.startswith("/lib/"):
                asked.setdefault("/usr" + alias, p)
    proc = subprocess.run(["dpkg-query", "-S", *asked], capture_output=True, text=True,
                          timeout=120)
    out = {}
    for line in proc.stdout.splitlines():
        pkgs, sep, path = line.partition(": ")
        if sep and path in asked and "diversion" not in pkgs:
            out.setdefault(asked[path], pkgs.split(",")[0].strip().split(":")[0])
    return out


def deb_versions(packages: list[str]) -> dict[str, str]:
    """{package: version} of installed Debian packages."""
    if not packages:
        return {}
    proc = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Version}\n", *packages],
                          capture_output=True, text=True, timeout=120)
    return dict(line.split("\t", 1) for line in proc.stdout.splitlines() if "\t" in line)


def installed_wheels(prefix: Path) -> dict[str, str]:
    """{distribution: version} in a Python environment at `prefix` (a PyPI MPI's venv);
    {} for anything else."""
    out = {}
    for site in sorted(prefix.glob("lib/python3*/site-packages")):
        for d in site.glob("*.dist-info"):
            name, _, version = d.name[:-len(".dist-info")].partition("-")
            if name.lower() not in ("pip", "setuptools", "wheel"):
                out[name.lower().replace("_", "-")] = version
    return dict(sorted(out.items()))


def _first_line(cmd: list[str]) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except OSError:
        return ""
    return (proc.stdout.strip().splitlines() or [""])[0] if proc.returncode == 0 else ""
