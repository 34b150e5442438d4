"""Build records from a Spack lock file (spack.lock, lockfile-version 6 and 7).

One record per MPI build (node providing `mpi`) and toolchain, named from the
spec so that a person can tell the builds apart, e.g.

    openmpi-5.0.8-ucx-gcc12        openmpi@5 fabrics=ucx, built with gcc 12
    mpich-4.3.2-ch3-tcp-llvm14     mpich device=ch3 netmod=tcp, built with llvm 14
    openmpi-4.1.4-ext-gcc12        an external (Debian) Open MPI, benchmarks by gcc 12

The benchmark installs (osu-micro-benchmarks, intel-mpi-benchmarks, npb) whose `mpi`
dependency is that MPI node are attached to it. An external MPI has no compiler
of its own: its benchmarks' compiler decides the toolchain, so an external used
by gcc- and llvm-built benchmarks gives one record per compiler.

Prefixes: externals carry theirs in the lock. Built specs are looked up among the
installed ones (`spack find`, or the install database of $MPIMATRIX_SPACK_STORE
without Spack); a build that is not installed still gets a record, marked
unusable with the reason, so the ReFrame configuration reports it as skipped.

The lock itself is read by lockfile.py.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

from ...shell import literal
from ..families import FAMILIES
from ..record import BenchmarkInstall, BuildRecord
from .installed import STORE_ENV, installed_prefixes_db, installed_prefixes_spack, spack_env_args
from .lockfile import Lock, LockError, Node, read_lock
from .spec_naming import (
    MPI_FAMILIES,
    NAME_OF_PACKAGE,
    compiler_of,
    compiler_spec,
    compiler_tag,
    fabric_of,
    pmi_of,
    pmi_of_mvapich,
    spec_string,
)
from .tool import find_spack

BENCHMARK_SUITES = {"osu-micro-benchmarks": "osu", "intel-mpi-benchmarks": "imb", "npb": "npb"}
#: the variables a record sets from its MPI's prefix (a module of the MPI sets its own)
PREFIX_VARIABLES = ("PATH", "LD_LIBRARY_PATH", "I_MPI_ROOT")


# -- records --------------------------------------------------------------------------------
def _mpi_nodes(lock: Lock) -> tuple[list[Node], list[str]]:
    """Known MPI nodes, and the names of unknown `mpi` providers."""
    hashes, unknown = [], set()
    for node in lock.nodes.values():
        h = node.dep_providing("mpi")
        if h:
            hashes.append(h)
    for r in lock.roots:
        if lock.nodes.get(r.get("hash", "")) and lock.nodes[r["hash"]].name in MPI_FAMILIES:
            hashes.append(r["hash"])
    seen, out = set(), []
    for h in hashes:
        if h in seen:
            continue
        seen.add(h)
        node = lock.node(h)
        if node.name in MPI_FAMILIES:
            out.append(node)
        else:
            unknown.add(node.name)
    out.sort(key=lambda n: (n.name, n.version, n.hash))
    return out, sorted(unknown)


def builds_from_lock(path: str | os.PathLike, *, spack: str | bool | None = True,
                     prefixes: dict[str, str] | None = None
                     ) -> tuple[list[BuildRecord], str]:
    """The build records of a Spack lock, and the lock's sha256.

    spack: True = use `spack` if found (SPACK_ROOT or PATH), False/None = never,
    or the path of a spack executable. prefixes: {hash: prefix} of installed specs
    (default: asked from Spack, else $MPIMATRIX_SPACK_STORE's database).
    """
    lock = read_lock(path)
    mpis, unknown = _mpi_nodes(lock)
    if not mpis:
        what = (f"its MPI providers ({', '.join(unknown)}) are not known to mpimatrix "
                f"(known: {', '.join(sorted(MPI_FAMILIES))})" if unknown
                else "no node provides `mpi`")
        raise LockError(f"{lock.path}: the lock has no MPI build: {what}; add MPI specs "
                        "(e.g. the benchmarks matrix of the project's spack.yaml) and "
                        "re-concretize")
    for name in unknown:
        print(f"mpimatrix: WARNING: {lock.path}: MPI provider {name!r} is not known to "
              "mpimatrix; its builds are ignored", file=sys.stderr)

    spack_exe = find_spack() if spack is True else (spack or None)
    lookup_error = ""
    if prefixes is None:
        prefixes = {}
        if spack_exe:
            prefixes, lookup_error = installed_prefixes_spack(spack_exe, lock.path)
        if not prefixes and os.environ.get(STORE_ENV):
            prefixes = installed_prefixes_db(Path(os.environ[STORE_ENV]))

    root_hashes = {r.get("hash") for r in lock.roots}
    rows = _rows_of(lock)
    benches_of: dict[str, list[Node]] = {}
    for node in lock.nodes.values():
        if node.name in BENCHMARK_SUITES:
            h = node.dep_providing("mpi")
            if h:
                benches_of.setdefault(h, []).append(node)

    records = []
    for mpi in mpis:
        comp = compiler_of(lock, mpi)
        groups: dict[str, tuple[Node | None, list[Node]]] = {}
        benches = sorted(benches_of.get(mpi.hash, []),
                         key=lambda b: (b.hash not in root_hashes, b.name, b.hash))
        for b in benches:
            tc = comp or compiler_of(lock, b)
            groups.setdefault(compiler_spec(tc), (tc, []))[1].append(b)
        if not groups:
            groups[compiler_spec(comp)] = (comp, [])
        for tc, members in groups.values():
            records.append(_record(lock, mpi, tc, members, prefixes, spack_exe, lookup_error,
                                   rows))
    _unique_names(records)
    return records, lock.sha256


def _rows_of(lock: Lock) -> dict[str, str]:
    """{hash: the root of the matrix row it belongs to} for the roots and their direct
    dependencies: a benchmark's row is the mpimatrix-benchmarks root above it (or the
    benchmark itself, when it is a root)."""
    out: dict[str, str] = {}
    for r in lock.roots:
        h = r.get("hash", "")
        if h in lock.nodes:
            for dep, _, _ in lock.nodes[h].deps():
                out.setdefault(dep, h)
    for r in lock.roots:  # a root is its own row
        if r.get("hash") in lock.nodes:
            out[r["hash"]] = r["hash"]
    return out


def _record(lock: Lock, mpi: Node, tc: Node | None, benches: list[Node],
            prefixes: dict[str, str], spack_exe: str | None, lookup_error: str,
            rows: dict[str, str]) -> BuildRecord:
    family = MPI_FAMILIES[mpi.name]
    fabric, tags = fabric_of(mpi, family)
    if mpi.is_external:
        tags = ["ext"]
    name = "-".join([NAME_OF_PACKAGE.get(mpi.name, mpi.name), mpi.version, *tags,
                     *([compiler_tag(tc)] if tc else [])])
    name = re.sub(r"[^A-Za-z0-9._+-]", "-", name)
    fam = FAMILIES[family]
    notes: list[str] = []
    unusable = ""
    env: dict[str, str] = dict(fam.env)
    prepare: list[str] = []

    if family == "mvapich" and not mpi.is_external:
        notes.append(f"pmi: {pmi_of_mvapich(mpi)[1]}")
    if mpi.is_external:
        prefix = mpi.external_path
        notes.append("external")
        if tc is not None and tc.is_external:
            # The external's wrappers call the compiler it was configured with; point
            # them at this toolchain's compiler.
            comps = ((tc.data.get("external") or {}).get("extra_attributes") or {}
                     ).get("compilers") or {}
            for lang, var in zip(("c", "cxx"), fam.compiler_vars, strict=True):
                if comps.get(lang) and var:
                    env[var] = literal(comps[lang])
    else:
        prefix = prefixes.get(mpi.hash, "")
        if not prefix:
            # the row's root installs the MPI with its benchmarks (one root: the bundle)
            row = {rows.get(b.hash, "") for b in benches}
            target = row.pop() if len(row) == 1 and "" not in row else mpi.hash
            why = lookup_error or (
                f"not installed (`spack install /{target[:7]}`)" if spack_exe or prefixes
                else f"not located: Spack not found (SPACK_ROOT/PATH) and {STORE_ENV} "
                f"{'empty' if STORE_ENV in os.environ else 'unset'}")
            unusable = why
            prefix = f"/spack-not-installed/{mpi.hash}"  # placeholder: reported as skipped
        elif spack_exe:
            cmd = [spack_exe, *spack_env_args(lock.path), "load", "--sh", f"/{mpi.hash}"]
            pre = "".join(f"{var}={shlex.quote(os.environ[var])} "
                          for var in ("MPIMATRIX_SPACK_SITE", "SPACK_PYTHON")
                          if os.environ.get(var))
            prepare.append(f'eval "$({pre}{shlex.join(cmd)})"')

    root = Path(prefix)
    if family == "impi":
        for cand in (root / "mpi" / mpi.version, root / "mpi" / "latest"):
            if cand.is_dir():
                root = cand
                break
        env.setdefault("I_MPI_ROOT", literal(str(root)))
    if not prepare and Path(prefix).is_dir():
        env["PATH"] = f"{literal(str(root / 'bin'))}:$PATH"
        env["LD_LIBRARY_PATH"] = f"{literal(str(root / 'lib'))}:$LD_LIBRARY_PATH"

    bench_installs: dict[str, BenchmarkInstall] = {}
    missing: dict[str, str] = {}
    for b in benches:
        suite = BENCHMARK_SUITES[b.name]
        if suite in bench_installs:
            notes.append(f"also {b.name}@{b.version} /{b.hash[:7]} (not used: one {suite} "
                         "per build)")
            continue
        bprefix = prefixes.get(b.hash, "")
        if not bprefix:
            missing[suite] = f"spack install /{rows.get(b.hash, b.hash)[:7]}"
            notes.append(f"{suite}: {b.name}@{b.version} /{b.hash[:7]} not installed "
                         f"(`{missing[suite]}`)")
            continue
        bin_dir = (Path(bprefix) / "libexec" / "osu-micro-benchmarks" if suite == "osu"
                   else Path(bprefix) / "bin")
        bench_installs[suite] = BenchmarkInstall(suite=suite, bin_dir=str(bin_dir),
                                                 version=b.version, provenance="spack",
                                                 spec_hash=b.hash)
    group = next((r.get("group") for r in lock.roots
                  if r.get("hash") in {b.hash for b in benches} and r.get("group")), None)
    if group:
        notes.append(f"group {group}")

    return BuildRecord(
        name=name, family=family, version=mpi.version, provenance="spack", prefix=prefix,
        cc=str(root / "bin" / "mpicc"), launcher=str(root / "bin" / fam.launcher),
        launcher_style=fam.launcher_style, compiler=compiler_spec(tc), fabric=fabric,
        pmi=pmi_of(mpi, family), env=env, prepare_cmds=prepare, benchmarks=bench_installs,
        spec=spec_string(lock, mpi), dag_hash=mpi.hash, lock_sha256=lock.sha256, notes=notes,
        unusable=unusable, missing_benchmarks={s: c for s, c in missing.items()
                                               if s not in bench_installs},
    )


def _unique_names(records: list[BuildRecord]) -> None:
    """Two records with one name get the hash (then the compiler version) appended."""
    for suffix in (lambda r: r.dag_hash[:7], lambda r: r.compiler.partition("@")[2]):
        by_name: dict[str, list[BuildRecord]] = {}
        for r in records:
            by_name.setdefault(r.name, []).append(r)
        for name, recs in by_name.items():
            if len(recs) > 1:
                for r in recs:
                    r.name = f"{name}-{suffix(r)}"
