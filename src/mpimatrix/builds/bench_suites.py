"""The benchmark suites mpimatrix builds from source for the builds that lack them
(OSU, IMB, NPB).

Per suite: how a source tree and a release tarball are recognised, the version a
tree says it is, the shell commands that build and install it with a build's
wrappers, where the programs land below the prefix, and the release a connected
machine downloads (URL and the sha256 Spack's recipe carries for it). The rest of
the machinery (staging, the cache, downloads) is the same for every suite.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .bench_npb import is_npb_tree, npb_commands, npb_tree_version


@dataclass(frozen=True)
class Release:
    version: str
    url: str  # upstream's release tarball
    sha256: str  # as Spack's recipe has it: a download with another one is refused


@dataclass(frozen=True)
class Suite:
    name: str  # the key in BuildRecord.benchmarks: "osu", "imb"
    label: str  # for messages: "OSU", "IMB"
    package: str  # Spack's package name; also its folder in a kit or a Spack mirror
    #: a release tarball's file name; group 1 is the version
    tarball: re.Pattern
    tree_hint: str  # what a source tree holds (for messages)
    bin_subdir: tuple[str, ...]  # where the programs are, below the install prefix
    probe: str  # a program every complete install has
    release: Release
    is_tree: Callable[[Path], bool]
    tree_version: Callable[[Path], str]
    #: (cc, cxx, prefix, jobs) -> the commands run in the source tree
    commands: Callable[[str, str, Path, int], list[str]]
    #: the programs the checks run, all in bin_subdir: a cache install lacking one of them
    #: (built by an older mpimatrix) is built again
    programs: tuple[str, ...] = ()

    @property
    def archive(self) -> str:
        """The release's file name in a kit or a Spack mirror: <package>-<version>.tar.gz."""
        return f"{self.package}-{self.release.version}.tar.gz"

    def version_of(self, tree: Path, source: Path) -> str:
        """The tree's own version, else the one the source's or the tree's name holds."""
        found = self.tree_version(tree)
        if found:
            return found
        for name in (source.name, tree.name):
            m = self.tarball.search(name + ".tar")  # a tree's name has no suffix
            if m:
                return m.group(1)
        return "unknown"


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


# -- OSU Micro-Benchmarks ------------------------------------------------------------
def _osu_tree(path: Path) -> bool:
    """configure.ac or configure naming OSU (not any autotools tree, e.g. MVAPICH2's)."""
    return any("OSU-Micro-Benchmarks" in _read(path / f) for f in ("configure.ac", "configure"))


def osu_tree_version(src: Path) -> str:
    """OMB version of a source tree: AC_INIT in configure.ac, else CHANGES' first line."""
    m = re.search(r"AC_INIT\(\[OSU-Micro-Benchmarks\],\s*\[([\w.\-]+)\]",
                  _read(src / "configure.ac"))
    if m:
        return m.group(1)
    m = re.match(r"OSU Micro Benchmarks v([\w.\-]+)", _read(src / "CHANGES"))
    return m.group(1) if m else ""


def _osu_commands(cc: str, cxx: str, prefix: Path, jobs: int) -> list[str]:
    q = shlex.quote
    return ["if [ ! -x configure ]; then autoreconf -fi; fi",
            f"./configure CC={q(cc)} CXX={q(cxx)} --prefix={q(str(prefix))}",
            f"make -j{int(jobs)}",
            "make install"]


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


OSU = Suite(
    name="osu", label="OSU", package="osu-micro-benchmarks",
    tarball=re.compile(r"^osu-micro-benchmarks-(\d[\w.]*?)(?:-[\w]+)?\.(?:tar|tgz)"),
    tree_hint="no configure or configure.ac of OSU-Micro-Benchmarks",
    bin_subdir=("libexec", "osu-micro-benchmarks"),
    probe="osu_latency",
    release=Release("7.4", "https://mvapich.cse.ohio-state.edu/download/mvapich/"
                    "osu-micro-benchmarks-7.4.tar.gz",
                    "1edd0c2efa61999409bfb28740a7f39689a5b42b1a1b4c66d1656e5637f7cefc"),
    is_tree=_osu_tree, tree_version=osu_tree_version, commands=_osu_commands)


# -- Intel MPI Benchmarks ---------------------------------------------------------------
#: The programs the IMB checks run (suites/imb/catalogue.py: IMB-<suite>). IMB-EXT and
#: IMB-IO (one-sided MPI-2, MPI-IO) build with the same make in 2021.7 and 2021.11.
IMB_PROGRAMS = ("IMB-MPI1", "IMB-NBC", "IMB-RMA", "IMB-P2P", "IMB-EXT", "IMB-IO")


def _imb_tree(path: Path) -> bool:
    return (path / "Makefile").is_file() and (path / "src_cpp").is_dir() \
        and (path / "src_c").is_dir()


def _imb_tree_version(src: Path) -> str:
    """The last VERSION="..." of src_c/IMB_g_info.c (the first is IMB2018's)."""
    found = re.findall(r'VERSION\s*=\s*"([^"]+)"', _read(src / "src_c" / "IMB_g_info.c"))
    return found[-1].replace(" ", "_") if found else ""


def _imb_commands(cc: str, cxx: str, prefix: Path, jobs: int) -> list[str]:
    # Each program's sub-make directly, one after the other with -j: IMB's top Makefile
    # calls a literal `make` (no jobserver reaches it, so `make -jN` there compiles one file
    # at a time), and its MPI1, NBC, RMA, EXT and IO sub-makes share src_cpp's objects,
    # so two of them must not run at once. 15 s instead of 28 s on 2 cores.
    q = shlex.quote
    bindir = q(str(prefix / "bin"))
    # IMB 2021.11 compiles src_cpp with -Werror: the MPI C++ bindings' headers (Open
    # MPI's cxx/op_inln.h: cast-function-type) stop it; IMB uses the C API only.
    flags = f"CC={q(cc)} CXX={q(cxx)} CPPFLAGS={q('-DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX')}"
    cmds, built = [], []
    for program in IMB_PROGRAMS:
        target = program.removeprefix("IMB-")
        folder = "src_c/P2P" if target == "P2P" else "src_cpp"
        cmds.append(f"make -j{int(jobs)} -C {folder} -f Makefile {flags} TARGET={target}")
        built.append(f"{folder}/{program}")
    return [*cmds, f"mkdir -p {bindir}", f"cp {' '.join(built)} {bindir}/"]


IMB = Suite(
    name="imb", label="IMB", package="intel-mpi-benchmarks",
    tarball=re.compile(r"^(?:intel-mpi-benchmarks-|(?:mpi-benchmarks-)?IMB-v)"
                       r"(\d[\w.]*?)\.(?:tar|tgz)"),
    tree_hint="no Makefile with src_cpp/ and src_c/", bin_subdir=("bin",), probe="IMB-MPI1",
    release=Release("2021.7", "https://github.com/intel/mpi-benchmarks/archive/refs/tags/"
                    "IMB-v2021.7.tar.gz",
                    "acee02cc719a74e6853194576cb7e6bf1fdc74f8971578e1b2141306c3c19477"),
    is_tree=_imb_tree, tree_version=_imb_tree_version, commands=_imb_commands,
    programs=IMB_PROGRAMS)

# -- NAS Parallel Benchmarks (MPI) -------------------------------------------------------
# Every kernel and class in one install (bench_npb.py); Spack's npb recipe knows NASA's
# 3.3.1, 3.4.1 and 3.4.3 (a mirror of another tarball, like the offline kit's, has no
# upstream checksum: give it with --sources).
NPB = Suite(
    name="npb", label="NPB", package="npb",
    tarball=re.compile(r"^(?:NPB|npb-)(\d[\w.]*?)\.(?:tar|tgz)"),
    tree_hint="no NPB*-MPI tree with config/make.def.template, sys/setparams.c and IS/",
    bin_subdir=("bin",), probe="is.S.x",
    release=Release("3.4.1", "https://www.nas.nasa.gov/assets/npb/NPB3.4.1.tar.gz",
                    "f3a43467da6e84a829ea869156d3ea86c17932136bb413a4b6dab23018a28881"),
    is_tree=is_npb_tree, tree_version=npb_tree_version, commands=npb_commands)

SUITES: dict[str, Suite] = {s.name: s for s in (OSU, IMB, NPB)}
