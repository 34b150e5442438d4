"""OSU Micro-Benchmarks installs for builds that do not come with them.

Spack builds get OSU from the Spack environment (osu-micro-benchmarks ^<mpi>).
Debian and PyPI MPIs have no OSU package, so OSU is built from a source tree or
tarball, with each build's own wrappers, into the project cache:

    .cache/osu/<build name>/build.sh      the script that was run (re-runnable)
    .cache/osu/<build name>/build.log     its output
    .cache/osu/<build name>/install/      --prefix; binaries under libexec/
    .cache/osu/<build name>/install/mpimatrix-osu.json   written last: the
                                          install is complete and usable

by `mpimatrix osu-build --source ...` or, during a ReFrame session, by the OSU
check's fixture when MPIMATRIX_OSU_SOURCE names a source. Discovery attaches
every complete install to its build. The source is never modified: it is copied
(or extracted) into a scratch work tree per build, removed afterwards.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..paths import cache_dir
from ..shell import printable, shell_value
from .record import NAME_PATTERN, BenchmarkInstall, BuildRecord

RECORD = "mpimatrix-osu.json"
PROVENANCE = "mpimatrix osu-build"
#: Where `make install` puts the benchmarks, below the prefix (5.x and 7.x alike).
LIBEXEC = ("libexec", "osu-micro-benchmarks")


class OsuBuildError(Exception):
    pass


def osu_root() -> Path:
    return cache_dir() / "osu"


def build_dir(build_name: str) -> Path:
    # Names are checked when records are made; checked again because this path
    # is removed and rewritten.
    if not NAME_PATTERN.fullmatch(build_name):
        raise OsuBuildError(f"build name {build_name!r} cannot name a directory")
    return osu_root() / build_name


def install_prefix(build_name: str) -> Path:
    return build_dir(build_name) / "install"


def source_version(src: Path) -> str:
    """OMB version of a source tree: AC_INIT in configure.ac, else CHANGES' first line."""
    ac = src / "configure.ac"
    if ac.is_file():
        m = re.search(r"AC_INIT\(\[OSU-Micro-Benchmarks\],\s*\[([\w.\-]+)\]",
                      ac.read_text(errors="replace"))
        if m:
            return m.group(1)
    changes = src / "CHANGES"
    if changes.is_file():
        m = re.match(r"OSU Micro Benchmarks v([\w.\-]+)", changes.read_text(errors="replace"))
        if m:
            return m.group(1)
    m = re.search(r"osu-micro-benchmarks-(\d[\w.]*?)(?:\.tar|$)", src.name)
    return m.group(1) if m else "unknown"


def source_digest(source: Path) -> str:
    """sha256 of a tarball, or of a tree's configure.ac/CHANGES (enough to tell versions)."""
    h = hashlib.sha256()
    if source.is_file():
        with open(source, "rb") as fp:
            for chunk in iter(lambda: fp.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    for rel in ("configure.ac", "CHANGES", "configure"):
        for p in sorted(source.rglob(rel))[:3]:
            h.update(p.read_bytes())
    return h.hexdigest()


def _find_tree(root: Path) -> Path:
    """The directory holding configure(.ac): root itself or its only child."""
    if (root / "configure.ac").exists() or (root / "configure").exists():
        return root
    kids = [p for p in root.iterdir() if p.is_dir()]
    if len(kids) == 1:
        return _find_tree(kids[0])
    raise OsuBuildError(f"{root}: no configure or configure.ac: not an OSU source tree")


def stage_source(source: Path, work: Path) -> Path:
    """Copy a tree or extract a tarball into `work`; return the source tree in it."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    if source.is_dir():
        tree = _find_tree(source)
        dest = work / tree.name
        shutil.copytree(tree, dest, symlinks=True)
        return dest
    if source.is_file() and tarfile.is_tarfile(source):
        with tarfile.open(source) as tf:
            try:
                tf.extractall(work, filter="data")
            except TypeError:  # a Python without extraction filters (before 3.11.4)
                tf.extractall(work)
        return _find_tree(work)
    raise OsuBuildError(f"{source}: neither a directory nor a tar archive")


def cxx_for(build: BuildRecord) -> str:
    """The build's C++ wrapper next to its C wrapper (mpicc.openmpi -> mpicxx.openmpi)."""
    head, name = os.path.split(build.cc)
    for c, cxx in (("mpicc", "mpicxx"), ("mpiicc", "mpiicpc"), ("mpigcc", "mpigxx")):
        if name == c or name.startswith(c + "."):
            return os.path.join(head, cxx + name[len(c):])
    return build.cc  # OSU's C benchmarks need no working C++ compiler


@dataclass
class BuildPlan:
    build: BuildRecord
    source: Path
    version: str
    prefix: Path
    workdir: Path
    script: Path
    log: Path
    jobs: int


def script_text(plan: BuildPlan, tree: Path) -> str:
    b = plan.build
    lines = ["#!/bin/bash",
             f"# mpimatrix osu-build: OSU {printable(plan.version)} for {printable(b.name)}",
             "set -eo pipefail"]
    lines += [f"export {k}={shell_value(v)}" for k, v in b.env.items()]
    lines += list(b.prepare_cmds)
    q = shlex.quote
    lines += [
        f"cd {q(str(tree))}",
        "if [ ! -x configure ]; then autoreconf -fi; fi",
        f"./configure CC={q(b.cc)} CXX={q(cxx_for(b))} --prefix={q(str(plan.prefix))}",
        f"make -j{int(plan.jobs)}",
        "make install",
    ]
    return "\n".join(lines) + "\n"


def find_binary(bin_dir: str | os.PathLike, name: str) -> str | None:
    """Path of osu_<name> below bin_dir (5.x mpi/pt2pt/, 7.x mpi/pt2pt/standard/, ...)."""
    exe = name if name.startswith("osu_") else f"osu_{name}"
    hits = []
    for dirpath, _dirs, files in os.walk(bin_dir):
        if exe in files:
            path = os.path.join(dirpath, exe)
            if os.access(path, os.X_OK):
                hits.append(path)
    # Prefer the shallowest (e.g. not a persistent/ or congestion/ variant dir)
    return min(hits, key=lambda p: (p.count(os.sep), p)) if hits else None


def plan_osu_build(build: BuildRecord, source: Path, prefix: Path | None = None,
                   jobs: int | None = None) -> BuildPlan:
    """Stage the source and write build.sh (configure, make, make install) for one build."""
    source = source.resolve()
    default = install_prefix(build.name)
    prefix = (prefix or default).resolve()
    base = build_dir(build.name) if prefix == default.resolve() \
        else prefix.parent / f".{prefix.name}.build"
    base.mkdir(parents=True, exist_ok=True)
    plan = BuildPlan(build, source, "", prefix, base / "work", base / "build.sh",
                     base / "build.log", jobs or os.cpu_count() or 2)
    tree = stage_source(source, plan.workdir)
    plan.version = source_version(tree)
    if prefix.exists():
        shutil.rmtree(prefix)  # never mix two versions' binaries
    plan.script.write_text(script_text(plan, tree))
    plan.script.chmod(0o755)
    return plan


def finish_osu_build(plan: BuildPlan, seconds: float, keep: bool = False) -> BenchmarkInstall:
    """Check that the build script installed OSU; write the install record last."""
    bin_dir = plan.prefix.joinpath(*LIBEXEC)
    if find_binary(bin_dir, "latency") is None:
        raise OsuBuildError(f"OSU {plan.version} for {plan.build.name}: no osu_latency below "
                            f"{bin_dir}; see {plan.log}")
    record = {"suite": "osu", "version": plan.version, "build": plan.build.name,
              "cc": plan.build.cc, "cxx": cxx_for(plan.build), "source": str(plan.source),
              "source_sha256": source_digest(plan.source),
              "bin_dir": str(bin_dir), "built": time.strftime("%Y-%m-%dT%H:%M:%S"),
              "seconds": round(seconds, 1)}
    tmp = plan.prefix / f".{RECORD}.tmp"
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(plan.prefix / RECORD)
    if not keep:
        shutil.rmtree(plan.workdir, ignore_errors=True)
    return BenchmarkInstall(suite="osu", bin_dir=str(bin_dir), version=plan.version,
                            provenance=PROVENANCE)


def build_osu(build: BuildRecord, source: Path, prefix: Path | None = None,
              jobs: int | None = None, keep: bool = False, quiet: bool = False
              ) -> BenchmarkInstall:
    """Configure, build and install OSU for one build; the install record is written last."""
    plan = plan_osu_build(build, source, prefix, jobs)
    t0 = time.time()
    if not quiet:
        print(f"mpimatrix osu-build: OSU {plan.version} for {build.name} -> {plan.prefix} "
              f"(log {plan.log})", flush=True)
    with open(plan.log, "w") as log:
        rc = subprocess.call(["bash", str(plan.script)], stdout=log, stderr=subprocess.STDOUT)
    if rc != 0:
        tail = plan.log.read_text(errors="replace").strip().splitlines()[-15:]
        raise OsuBuildError(f"OSU {plan.version} for {build.name} failed (rc={rc}); "
                            f"see {plan.log}:\n  " + "\n  ".join(tail))
    install = finish_osu_build(plan, time.time() - t0, keep)
    if not quiet:
        print(f"mpimatrix osu-build: {build.name}: OSU {plan.version} installed in "
              f"{time.time() - t0:.1f} s", flush=True)
    return install


def install_record(build_name: str, root: Path | None = None) -> dict | None:
    """The install record of the cache's complete OSU install for this build, or None."""
    rec = (root or osu_root()) / build_name / "install" / RECORD
    try:
        data = json.loads(rec.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    data.setdefault("bin_dir", str(rec.parent.joinpath(*LIBEXEC)))
    return data if os.path.isdir(data["bin_dir"]) else None


def installed_osu(build_name: str, root: Path | None = None) -> BenchmarkInstall | None:
    """The complete OSU install of the cache for this build, or None. Cheap: one read."""
    data = install_record(build_name, root)
    if data is None:
        return None
    return BenchmarkInstall(suite="osu", bin_dir=str(data["bin_dir"]),
                            version=str(data.get("version", "")), provenance=PROVENANCE)
