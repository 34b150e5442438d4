"""The build record: one MPI build the checks can run on.

Every source of builds (discovery on the machine, a Spack lock, a builds file)
produces the same records, so that the ReFrame configuration and the checks
never care where a build came from.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

FAMILIES = ("openmpi", "mpich", "mvapich2", "mvapich", "impi")
PROVENANCES = ("debian", "pypi", "spack", "site")
LAUNCHER_STYLES = ("openmpi", "hydra")

# Families whose libmpi.so.12 is MPICH-ABI compatible: binaries linked against
# one (e.g. the Intel wheel's IMB) run on the others.
MPICH_ABI_FAMILIES = ("mpich", "mvapich2", "mvapich", "impi")

# What MPI_Get_library_version() prints first, per family ({v} = version).
LIBRARY_VERSION_PATTERNS = {
    "openmpi": r"Open MPI v{v}\b",
    "mpich": r"MPICH Version:\s+{v}\b",
    "mvapich2": r"MVAPICH2 Version\s*:?\s+{v}",
    "mvapich": r"MVAPICH Version\s*:?\s+{v}",
    "impi": r"Intel\(R\) MPI Library {v}\b",
}


class BuildError(Exception):
    """A build record that cannot be used; the message says why and how to fix it."""


@dataclass
class BenchmarkInstall:
    """Where a benchmark suite lives for one build."""

    suite: str  # "imb" or "osu"
    bin_dir: str  # directory holding the binaries (IMB-MPI1, osu_latency, ...)
    version: str = ""
    provenance: str = ""  # e.g. "impi-wheel", "spack", "prefix"
    env: dict[str, str] = field(default_factory=dict)  # extra variables to run them
    spec_hash: str = ""  # Spack DAG hash of the benchmark install, if any


@dataclass
class BuildRecord:
    name: str  # human name, e.g. "openmpi-4.1.4-debian" or "openmpi-5.0.8-ucx-gcc12"
    family: str
    version: str
    provenance: str
    prefix: str
    cc: str  # C compiler wrapper
    launcher: str  # mpiexec / mpirun to use outside a scheduler
    launcher_style: str  # how to pass placement flags: "openmpi" or "hydra"
    compiler: str = ""  # e.g. "gcc@12.2.0"
    fabric: str = ""  # e.g. "ucx", "ofi", "ch4:ucx", "mrail"
    # srun --mpi= value for direct launch under Slurm ("pmix", "pmi2"); "" launches
    # with the build's own launcher inside the allocation.
    pmi: str = ""
    env: dict[str, str] = field(default_factory=dict)
    prepare_cmds: list[str] = field(default_factory=list)  # e.g. spack load --sh
    benchmarks: dict[str, BenchmarkInstall] = field(default_factory=dict)
    spec: str = ""  # full concretized Spack spec
    dag_hash: str = ""
    lock_sha256: str = ""
    notes: list[str] = field(default_factory=list)

    # -- derived -------------------------------------------------------------
    @property
    def environ_name(self) -> str:
        """The ReFrame environment name: ReFrame allows only [A-Za-z0-9_-]."""
        return environ_name(self.name)

    @property
    def mpich_abi(self) -> bool:
        return self.family in MPICH_ABI_FAMILIES

    @property
    def library_version_regex(self) -> str:
        pattern = LIBRARY_VERSION_PATTERNS.get(self.family, r"{v}")
        return pattern.format(v=re.escape(self.version))

    def features(self) -> list[str]:
        feats = ["mpi", self.family, self.provenance]
        if self.mpich_abi:
            feats.append("mpich_abi")
        feats += sorted(self.benchmarks)
        return feats

    # -- (de)serialisation -----------------------------------------------------
    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict, origin: str = "<dict>") -> BuildRecord:
        data = dict(data)
        missing = [k for k in ("name", "family", "version", "provenance", "prefix",
                               "cc", "launcher", "launcher_style") if not data.get(k)]
        if missing:
            raise BuildError(
                f"{origin}: build {data.get('name', '?')!r} lacks {', '.join(missing)}; "
                "add them (see README, 'Builds file')"
            )
        benches = {
            suite: BenchmarkInstall(**{"suite": suite, **b})
            if "suite" not in b else BenchmarkInstall(**b)
            for suite, b in (data.pop("benchmarks", None) or {}).items()
        }
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise BuildError(
                f"{origin}: build {data['name']!r} has unknown keys {sorted(unknown)}; "
                f"allowed: {sorted(known)}"
            )
        rec = cls(**data, benchmarks=benches)
        rec.check_fields(origin)
        return rec

    def check_fields(self, origin: str = "<build>") -> None:
        if self.family not in FAMILIES:
            raise BuildError(f"{origin}: build {self.name!r}: family {self.family!r} "
                             f"is not one of {FAMILIES}")
        if self.provenance not in PROVENANCES:
            raise BuildError(f"{origin}: build {self.name!r}: provenance "
                             f"{self.provenance!r} is not one of {PROVENANCES}")
        if self.launcher_style not in LAUNCHER_STYLES:
            raise BuildError(f"{origin}: build {self.name!r}: launcher_style "
                             f"{self.launcher_style!r} is not one of {LAUNCHER_STYLES}")


def environ_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def problems(rec: BuildRecord) -> list[str]:
    """What makes a build unusable on this machine (empty when it is usable).

    Builds loaded by prepare_cmds (spack load) resolve their wrappers only after
    loading, so only their prefix is checked. A source that already knows why a
    build cannot be used (e.g. a Spack lock entry not installed) says so in a note
    starting with "unusable: ".
    """
    out = [n[len("unusable: "):] for n in rec.notes if n.startswith("unusable: ")]
    if out:
        return out
    if not Path(rec.prefix).is_dir():
        out.append(f"prefix {rec.prefix} does not exist (was the build removed or moved?)")
        return out
    if rec.prepare_cmds:
        return out
    for what, path in (("C wrapper", rec.cc), ("launcher", rec.launcher)):
        if not _executable(path):
            out.append(f"{what} {path} is missing or not executable")
    for suite, bench in rec.benchmarks.items():
        if not Path(bench.bin_dir).is_dir():
            out.append(f"{suite} directory {bench.bin_dir} does not exist")
    return out


def _executable(path: str) -> bool:
    if os.sep not in path:
        from shutil import which
        return which(path) is not None
    return os.access(path, os.X_OK) and Path(path).is_file()


def load_builds_file(path: str | os.PathLike) -> list[BuildRecord]:
    """Read an explicit list of builds (JSON or YAML, a list or {builds: [...]})."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise BuildError(f"{path}: cannot read builds file: {err.strerror}; "
                         "check MPIMATRIX_BUILDS / --builds") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as err:
        raise BuildError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: "
                         f"{err}") from None
    if isinstance(data, dict):
        data = data.get("builds")
    if not isinstance(data, list):
        raise BuildError(f"{path}: expected a list of builds or a mapping with a "
                         "'builds' list")
    return [BuildRecord.from_dict(item, origin=str(path)) for item in data]


def dump_builds(builds: list[BuildRecord]) -> str:
    return json.dumps({"builds": [b.to_dict() for b in builds]}, indent=2)


# Slurm's mpi/pmi2 plugin (22.05 and later: pmi1.c, "TODO: read until newline") reads
# a PMI-1 request with one read() of at most 1024 bytes, yet offers vallen_max=1024.
# MPICH >= 4.1 splits its PMI allgather into segments of up to vallen_max characters,
# so a `cmd=put ... value=<segment>` line can pass 1024 bytes: the stepd parses half a
# line ("mpi/pmi2: value not properly terminated in client request") and the job
# hangs. Measured on the emulated cluster: IMB-MPI1 on PyPI MPICH 5.0.2 under
# `srun --mpi=pmi2` hung or failed 100/100 times; under Hydra in the allocation 0/50.
SRUN_PMI1_LINE_NOTE = ("srun --mpi=pmi2 not used: MPICH >= 4.1 sends PMI-1 lines longer "
                       "than Slurm's 1024-byte PMI-1 read; launched by Hydra (mpiexec) "
                       "inside the allocation")


def mpich_srun_pmi(version: str, pmi_wire: str = "pmi1") -> str:
    """srun --mpi= value for an MPICH build, or "" when direct launch is unreliable."""
    v = tuple(int(x) for x in re.findall(r"\d+", version or "")[:2])
    return "" if pmi_wire == "pmi1" and v >= (4, 1) else "pmi2"
