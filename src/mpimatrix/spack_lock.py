"""Build records from a Spack lock file (spack.lock, lockfile-version 6 and 7).

One record per MPI build (node providing `mpi`) and toolchain, named from the
spec so that a person can tell the builds apart, e.g.

    openmpi-5.0.8-ucx-gcc12        openmpi@5 fabrics=ucx, built with gcc 12
    mpich-4.3.2-ch3-tcp-llvm14     mpich device=ch3 netmod=tcp, built with llvm 14
    openmpi-4.1.4-ext-gcc12        an external (Debian) Open MPI, benchmarks by gcc 12

The benchmark installs (osu-micro-benchmarks, intel-mpi-benchmarks) whose `mpi`
dependency is that MPI node are attached to it. An external MPI has no compiler
of its own: its benchmarks' compiler decides the toolchain, so an external used
by gcc- and llvm-built benchmarks gives one record per compiler.

Prefixes: externals carry theirs in the lock. Built specs are looked up among the
installed ones (`spack find`, or the install database of $MPIMATRIX_SPACK_STORE
without Spack); a build that is not installed still gets a record, marked
unusable with the reason, so the ReFrame configuration reports it as skipped.

Lockfile formats: lib/spack/docs/file_formats/lockfile.rst in Spack. Version 6
(Spack 1.0, 1.1) and 7 (Spack 1.2: roots carry `group`) share the node format
(spec file v5: compilers are build dependencies providing the c/cxx/fortran
virtuals).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .build_record import (
    SRUN_PMI1_LINE_NOTE,
    BenchmarkInstall,
    BuildError,
    BuildRecord,
    mpich_srun_pmi,
)
from .discover import OPENMPI_ENV
from .spack_cli import find_spack

SUPPORTED_VERSIONS = {6: "Spack 1.0/1.1", 7: "Spack 1.2"}

# Package providing `mpi` -> build-record family.
MPI_FAMILIES = {
    "openmpi": "openmpi",
    "hpcx-mpi": "openmpi",
    "mpich": "mpich",
    "cray-mpich": "mpich",
    "mvapich2": "mvapich2",
    "mvapich": "mvapich",
    "mvapich-plus": "mvapich",
    "intel-oneapi-mpi": "impi",
    "intel-mpi": "impi",
}
# Shorter names in build names.
NAME_OF_PACKAGE = {"intel-oneapi-mpi": "impi", "intel-mpi": "impi"}

BENCHMARK_SUITES = {"osu-micro-benchmarks": "osu", "intel-mpi-benchmarks": "imb"}

COMPILER_TAGS = {"intel-oneapi-compilers": "oneapi",
                 "intel-oneapi-compilers-classic": "icc",
                 "llvm-amdgpu": "rocmcc"}

# srun --mpi= value per MPICH-family `pmi` variant value.
PMI_OF_VARIANT = {"default": "pmi2", "pmi": "pmi2", "pmi1": "pmi2", "pmi2": "pmi2",
                  "pmix": "pmix", "cray": "cray_shasta"}

STORE_ENV = "MPIMATRIX_SPACK_STORE"
UNUSABLE = "unusable: "  # notes prefix read by build_record.problems()

_FLAG_KEYS = {"cflags", "cppflags", "cxxflags", "fflags", "ldflags", "ldlibs"}


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
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(f"{v} ({w})" for v, w in SUPPORTED_VERSIONS.items())
        hint = ("it was written by Spack < 1.0: re-concretize with Spack 1.x "
                "(`spack -e <env> concretize -f`)" if isinstance(version, int) and version < 6
                else "it was written by a newer Spack: use Spack 1.1/1.2 for this "
                "environment, or extend mpimatrix.spack_lock")
        raise LockError(f"{path}: lockfile-version {version!r} is not supported "
                        f"(supported: {supported}); {hint}")
    nodes: dict[str, Node] = {}
    roots: list[dict] = []
    _collect(data, nodes, roots)
    return Lock(path, sha, version, data.get("spack") or {}, roots, nodes)


def _collect(data: dict, nodes: dict[str, Node], roots: list[dict]) -> None:
    """Roots and nodes, including those of included concrete environments."""
    for h, d in (data.get("concrete_specs") or {}).items():
        nodes.setdefault(h, Node(h, d))
    roots.extend(data.get("roots") or [])
    for inc in (data.get("include_concrete") or {}).values():
        _collect(inc, nodes, roots)


# -- naming --------------------------------------------------------------------------------------
def compiler_of(lock: Lock, node: Node) -> Node | None:
    """The compiler node providing C (else C++, Fortran) to a node; None for externals."""
    for lang in ("c", "cxx", "fortran"):
        h = node.dep_providing(lang)
        if h:
            return lock.node(h)
    return None


def compiler_tag(comp: Node | None) -> str:
    if comp is None:
        return ""
    name = COMPILER_TAGS.get(comp.name, re.sub(r"[^A-Za-z0-9]", "", comp.name))
    return f"{name}{comp.version.split('.')[0]}"


def compiler_spec(comp: Node | None) -> str:
    return f"{comp.name}@{comp.version}" if comp else ""


def fabric_of(node: Node, family: str) -> tuple[str, list[str]]:
    """(fabric field of the record, tags for the build name)."""
    if family == "openmpi":
        fabrics = [f for f in node.values("fabrics") if f not in ("auto", "none")]
        tags = list(fabrics)
        if node.variant("pmi") is True:
            tags.append("pmi")
        return ",".join(node.values("fabrics")), tags
    if family in ("mpich", "mvapich"):
        device = str(node.variant("device", "") or "")
        netmod = str(node.variant("netmod", "") or "")
        if device == "ch3:sock":
            return device, ["ch3-sock"]
        if device.startswith("ch3"):
            return f"ch3:{netmod}", [f"ch3-{netmod}"]
        return (f"{device}:{netmod}" if device else netmod), ([netmod] if netmod else [])
    if family == "mvapich2":
        fabrics = node.values("fabrics")
        return ",".join(fabrics), fabrics
    if family == "impi":
        return "ofi", []
    return "", []


def pmi_of(node: Node, family: str) -> str:
    if family == "openmpi":
        # A Spack-built 4.x +pmi links Slurm's PMI-2 (seed 002: srun --mpi=pmi2); 5.x
        # speaks PMIx only, and Debian's 4.1.4 (an external) runs under --mpi=pmix.
        return "pmi2" if node.variant("pmi") is True and not node.is_external else "pmix"
    if family == "mvapich2":
        v = str(node.variant("pmi_version", "pmi2"))
        return PMI_OF_VARIANT.get(v, "pmi2")
    variant = str(node.variant("pmi", "default"))
    pmi = PMI_OF_VARIANT.get(variant, "pmi2")
    if family == "mpich" and pmi == "pmi2" and variant != "pmi2":
        # The PMI-1 wire protocol: Slurm's pmi2 plugin cuts MPICH >= 4.1's long lines.
        return mpich_srun_pmi(str(node.version))
    return pmi


def spec_string(lock: Lock, node: Node) -> str:
    """The node's concrete spec, in Spack's syntax (variants, arch, compiler)."""
    parts = [f"{node.name}@{node.version}"]
    bools, keyed = [], []
    for k in sorted(node.params):
        v = node.params[k]
        if k in _FLAG_KEYS or k == "patches":
            if k in _FLAG_KEYS and v:
                keyed.append(f'{k}="{" ".join(map(str, v))}"')
            continue
        if isinstance(v, bool):
            bools.append(("+" if v else "~") + k)
        elif isinstance(v, list):
            keyed.append(f"{k}:={','.join(map(str, v))}" if len(v) > 1 else f"{k}={v[0]}"
                         if v else f"{k}=none")
        else:
            keyed.append(f"{k}={v}")
    parts[0] += "".join(bools)
    parts += keyed
    arch = node.data.get("arch") or {}
    target = arch.get("target")
    if isinstance(target, dict):
        target = target.get("name")
    if arch:
        parts.append(f"arch={arch.get('platform', '')}-{arch.get('platform_os', '')}-{target}")
    langs: dict[str, list[str]] = {}
    for h, _, virtuals in node.deps():
        vs = [v for v in virtuals if v in ("c", "cxx", "fortran")]
        if vs:
            dep = lock.node(h)
            langs.setdefault(f"{dep.name}@{dep.version}", []).extend(vs)
    for comp, vs in langs.items():
        parts.append(f"%{','.join(vs)}={comp}")
    return " ".join(parts)


# -- installed prefixes ---------------------------------------------------------------------------
def spack_env_args(lock_path: Path) -> list[str]:
    """`-e <dir>` when the lock sits in an environment directory (spack.yaml next to it)."""
    env_dir = lock_path.resolve().parent
    return ["-e", str(env_dir)] if (env_dir / "spack.yaml").is_file() else []


def installed_prefixes_spack(spack: str, lock_path: Path) -> tuple[dict[str, str], str]:
    """{hash: prefix} of the installed specs, and an error text if Spack failed."""
    cmd = [spack, *spack_env_args(lock_path), "find", "--no-groups",
           "--format", "{hash} {prefix}"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as err:
        return {}, f"`{' '.join(cmd)}` failed: {err}"
    out = {}
    for line in proc.stdout.splitlines():
        h, _, prefix = line.strip().partition(" ")
        if len(h) == 32 and prefix:
            out[h] = prefix
    if proc.returncode != 0 and not out:
        err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        if "No package matches" in proc.stderr or "no installed packages" in proc.stderr:
            return {}, ""
        return {}, f"`{' '.join(cmd)}` failed: {err}"
    return out, ""


def installed_prefixes_db(store: Path) -> dict[str, str]:
    """{hash: prefix} from a Spack install tree's database, without Spack."""
    index = store / ".spack-db" / "index.json"
    try:
        data = json.loads(index.read_text())
    except (OSError, ValueError):
        return {}
    installs = (data.get("database") or {}).get("installs") or {}
    return {h: rec["path"] for h, rec in installs.items()
            if rec.get("path") and rec.get("installed", True)}


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
            records.append(_record(lock, mpi, tc, members, prefixes, spack_exe, lookup_error))
    _unique_names(records)
    return records, lock.sha256


def _record(lock: Lock, mpi: Node, tc: Node | None, benches: list[Node],
            prefixes: dict[str, str], spack_exe: str | None, lookup_error: str
            ) -> BuildRecord:
    family = MPI_FAMILIES[mpi.name]
    fabric, tags = fabric_of(mpi, family)
    if mpi.is_external:
        tags = ["ext"]
    name = "-".join([NAME_OF_PACKAGE.get(mpi.name, mpi.name), mpi.version, *tags,
                     *([compiler_tag(tc)] if tc else [])])
    notes: list[str] = []
    env: dict[str, str] = dict(OPENMPI_ENV) if family == "openmpi" else {}
    prepare: list[str] = []

    if mpi.is_external:
        prefix = mpi.external_path
        notes.append("external")
        if tc is not None and tc.is_external:
            # The external's wrappers call the compiler it was configured with; point
            # them at this toolchain's compiler.
            comps = ((tc.data.get("external") or {}).get("extra_attributes") or {}
                     ).get("compilers") or {}
            for lang, var in (("c", "CC"), ("cxx", "CXX")):
                if comps.get(lang):
                    env[("OMPI_" if family == "openmpi" else "MPICH_") + var] = comps[lang]
    else:
        prefix = prefixes.get(mpi.hash, "")
        if not prefix:
            why = lookup_error or (
                f"not installed (`spack install /{mpi.hash[:7]}`)" if spack_exe or prefixes
                else f"not located: Spack not found (SPACK_ROOT/PATH) and {STORE_ENV} unset")
            notes.append(UNUSABLE + why)
            prefix = f"/spack-not-installed/{mpi.hash}"  # placeholder: reported as skipped
        elif spack_exe:
            site = os.environ.get("MPIMATRIX_SPACK_SITE")
            cmd = [spack_exe, *spack_env_args(lock.path), "load", "--sh", f"/{mpi.hash}"]
            pre = f"MPIMATRIX_SPACK_SITE={shlex.quote(site)} " if site else ""
            prepare.append(f'eval "$({pre}{shlex.join(cmd)})"')

    root = Path(prefix)
    if family == "impi":
        for cand in (root / "mpi" / mpi.version, root / "mpi" / "latest"):
            if cand.is_dir():
                root = cand
                break
        env.setdefault("I_MPI_ROOT", str(root))
    if not prepare and Path(prefix).is_dir():
        env["PATH"] = f"{root / 'bin'}:$PATH"
        env["LD_LIBRARY_PATH"] = f"{root / 'lib'}:$LD_LIBRARY_PATH"

    bench_installs: dict[str, BenchmarkInstall] = {}
    for b in benches:
        suite = BENCHMARK_SUITES[b.name]
        if suite in bench_installs:
            notes.append(f"also {b.name}@{b.version} /{b.hash[:7]} (not used: one {suite} "
                         "per build)")
            continue
        bprefix = prefixes.get(b.hash, "")
        if not bprefix:
            notes.append(f"{suite}: {b.name}@{b.version} /{b.hash[:7]} not installed")
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

    launcher = "mpirun" if family == "openmpi" else "mpiexec"
    pmi = pmi_of(mpi, family)
    if not pmi:
        notes.append(SRUN_PMI1_LINE_NOTE)
    return BuildRecord(
        name=name, family=family, version=mpi.version, provenance="spack", prefix=prefix,
        cc=str(root / "bin" / "mpicc"), launcher=str(root / "bin" / launcher),
        launcher_style="openmpi" if family == "openmpi" else "hydra",
        compiler=compiler_spec(tc), fabric=fabric, pmi=pmi, env=env,
        prepare_cmds=prepare, benchmarks=bench_installs, spec=spec_string(lock, mpi),
        dag_hash=mpi.hash, lock_sha256=lock.sha256, notes=notes,
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
