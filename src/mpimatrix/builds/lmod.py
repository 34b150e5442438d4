"""Builds given as Lmod modules: what `module load` gives a user, tested as they get it.

A builds file entry `{module: mpich/4.0.2, needs: [gcc/12]}` is resolved by loading the
modules (`needs` first, in order; then `benchmarks`, the modules of its OSU and IMB, as
an Lmod hierarchy publishes them under the MPI) in a clean bash with Lmod's init, then
asking the MPI on the PATH what it is, as discovery asks the MPIs it finds: the wrappers
and launchers by name, the family and version from `mpichversion`, `mpirun --version` or `mpiexec
--version`, the compiler from `mpicc --version`. The record keeps the modules; ReFrame's
environment for the build loads them (ReFrame's Lmod backend), so a job runs what a user
loads. A module that does not load, or loads no MPI, is skipped with the reason.

Lmod is found from LMOD_CMD / LMOD_PKG (set by its init in a user's shell), else at
Debian's place (/usr/share/lmod/lmod); MODULEPATH is the user's.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
from pathlib import Path

from ..shell import printable
from .families import FAMILIES
from .record import NAME_PATTERN, BuildError, BuildRecord

DEBIAN_LMOD = Path("/usr/share/lmod/lmod")
INSTALL = "apt-get install lmod (Debian), or set LMOD_PKG to Lmod's directory"
#: fields of a builds file entry naming a module; RECORD_FIELDS pass to the record as
#: given (a module tree Spack wrote: the lock's build, for what changed; its PMI for srun)
RECORD_FIELDS = ("pmi", "spec", "dag_hash", "lock_sha256")
ENTRY_FIELDS = frozenset({"module", "needs", "benchmarks", "name", "fabric", "env",
                          *RECORD_FIELDS})
#: exit code of the probe script when a module does not load
NOT_LOADED = 97
#: what the probe prints after loading, one `key=value` block per question
PROBE = r"""
echo "path_after=$PATH"
for t in mpicc mpiexec mpirun osu_latency IMB-MPI1 is.S.x; do echo "which_$t=$(command -v $t)"; done
# the wrapper's own: Debian's /usr/bin/mpichversion answers whichever MPI is loaded
echo "@@mpichversion"; "$(dirname "$(command -v mpicc)")/mpichversion" 2>/dev/null | head -5
echo "@@mpirun"; mpirun --version 2>&1 | head -3
echo "@@mpiexec"; mpiexec --version 2>&1 | head -3
echo "@@mpicc"; mpicc --version 2>&1 | head -1
echo "@@location"; for m in "$@"; do module --redirect --location show "$m" 2>&1 | tail -1; done
"""
#: (family, the probe's sections that tell it, regex of its version), in the order they
#: are told apart: the launchers first (a stray mpichversion of another package on the
#: PATH says nothing about an Open MPI's mpirun), then MPICH's and MVAPICH's mpichversion
SIGNATURES = (
    ("impi", ("mpiexec", "mpirun"), r"Intel\(R\) MPI Library.*?Version\s+(\S+)"),
    ("openmpi", ("mpirun", "mpiexec"), r"\((?:Open MPI|OpenRTE)\)\s+(\S+)"),
    ("mvapich2", ("mpichversion",), r"MVAPICH2 Version:?\s+(\S+)"),
    ("mvapich", ("mpichversion",), r"MVAPICH Version:?\s+(\S+)"),
    ("mpich", ("mpichversion",), r"MPICH Version:?\s+(\S+)"),
)


def lmod_home() -> Path | None:
    """Lmod's directory (holding init/ and libexec/), or None when it is not installed."""
    for candidate in (os.environ.get("LMOD_PKG"),
                      str(Path(os.environ["LMOD_CMD"]).parents[1])
                      if os.environ.get("LMOD_CMD") else None,
                      str(DEBIAN_LMOD)):
        if candidate and (Path(candidate) / "init" / "bash").is_file():
            return Path(candidate)
    return None


def lmod_init() -> Path | None:
    home = lmod_home()
    return home / "init" / "bash" if home else None


def lmod_cmd() -> Path | None:
    home = lmod_home()
    return home / "libexec" / "lmod" if home else None


def module_shell(modules: list[str], script: str, timeout: float = 60
                 ) -> subprocess.CompletedProcess:
    """Run `script` in a clean bash after `module load` of each of `modules` (in order);
    exits NOT_LOADED when one does not load. Raises BuildError without Lmod."""
    init = lmod_init()
    if init is None:
        raise BuildError(f"Lmod is not installed (no init/bash under $LMOD_PKG or "
                         f"{DEBIAN_LMOD}); {INSTALL}")
    loads = "\n".join(f"module load {shlex.quote(m)} || exit {NOT_LOADED}" for m in modules)
    text = (f"source {shlex.quote(str(init))} >/dev/null 2>&1\necho \"path_before=$PATH\"\n"
            f"{loads}\n{script}")
    return subprocess.run(["bash", "--noprofile", "--norc", "-c", text, "probe", *modules],
                          capture_output=True, text=True, timeout=timeout,
                          env={k: v for k, v in os.environ.items() if k != "BASH_ENV"})


def module_build(entry: dict, origin: str) -> BuildRecord:
    """The build record of a builds file entry naming a module (module docstring);
    raises BuildError naming `origin` and the module when it cannot be one."""
    module = entry.get("module")
    needs, benches = entry.get("needs") or [], entry.get("benchmarks") or []
    where = f"{origin}: module {module!r}"
    if not isinstance(module, str) or not module.strip():
        raise BuildError(f"{origin}: 'module' must be a module name, e.g. mpich/4.0.2")
    for field, value, example in (("needs", needs, "[gcc/12], loaded first"),
                                  ("benchmarks", benches, "[osu-micro-benchmarks/7.4], "
                                   "loaded after it")):
        if not isinstance(value, list) or not all(isinstance(m, str) and m for m in value):
            raise BuildError(f"{where}: '{field}' must be a list of module names, e.g. "
                             f"{example}, not {value!r:.60}")
    unknown = sorted(map(str, set(entry) - ENTRY_FIELDS))
    if unknown:
        raise BuildError(f"{where} has unknown fields {unknown}; allowed: "
                         f"{', '.join(sorted(ENTRY_FIELDS))}")
    modules = [*needs, module, *benches]
    try:
        proc = module_shell(modules, PROBE)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{where}: loading it and asking its MPI took over 60 s") from None
    except BuildError as err:  # no Lmod
        raise BuildError(f"{where}: {err}") from None
    if proc.returncode == NOT_LOADED:
        said = printable(" ".join(proc.stderr.split()), 300)
        raise BuildError(f"{where}: `module load {' '.join(modules)}` failed: {said} "
                         "(check `module avail` and MODULEPATH)")
    probe = _sections(proc.stdout)
    family, version = _family(probe)
    if family is None:
        raise BuildError(f"{where} loads no MPI this project knows: no mpichversion, "
                         "mpirun --version or mpiexec --version on the PATH after loading "
                         f"it says Open MPI, MPICH, MVAPICH2 or Intel MPI")
    added = set(probe.get("path_after", "").split(":")) - set(
        probe.get("path_before", "").split(":"))
    cc = probe.get("which_mpicc", "")
    folder = str(Path(cc).parent)
    if cc and folder not in added:
        system = folder in ("/usr/bin", "/bin", "/usr/local/bin")
        raise BuildError(f"{where} loads no MPI: the mpicc on the PATH after loading it, "
                         f"{cc}, is not from a folder it adds (the machine's default MPI); "
                         + ("a module of an MPI installed in the system's folders (such "
                            "as a Spack external at /usr) adds none: leave that build to "
                            "discovery (`mpimatrix builds`) instead of a module entry"
                            if system else "name the module that gives the MPI"))
    fam = FAMILIES[family]
    launcher = probe.get(f"which_{fam.launcher}", "")
    if not cc or not launcher:
        missing = " and ".join(n for n, p in (("mpicc", cc), (fam.launcher, launcher)) if not p)
        raise BuildError(f"{where}: {family} {version} but no {missing} on the PATH after "
                         "loading it")
    name = entry.get("name") or re.sub(r"[^A-Za-z0-9._+-]", "-", module.strip("/"))
    # a name given in the file is checked by from_dict below, as any record's
    if not entry.get("name") and not NAME_PATTERN.fullmatch(name):
        raise BuildError(f"{where}: give it a name (letters, digits, . _ + -): "
                         f"{name!r} cannot be a ReFrame environment")
    env = entry.get("env") or {}  # not a mapping: from_dict says so
    installs = _bench_installs(benches, probe, added, where)
    device = re.search(r"(?:MPICH|MVAPICH2?) Device:\s+(\S+)", probe.get("mpichversion", ""))
    # through from_dict: the entry's own fields (name, fabric, env) checked as any record's
    return BuildRecord.from_dict({
        "name": name, "family": family, "version": version, "provenance": "module",
        "prefix": str(Path(cc).resolve().parent.parent), "cc": cc, "launcher": launcher,
        "launcher_style": fam.launcher_style, "compiler": _compiler(probe.get("mpicc", "")),
        "fabric": entry.get("fabric") or (device.group(1) if device else ""),
        "env": {**fam.env, **env} if isinstance(env, dict) else env,
        "modules": modules, "benchmarks": installs,
        **{k: entry[k] for k in RECORD_FIELDS if k in entry},
        "module_files": _module_files(modules, probe.get("location", ""))}, origin)


def _bench_installs(benches: list[str], probe: dict[str, str], added: set[str],
                    where: str) -> dict[str, dict]:
    """OSU and IMB as the `benchmarks` modules put them on the PATH: {suite: install}.
    The version is the suite's module's (osu-micro-benchmarks/7.4 -> 7.4), else none."""
    if not benches:
        return {}
    out = {}
    for suite, binary in (("osu", "osu_latency"), ("imb", "IMB-MPI1"), ("npb", "is.S.x")):
        path = probe.get(f"which_{binary}", "")
        if not path or str(Path(path).parent) not in added:
            continue
        found = Path(path)
        # OSU installs below libexec/osu-micro-benchmarks/mpi/<kind>/ (its checks search
        # the tree); IMB's binaries sit in one folder
        bin_dir = found.parents[2] if found.parent.parent.name == "mpi" else found.parent
        module = next((m for m in benches if _suite_of_module(m) == suite), "")
        out[suite] = {"suite": suite, "bin_dir": str(bin_dir), "provenance": "module",
                      "version": module.rpartition("/")[2]}
    if not out:
        raise BuildError(f"{where}: its benchmarks modules {benches} put neither osu_latency "
                         "nor IMB-MPI1 on the PATH; name the modules of the OSU and IMB "
                         "built on it (`module avail` after loading it)")
    return out


def _suite_of_module(module: str) -> str:
    """'osu', 'imb' or 'npb' by a module's name (osu-micro-benchmarks/7.4, imb/2021.7,
    npb/3.4-kit), or ''."""
    name = module.lower()
    return "osu" if "osu" in name else "imb" if "imb" in name or "mpi-benchmarks" in name \
        else "npb" if "npb" in name else ""


def _sections(out: str) -> dict[str, str]:
    """The probe's answers: which_<tool> paths and the text of each @@ section."""
    answers, section, lines = {}, None, []
    for line in out.splitlines():
        if line.startswith("@@"):
            if section:
                answers[section] = "\n".join(lines)
            section, lines = line[2:], []
        elif section:
            lines.append(line)
        elif line.startswith(("which_", "path_")):
            key, _, value = line.partition("=")
            answers[key] = value.strip()
    if section:
        answers[section] = "\n".join(lines)
    return answers


def _family(probe: dict[str, str]) -> tuple[str | None, str]:
    for family, sections, pattern in SIGNATURES:
        m = re.search(pattern, "\n".join(probe.get(k, "") for k in sections))
        if m:
            return family, m.group(1).rstrip(",")
    return None, ""


def _compiler(first_line: str) -> str:
    """Spack's name of the compiler behind the wrapper: gcc@12.2.0, llvm@14.0.6."""
    m = re.search(r"clang version (\d+(?:\.\d+)*)", first_line)
    if m:
        return f"llvm@{m.group(1)}"
    m = re.match(r"(?:gcc|cc)\b.*?(\d+\.\d+(?:\.\d+)?)\s*$", first_line)
    return f"gcc@{m.group(1)}" if m else ""


def _module_files(modules: list[str], locations: str) -> dict[str, str]:
    """{module: sha256 of its modulefile} (a module edited is a change of the build)."""
    out = {}
    for module, path in zip(modules, locations.splitlines(), strict=False):
        try:
            out[module] = hashlib.sha256(Path(path.strip()).read_bytes()).hexdigest()
        except OSError:
            continue
    return out
