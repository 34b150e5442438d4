"""Benchmark installs (OSU, IMB) built from source for builds that lack them.

Spack builds get their benchmarks from the Spack environment. Debian and PyPI MPIs
have no OSU package, and only the MPICH-ABI ones can run the Intel MPI wheel's IMB,
so a suite (bench_suites.py) is built from a source tree or tarball with each
build's own wrappers, into the project cache:

    .cache/<suite>/<build>/build.sh     the script that was run (re-runnable)
    .cache/<suite>/<build>/build.log    its output
    .cache/<suite>/<build>/install/     --prefix
    .cache/<suite>/<build>/install/mpimatrix-<suite>.json   written last: the install
        is complete; it names the source and its sha256, so that a changed source
        is built again and an unchanged one reused

by `mpimatrix bench-build` or, during a ReFrame session, by the checks' fixtures.
The source is never modified: it is copied or extracted into a scratch work tree
per build, removed afterwards.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..atomic import atomic_write
from ..paths import cache_dir
from ..shell import printable, shell_value
from .bench_suites import OSU, Suite
from .checksum import file_sha256
from .record import BENCH_BUILD, NAME_PATTERN, BenchmarkInstall, BuildRecord

PROVENANCE = BENCH_BUILD


class BenchBuildError(Exception):
    pass


def record_name(suite: Suite) -> str:
    return f"mpimatrix-{suite.name}.json"


def build_dir(suite: Suite, build_name: str, root: Path | None = None) -> Path:
    # Names are checked when records are made; checked again because this path
    # is removed and rewritten.
    if not NAME_PATTERN.fullmatch(build_name):
        raise BenchBuildError(f"build name {build_name!r} cannot name a directory")
    return (root or cache_dir() / suite.name) / build_name


def install_prefix(suite: Suite, build_name: str) -> Path:
    return build_dir(suite, build_name) / "install"




@functools.lru_cache(maxsize=32)
def _cached_file_sha256(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(Path(path))


def source_digest(source: Path) -> str:
    """sha256 of a tarball; of a tree, over every file's relative path and content
    (.git left out), so that any change of the source changes it."""
    if source.is_file():
        st = source.stat()
        return _cached_file_sha256(str(source.resolve()), st.st_size, st.st_mtime_ns)
    h = hashlib.sha256()
    for dirpath, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            path = Path(dirpath, name)
            h.update(str(path.relative_to(source)).encode() + b"\0")
            if path.is_file() and not path.is_symlink():
                h.update(file_sha256(path).encode())
    return h.hexdigest()


def find_tree(suite: Suite, root: Path) -> Path:
    """The suite's source tree: root itself or, down a chain of only children, below it."""
    if suite.is_tree(root):
        return root
    kids = [p for p in root.iterdir() if p.is_dir()]
    if len(kids) == 1:
        return find_tree(suite, kids[0])
    raise BenchBuildError(f"{root}: {suite.tree_hint}: not an {suite.label} source tree")


def extract_tar(archive: Path, dest: Path) -> None:
    """Unpack a tar archive with the "data" filter (no absolute paths, links out of the
    tree or device files) where Python has it: 3.11.4+, and Debian 12's 3.11.2 only
    from a security update on."""
    with tarfile.open(archive) as tf:
        try:
            tf.extractall(dest, filter="data")
        except TypeError:  # no extraction filters in this Python
            tf.extractall(dest)


def stage_source(suite: Suite, source: Path, work: Path) -> Path:
    """Copy a tree or extract a tarball into `work`; return the source tree in it."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    if source.is_dir():
        tree = find_tree(suite, source)
        dest = work / tree.name
        shutil.copytree(tree, dest, symlinks=True)
        return dest
    if source.is_file() and tarfile.is_tarfile(source):
        extract_tar(source, work)
        return find_tree(suite, work)
    raise BenchBuildError(f"{source}: neither a directory nor a tar archive")


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
    suite: Suite = OSU

    @property
    def bin_dir(self) -> Path:
        return self.prefix.joinpath(*self.suite.bin_subdir)


def script_text(plan: BuildPlan, tree: Path) -> str:
    """The build script: the build's environment, then the suite's commands in the tree."""
    b, s = plan.build, plan.suite
    lines = ["#!/bin/bash",
             f"# mpimatrix bench-build: {s.label} {printable(plan.version)} for "
             f"{printable(b.name)}",
             "set -eo pipefail"]
    lines += [f"export {k}={shell_value(v)}" for k, v in b.env.items()]
    lines += list(b.prepare_cmds)
    lines.append(f"cd {shlex.quote(str(tree))}")
    lines += s.commands(b.cc, cxx_for(b), plan.prefix, plan.jobs)
    return "\n".join(lines) + "\n"


def plan_build(suite: Suite, build: BuildRecord, source: Path, prefix: Path | None = None,
               jobs: int | None = None) -> BuildPlan:
    """Stage the source and write build.sh for one build (its install is removed first)."""
    source = source.resolve()
    default = install_prefix(suite, build.name)
    prefix = (prefix or default).resolve()
    base = build_dir(suite, build.name) if prefix == default.resolve() \
        else prefix.parent / f".{prefix.name}.build"
    base.mkdir(parents=True, exist_ok=True)
    plan = BuildPlan(build, source, "", prefix, base / "work", base / "build.sh",
                     base / "build.log", jobs or os.cpu_count() or 2, suite)
    tree = stage_source(suite, source, plan.workdir)
    plan.version = suite.version_of(tree, source)
    if prefix.exists():
        shutil.rmtree(prefix)  # never mix two versions' binaries
    plan.script.write_text(script_text(plan, tree))
    plan.script.chmod(0o755)
    return plan


def failure_text(plan: BuildPlan, rc: int, lines: int = 15) -> str:
    """Why a build failed: the suite, build, exit code, log and the log's last lines."""
    try:
        tail = plan.log.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        tail = []
    return (f"{plan.suite.label} {plan.version} for {plan.build.name} failed (rc={rc}); "
            f"see {plan.log}:\n  " + "\n  ".join(tail))


def finish_build(plan: BuildPlan, seconds: float, keep: bool = False) -> BenchmarkInstall:
    """Check that the build script installed the suite; write the install record last."""
    s = plan.suite
    bin_dir = plan.bin_dir
    probe = s.probe
    found = any(probe in files for _d, _s, files in os.walk(bin_dir))
    if not found:
        raise BenchBuildError(f"{s.label} {plan.version} for {plan.build.name}: no {probe} "
                              f"below {bin_dir}; see {plan.log}")
    record = {"suite": s.name, "version": plan.version, "build": plan.build.name,
              "cc": plan.build.cc, "cxx": cxx_for(plan.build), "source": str(plan.source),
              "source_sha256": source_digest(plan.source),
              "bin_dir": str(bin_dir), "built": time.strftime("%Y-%m-%dT%H:%M:%S"),
              "seconds": round(seconds, 1)}
    atomic_write(plan.prefix / record_name(s), json.dumps(record, indent=2) + "\n")
    if not keep:
        shutil.rmtree(plan.workdir, ignore_errors=True)
    return BenchmarkInstall(suite=s.name, bin_dir=str(bin_dir), version=plan.version,
                            provenance=PROVENANCE)


def run_build(suite: Suite, build: BuildRecord, source: Path, prefix: Path | None = None,
              jobs: int | None = None, keep: bool = False, quiet: bool = False
              ) -> BenchmarkInstall:
    """Build and install a suite for one build; the install record is written last."""
    plan = plan_build(suite, build, source, prefix, jobs)
    t0 = time.time()
    if not quiet:
        print(f"mpimatrix bench-build: {suite.label} {plan.version} for {build.name} -> "
              f"{plan.prefix} (log {plan.log})", flush=True)
    with open(plan.log, "w") as log:
        rc = subprocess.call(["bash", str(plan.script)], stdout=log, stderr=subprocess.STDOUT)
    if rc != 0:
        raise BenchBuildError(failure_text(plan, rc))
    install = finish_build(plan, time.time() - t0, keep)
    if not quiet:
        print(f"mpimatrix bench-build: {build.name}: {suite.label} {plan.version} installed "
              f"in {time.time() - t0:.1f} s", flush=True)
    return install


def install_record(suite: Suite, build_name: str, root: Path | None = None) -> dict | None:
    """The record of the cache's complete install of a suite for this build, or None."""
    rec = build_dir(suite, build_name, root) / "install" / record_name(suite)
    try:
        data = json.loads(rec.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    data.setdefault("bin_dir", str(rec.parent.joinpath(*suite.bin_subdir)))
    return data if os.path.isdir(data["bin_dir"]) else None


def as_install(suite: Suite, data: dict) -> BenchmarkInstall:
    return BenchmarkInstall(suite=suite.name, bin_dir=str(data["bin_dir"]),
                            version=str(data.get("version", "")), provenance=PROVENANCE)


def installed(suite: Suite, build_name: str, root: Path | None = None
              ) -> BenchmarkInstall | None:
    """The complete install of the cache for this build, or None. Cheap: one read."""
    data = install_record(suite, build_name, root)
    return None if data is None else as_install(suite, data)


def current_record(suite: Suite, build_name: str, source: Path) -> dict | None:
    """The cache's install record if it was built from this very source (same sha256)
    and has every program the checks run (suite.programs: an older install lacking
    one, e.g. IMB without IMB-EXT, is built again)."""
    data = install_record(suite, build_name)
    if data and data.get("source_sha256") == source_digest(source) and all(
            os.path.exists(os.path.join(data["bin_dir"], p)) for p in suite.programs):
        return data
    return None


def planned(suite: Suite, build_name: str) -> BenchmarkInstall:
    """The install a build will have once the session's fixture built it."""
    bin_dir = install_prefix(suite, build_name).joinpath(*suite.bin_subdir)
    return BenchmarkInstall(suite=suite.name, bin_dir=str(bin_dir), provenance=PROVENANCE)
