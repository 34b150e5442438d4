"""Build OSU Micro-Benchmarks for builds that do not come with them.

Spack builds get OSU from the Spack environment (osu-micro-benchmarks ^<mpi>).
Debian and PyPI MPIs have no OSU package, so `mpimatrix osu-build --source
<dir or tarball>` configures, builds and installs one OSU per build, with that
build's own wrappers, into the project cache:

    .cache/osu/<build name>/build.sh      the script that was run (re-runnable)
    .cache/osu/<build name>/build.log     its output
    .cache/osu/<build name>/install/      --prefix; binaries under libexec/
    .cache/osu/<build name>/install/mpimatrix-osu.json   written last: the
                                          install is complete and usable

Discovery (discover.attach_osu_installs) attaches every complete install to its
build, so the OSU checks run on it. The source is never modified: it is copied
(or extracted) into a scratch work tree per build, removed afterwards.
"""

from __future__ import annotations

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

from .build_record import BenchmarkInstall, BuildRecord
from .paths import cache_dir

RECORD = "mpimatrix-osu.json"
#: Where `make install` puts the benchmarks, below the prefix (5.x and 7.x alike).
LIBEXEC = ("libexec", "osu-micro-benchmarks")


class OsuBuildError(Exception):
    pass


def osu_root() -> Path:
    return cache_dir() / "osu"


def install_prefix(build_name: str) -> Path:
    return osu_root() / build_name / "install"


def source_version(src: Path) -> str:
    """OMB version of a source tree: AC_INIT in configure.ac, else CHANGES' first line."""
    ac = src / "configure.ac"
    if ac.is_file():
        m = re.search(r"AC_INIT\(\[OSU-Micro-Benchmarks\],\s*\[([^\]]+)\]", ac.read_text(
            errors="replace"))
        if m:
            return m.group(1)
    changes = src / "CHANGES"
    if changes.is_file():
        m = re.match(r"OSU Micro Benchmarks v(\S+)", changes.read_text(errors="replace"))
        if m:
            return m.group(1)
    m = re.search(r"osu-micro-benchmarks-(\d[\w.]*?)(?:\.tar|$)", src.name)
    return m.group(1) if m else "unknown"


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
            except TypeError:  # Python without extraction filters
                tf.extractall(work)
        return _find_tree(work)
    raise OsuBuildError(f"{source}: neither a directory nor a tar archive")


def cxx_for(build: BuildRecord) -> str:
    """The build's C++ wrapper next to its C wrapper (mpicc.openmpi -> mpicxx.openmpi)."""
    cc = build.cc
    head, name = os.path.split(cc)
    for c, cxx in (("mpicc", "mpicxx"), ("mpiicc", "mpiicpc"), ("mpigcc", "mpigxx")):
        if name == c or name.startswith(c + "."):
            return os.path.join(head, cxx + name[len(c):])
    return cc  # OSU's C benchmarks need no working C++ compiler


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
    lines = ["#!/bin/bash", f"# mpimatrix osu-build: OSU {plan.version} for {b.name}",
             "set -eo pipefail"]
    for k, v in b.env.items():
        # values may refer to the current environment ($LD_LIBRARY_PATH): keep "$" live
        lines.append(f'export {k}="{v}"')
    lines += list(b.prepare_cmds)
    cc, cxx = b.cc, cxx_for(b)
    lines += [
        f"cd {shlex.quote(str(tree))}",
        "if [ ! -x configure ]; then autoreconf -fi; fi",
        f"./configure CC={shlex.quote(cc)} CXX={shlex.quote(cxx)} "
        f"--prefix={shlex.quote(str(plan.prefix))}",
        f"make -j{plan.jobs}",
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


def build_one(build: BuildRecord, source: Path, prefix: Path | None = None,
              jobs: int | None = None, keep: bool = False, quiet: bool = False
              ) -> BenchmarkInstall:
    source = source.resolve()
    prefix = (prefix or install_prefix(build.name)).resolve()
    base = osu_root() / build.name if prefix == install_prefix(build.name).resolve() \
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
    t0 = time.time()
    if not quiet:
        print(f"mpimatrix osu-build: OSU {plan.version} for {build.name} -> {prefix} "
              f"(log {plan.log})", flush=True)
    with open(plan.log, "w") as log:
        rc = subprocess.call(["bash", str(plan.script)], stdout=log, stderr=subprocess.STDOUT)
    if rc != 0:
        tail = plan.log.read_text(errors="replace").strip().splitlines()[-15:]
        raise OsuBuildError(f"OSU {plan.version} for {build.name} failed (rc={rc}); "
                            f"see {plan.log}:\n  " + "\n  ".join(tail))
    bin_dir = prefix.joinpath(*LIBEXEC)
    if find_binary(bin_dir, "latency") is None:
        raise OsuBuildError(f"OSU {plan.version} for {build.name}: installed, but no "
                            f"osu_latency below {bin_dir}; see {plan.log}")
    record = {"suite": "osu", "version": plan.version, "build": build.name,
              "cc": build.cc, "cxx": cxx_for(build), "source": str(source),
              "bin_dir": str(bin_dir), "built": time.strftime("%Y-%m-%dT%H:%M:%S"),
              "seconds": round(time.time() - t0, 1)}
    (prefix / RECORD).write_text(json.dumps(record, indent=2) + "\n")
    if not keep:
        shutil.rmtree(plan.workdir, ignore_errors=True)
    if not quiet:
        print(f"mpimatrix osu-build: {build.name}: OSU {plan.version} installed in "
              f"{record['seconds']} s", flush=True)
    return BenchmarkInstall(suite="osu", bin_dir=str(bin_dir), version=plan.version,
                            provenance="mpimatrix osu-build")


def installed(build_name: str, root: Path | None = None) -> BenchmarkInstall | None:
    """The complete OSU install of the cache for this build, or None. Cheap: one stat."""
    rec = (root or osu_root()) / build_name / "install" / RECORD
    try:
        data = json.loads(rec.read_text())
    except (OSError, ValueError):
        return None
    bin_dir = data.get("bin_dir") or str(rec.parent.joinpath(*LIBEXEC))
    if not os.path.isdir(bin_dir):
        return None
    return BenchmarkInstall(suite="osu", bin_dir=bin_dir, version=str(data.get("version", "")),
                            provenance="mpimatrix osu-build")


# -- command line ------------------------------------------------------------------------
def cmd_osu_build(args) -> int:
    import sys

    from .build_sources import load_builds

    src = Path(args.source)
    if not src.exists():
        print(f"mpimatrix osu-build: {src} does not exist", file=sys.stderr)
        return 2
    bs = load_builds()
    by = {b.name: b for b in bs.builds} | {b.environ_name: b for b in bs.builds}
    wanted = args.build or [b.name for b in bs.builds]
    unknown = [n for n in wanted if n not in by]
    if unknown:
        print(f"mpimatrix osu-build: unknown build(s) {unknown}; choose from "
              f"{sorted(b.name for b in bs.builds)}", file=sys.stderr)
        return 2
    if args.prefix and len(wanted) != 1:
        print("mpimatrix osu-build: --prefix needs exactly one --build", file=sys.stderr)
        return 2
    failed = []
    for name in wanted:
        b = by[name]
        if "osu" in b.benchmarks and not args.force and \
                b.benchmarks["osu"].provenance != "mpimatrix osu-build":
            print(f"mpimatrix osu-build: {b.name} already has OSU from "
                  f"{b.benchmarks['osu'].provenance or b.benchmarks['osu'].bin_dir}; "
                  "skipped (--force to build anyway)")
            continue
        try:
            build_one(b, src, Path(args.prefix) if args.prefix else None, args.jobs, args.keep)
        except OsuBuildError as err:
            print(f"mpimatrix osu-build: {err}", file=sys.stderr)
            failed.append(b.name)
    if failed:
        print(f"mpimatrix osu-build: failed for {failed}", file=sys.stderr)
        return 1
    return 0


def register(sub) -> None:
    s = sub.add_parser("osu-build", help="build OSU Micro-Benchmarks for each build "
                       "(Debian/PyPI MPIs have no OSU package) into .cache/osu/<build>")
    s.add_argument("--source", required=True,
                   help="OSU source tree or tarball (osu-micro-benchmarks-X.Y.tar.gz)")
    s.add_argument("--build", action="append",
                   help="build name (repeatable; default: every discovered build)")
    s.add_argument("--prefix", help="install elsewhere than the cache (one --build only; "
                   "discovery then does not see it)")
    s.add_argument("-j", "--jobs", type=int, default=None, help="make -j (default: cores)")
    s.add_argument("--keep", action="store_true", help="keep the work tree")
    s.add_argument("--force", action="store_true",
                   help="build even when the build already has OSU (e.g. from Spack)")
    s.set_defaults(func=cmd_osu_build)
