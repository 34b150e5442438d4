"""What a build is along the axes a study compares: MPI family, version, fabric class and
compiler (and where it came from), from the fields its test cases record (build_family,
build_version, build_fabric, build_compiler, build_provenance: the build record's) or,
for sessions recorded before the checks recorded them, from its name as the sources of
builds spell it:

    openmpi-5.0.7-ucx-gcc12          Spack lock: package, version, fabric tags, compiler tag
    mpich-4.0.2-ch3-tcp-gcc12        (MPICH ch3: device and netmod)
    mvapich2-2.3.7-1-nemesis-gcc12   (a version with a package revision)
    openmpi-4.1.4-kit-ucx-gcc12      (a kit version: its release, 4.1.4)
    openmpi-4.1.4-ext-gcc12          a Spack external
    openmpi-4.1.4-debian, mpich-5.0.2-pypi, impi-2021.18.1-pypi   discovered

An axis nothing tells is "" (unknown).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...builds.spack.spec_naming import COMPILER_TAGS, MPI_FAMILIES, NAME_OF_PACKAGE

FAMILY_NAMES = {"openmpi": "Open MPI", "mpich": "MPICH", "mvapich2": "MVAPICH2",
                "mvapich": "MVAPICH", "impi": "Intel MPI"}
#: Package names a build name starts with (longest first: hpcx-mpi before mpich...).
PACKAGES = sorted({**MPI_FAMILIES, **{v: MPI_FAMILIES[k] for k, v in NAME_OF_PACKAGE.items()}
                   }.items(), key=lambda kv: -len(kv[0]))
#: Name tags that say where a build came from rather than what it is.
PROVENANCE_TAGS = {"debian": "debian", "pypi": "pypi", "ext": "external", "site": "site"}
#: Fabric words -> the class of transport they select (the network path; shared-memory
#: components such as cma, xpmem, knem, vader, sm have no class of their own). `sock`
#: (ch3:sock) is a class of its own: TCP within a host too, no shared memory (intranode
#: latency 40 us against 0.2-1 us here), so it never pairs with `tcp` as the same fabric.
FABRIC_CLASSES = {
    "ucx": ("ucx",), "hpcx": ("ucx",), "ofi": ("ofi",), "libfabric": ("ofi",),
    "psm": ("psm",), "psm2": ("psm",), "verbs": ("verbs",), "openib": ("verbs",),
    "mrail": ("verbs",), "nemesisib": ("verbs",), "nemesistcpib": ("tcp", "verbs"),
    "nemesisibtcp": ("verbs", "tcp"), "tcp": ("tcp",), "sock": ("sock",),
    "nemesis": ("tcp",), "mxm": ("mxm",), "portals4": ("portals4",),
}
SHARED_MEMORY = {"cma", "xpmem", "knem", "vader", "sm", "shm", "ob1", "posix"}
#: Open MPI with these (or `fabrics=none`: no fabric library) talks TCP between nodes.
OPENMPI_TCP = SHARED_MEMORY | {"none"}
_COMPILER_TAG = re.compile(r"(?!ch\d$)[a-z]+\d+")
_HASH_SUFFIX = re.compile(r"[a-z2-7]{7}")
_VERSION_SUFFIX = re.compile(r"\d+(?:\.\d+)+")


@dataclass(frozen=True)
class Axes:
    family: str  # openmpi, mpich, mvapich2, mvapich, impi
    version: str
    fabric: str  # the fabric's class: ucx, ofi, tcp, sock, verbs, psm, "ucx+ofi"
    compiler: str  # name and major version: gcc12, llvm18, oneapi2025
    provenance: str = ""  # debian, pypi, external, spack, site

    @property
    def family_name(self) -> str:
        return FAMILY_NAMES.get(self.family, self.family or "?")

    def shown(self, axis: str) -> str:
        if axis == "family":
            return self.family_name
        return getattr(self, axis) or "?"


def fabric_class(fabric: str, family: str = "") -> str:
    """The class of a fabric as a record or a name spells it ('ch4:ucx', 'ob1/vader+tcp',
    'ucx,cma', 'ch3-sock'): its network transports joined by '+', in order; Open MPI with
    shared-memory components only (or none) runs ob1 over TCP between nodes; Intel MPI is
    always libfabric; '' when nothing tells."""
    words = [w for w in re.split(r"[^a-z0-9]+", fabric.lower()) if w]
    out: list[str] = []
    for w in words:
        for c in FABRIC_CLASSES.get(w, ()):
            if c not in out:
                out.append(c)
    if not out and family == "openmpi" and any(w in OPENMPI_TCP for w in words):
        out = ["tcp"]
    if not out and family == "impi":
        out = ["ofi"]
    return "+".join(out)


def release(version: str) -> str:
    """The release a version builds: Spack's kit versions (4.1.4-kit, 2.3.7-1-kit, the
    offline kit's trees) are their release."""
    return version.removesuffix("-kit")


def compiler_tag(compiler: str) -> str:
    """'gcc@12.2.0' -> 'gcc12', 'intel-oneapi-compilers@2025.1' -> 'oneapi2025'; a tag
    ('gcc12') stays as it is."""
    name, _, version = compiler.partition("@")
    name = COMPILER_TAGS.get(name, re.sub(r"[^A-Za-z0-9]", "", name))
    return f"{name}{version.split('.')[0]}" if version else name


def build_axes(name: str, recorded: dict | None = None) -> Axes:
    """A build's axes: the recorded fields (family, version, fabric, compiler,
    provenance; '' = not recorded) where there are, else what its name says."""
    rec = {k: v for k, v in (recorded or {}).items() if isinstance(v, str) and v}
    named = axes_of_name(name)
    family = rec.get("family", named.family)
    return Axes(
        family, release(rec.get("version", named.version)),
        fabric_class(rec["fabric"], family) if "fabric" in rec else named.fabric,
        compiler_tag(rec["compiler"]) if "compiler" in rec else named.compiler,
        rec.get("provenance", named.provenance) if named.provenance != "external"
        else "external")


def axes_of_name(name: str) -> Axes:
    """The axes a build name spells (see the module's docstring)."""
    low = name.lower()
    package = next((p for p in PACKAGES if low.startswith(p[0] + "-")), None)
    if package is None:
        return Axes("", "", "", "")
    tokens = low[len(package[0]) + 1:].split("-")
    version = tokens.pop(0) if tokens and tokens[0][:1].isdigit() else ""
    while version and tokens and tokens[0].isdigit():  # 2.3.7-1: a package revision
        version += "-" + tokens.pop(0)
    if tokens and tokens[0] == "kit":  # the offline kit's tree of that release
        tokens.pop(0)
    # suffixes that make two names unique: a DAG hash, or the compiler's version
    if len(tokens) >= 2 and _COMPILER_TAG.fullmatch(tokens[-2]) and (
            _VERSION_SUFFIX.fullmatch(tokens[-1]) or (
                _HASH_SUFFIX.fullmatch(tokens[-1]) and tokens[-1] not in FABRIC_CLASSES)):
        tokens.pop()
    compiler = ""
    if tokens and _COMPILER_TAG.fullmatch(tokens[-1]) and tokens[-1] not in FABRIC_CLASSES:
        compiler = tokens.pop()
    provenance = next((PROVENANCE_TAGS[t] for t in tokens if t in PROVENANCE_TAGS),
                      "spack" if compiler else "")
    fabric = "-".join(t for t in tokens if t not in PROVENANCE_TAGS and t != "pmi")
    return Axes(package[1], version, fabric_class(fabric, package[1]), compiler, provenance)


def session_axes(cases) -> dict[str, Axes]:
    """Each build's axes in a session's test cases (the first case that names them)."""
    out: dict[str, Axes] = {}
    for c in cases:
        fields = c.build_fields
        if c.build not in out or (not out[c.build].fabric and fields["fabric"]):
            out[c.build] = build_axes(c.build, fields)
    return out
