"""The build record: one MPI build the checks can run on.

Every source of builds (discovery on the machine, a Spack lock, a builds file)
produces the same records, so that the ReFrame configuration and the checks
never care where a build came from.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from .families import FAMILIES, LAUNCHER_STYLES, PMI_WIRES, PROVENANCES

#: Build names become ReFrame environment names and directory names (.cache/osu/<name>).
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")
SUITES = ("imb", "npb", "osu")
#: Devices with no shared-memory transport (MVAPICH2 `fabrics=sock`, MPICH `ch3:sock`):
#: ranks on one host talk over TCP, and to MPI each rank is a shared-memory node of its
#: own (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) gives single ranks).
NO_SHARED_MEMORY_FABRICS = frozenset({"sock", "ch3:sock"})


class BuildError(Exception):
    """A build record that cannot be used; the message says why and how to fix it."""


@dataclass
class BenchmarkInstall:
    """Where a benchmark suite lives for one build."""

    suite: str  # "imb" or "osu"
    bin_dir: str  # directory holding the binaries (IMB-MPI1, osu_latency, ...)
    version: str = ""
    provenance: str = ""  # e.g. "impi-wheel", "spack", "mpimatrix osu-build"
    env: dict[str, str] = field(default_factory=dict)  # extra variables to run them
    spec_hash: str = ""  # Spack DAG hash of the benchmark install, if any
    #: {link name: target}: symbolic links the job makes in an ABI directory of its
    #: stage and puts first on LD_LIBRARY_PATH (e.g. libmpi.so.12 -> libmpich.so.12)
    abi_links: dict[str, str] = field(default_factory=dict)


#: BenchmarkInstall.provenance of the OSU/IMB mpimatrix builds from given sources; one
#: with no version yet is planned: the session's fixture builds it (bench_install.planned)
BENCH_BUILD = "mpimatrix bench-build"


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
    pmi: str = ""  # PMI wire protocol: pmix, pmi1, pmi2, cray ("" = the family's)
    env: dict[str, str] = field(default_factory=dict)
    prepare_cmds: list[str] = field(default_factory=list)  # e.g. spack load --sh
    benchmarks: dict[str, BenchmarkInstall] = field(default_factory=dict)
    spec: str = ""  # full concretized Spack spec
    dag_hash: str = ""
    lock_sha256: str = ""
    notes: list[str] = field(default_factory=list)
    #: why the build cannot be used, when its source already knows (e.g. a Spack
    #: lock entry that is not installed); empty for a usable build
    unusable: str = ""
    #: {suite: the command that installs it} for a suite the build's source has and
    #: that is not installed, e.g. {"osu": "spack install /abc1234"} (the Spack row)
    missing_benchmarks: dict[str, str] = field(default_factory=dict)
    #: Lmod modules that give the build, loaded in this order (builds/lmod.py); ReFrame's
    #: environment loads them instead of setting the build's variables by hand
    modules: list[str] = field(default_factory=list)
    #: {module: sha256 of its modulefile}: an edited module is a change of the build
    module_files: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if not self.pmi and self.family in FAMILIES:
            self.pmi = FAMILIES[self.family].pmi

    # -- derived -------------------------------------------------------------
    @property
    def environ_name(self) -> str:
        """The ReFrame environment name: ReFrame allows only [A-Za-z0-9_-]."""
        return environ_name(self.name)

    @property
    def mpich_abi(self) -> bool:
        return FAMILIES[self.family].mpich_abi

    @property
    def shared_memory(self) -> bool:
        """Whether ranks on one host share memory (see NO_SHARED_MEMORY_FABRICS)."""
        return self.fabric not in NO_SHARED_MEMORY_FABRICS

    @property
    def library_version_regex(self) -> str:
        return FAMILIES[self.family].library_version_regex(self.version)

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
    def from_dict(cls, data: object, origin: str = "<dict>") -> BuildRecord:
        """A record from its dict form; every defect raises BuildError naming
        `origin`, the build and the field."""
        if not isinstance(data, dict):
            raise BuildError(f"{origin}: a build must be a mapping of fields, not "
                             f"{type(data).__name__} {data!r:.60}")
        data = dict(data)
        label = data.get("name") if isinstance(data.get("name"), str) else "?"
        where = f"{origin}: build {label!r}"
        known = {f.name for f in fields(cls)}
        unknown = sorted(map(str, set(data) - known))
        if unknown:
            raise BuildError(f"{where} has unknown fields {unknown}; allowed: {sorted(known)}")
        required = ("name", "family", "version", "provenance", "prefix", "cc", "launcher",
                    "launcher_style")
        missing = [k for k in required if data.get(k) in (None, "")]
        if missing:
            raise BuildError(f"{where} lacks {', '.join(missing)}; add them (`mpimatrix "
                             "builds --json` prints complete records to start from)")
        for k in (*required, "compiler", "fabric", "pmi", "spec", "dag_hash", "lock_sha256",
                  "unusable"):
            if k in data and not isinstance(data[k], str):
                raise BuildError(f"{where}: {k} must be a string, not {data[k]!r} (quote it "
                                 f"in YAML: {k}: \"{data[k]}\")")
        data["env"] = _str_map(data.get("env"), f"{where}: env")
        data["prepare_cmds"] = _str_list(data.get("prepare_cmds"), f"{where}: prepare_cmds")
        data["notes"] = _str_list(data.get("notes"), f"{where}: notes")
        data["benchmarks"] = _benchmarks(data.get("benchmarks"), where)
        data["missing_benchmarks"] = _str_map(data.get("missing_benchmarks"),
                                              f"{where}: missing_benchmarks", keys="file")
        data["modules"] = _str_list(data.get("modules"), f"{where}: modules", "module name")
        data["module_files"] = _str_map(data.get("module_files"), f"{where}: module_files",
                                        keys="module")
        rec = cls(**data)
        rec.check_fields(origin)
        return rec

    def check_fields(self, origin: str = "<build>") -> None:
        where = f"{origin}: build {self.name!r}"
        if not NAME_PATTERN.fullmatch(self.name):
            raise BuildError(f"{where}: a name may hold letters, digits and . _ + - only "
                             "(it becomes a ReFrame environment and a directory name), "
                             "at most 100 characters, starting with a letter or digit")
        for what, value, allowed in (("family", self.family, tuple(FAMILIES)),
                                     ("provenance", self.provenance, PROVENANCES),
                                     ("launcher_style", self.launcher_style, LAUNCHER_STYLES),
                                     ("pmi", self.pmi, PMI_WIRES)):
            if value not in allowed:
                raise BuildError(f"{where}: {what} {value!r} is not one of {allowed}")


def _str_map(value, where: str, keys: str = "variable") -> dict[str, str]:
    """A mapping of strings; keys="variable": environment variable names."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, (str, int, float)) and not isinstance(v, bool)
            for k, v in value.items()):
        raise BuildError(f"{where} must be a mapping of names to values, e.g. "
                         f"{{I_MPI_ROOT: /opt/impi}}, not {value!r:.80}")
    pattern = {"variable": r"[A-Za-z_][A-Za-z0-9_]*", "module": r"[A-Za-z0-9_.+/-]+"}.get(
        keys, r"[A-Za-z0-9_.+-]+")
    bad = [k for k in value if not re.fullmatch(pattern, k)]
    if bad:
        raise BuildError(f"{where}: {bad} are not {keys} names")
    return {k: str(v) for k, v in value.items()}


def _str_list(value, where: str, each: str = "shell command") -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise BuildError(f"{where} must be a list of strings (one {each} each), not "
                         f"{value!r:.80}")
    return list(value)


def _benchmarks(value, where: str) -> dict[str, BenchmarkInstall]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BuildError(f"{where}: benchmarks must be a mapping of suite ({', '.join(SUITES)}) "
                         f"to {{bin_dir: ...}}, not {value!r:.80}")
    out = {}
    allowed = {f.name for f in fields(BenchmarkInstall)}
    for suite, b in value.items():
        if suite not in SUITES:
            raise BuildError(f"{where}: benchmark suite {suite!r} is not one of {SUITES}")
        if not isinstance(b, dict) or not isinstance(b.get("bin_dir"), str):
            raise BuildError(f"{where}: benchmarks.{suite} must be a mapping with a bin_dir "
                             f"string, not {b!r:.80}")
        unknown = sorted(map(str, set(b) - allowed))
        if unknown:
            raise BuildError(f"{where}: benchmarks.{suite} has unknown fields {unknown}; "
                             f"allowed: {sorted(allowed)}")
        b = {**b, "suite": suite}
        for k in ("version", "provenance", "spec_hash"):
            if k in b and not isinstance(b[k], str):
                raise BuildError(f"{where}: benchmarks.{suite}.{k} must be a string")
        b["env"] = _str_map(b.get("env"), f"{where}: benchmarks.{suite}.env")
        b["abi_links"] = _str_map(b.get("abi_links"), f"{where}: benchmarks.{suite}.abi_links",
                                  keys="file")
        out[suite] = BenchmarkInstall(**b)
    return out


def environ_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def why_unusable(rec: BuildRecord) -> list[str]:
    """What makes a build unusable on this machine (empty when it is usable).

    Builds loaded by prepare_cmds (spack load) resolve their wrappers only after
    loading, so only their prefix is checked.
    """
    if rec.unusable:
        return [rec.unusable]
    if not Path(rec.prefix).is_dir():
        return [f"prefix {rec.prefix} does not exist (was the build removed or moved?)"]
    if rec.prepare_cmds:
        return []
    out = []
    for what, path in (("C wrapper", rec.cc), ("launcher", rec.launcher)):
        if not _executable(path):
            out.append(f"{what} {path} is missing or not executable")
    for suite, bench in rec.benchmarks.items():
        planned = bench.provenance == BENCH_BUILD and not bench.version
        if not planned and not Path(bench.bin_dir).is_dir():
            out.append(f"{suite} directory {bench.bin_dir} does not exist")
    return out


def _executable(path: str) -> bool:
    if os.sep not in path:
        return shutil.which(path) is not None
    return os.access(path, os.X_OK) and Path(path).is_file()


@dataclass
class Skipped:
    """A build that will not run, and why."""

    name: str
    reason: str
