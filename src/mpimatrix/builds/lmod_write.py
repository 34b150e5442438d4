"""Lmod modulefiles for builds that have none: the MPIs Debian and the PyPI wheels put on
this machine, so that a site (and this project's tests) can give them to users, and to
mpimatrix, through `module load` as their other MPIs.

Each build becomes `<family>/<version>-<provenance>.lua` under the root: its bin on the
PATH (Debian's suffixed wrappers and launchers, mpicc.mpich, through links named as
every other MPI names them, in <root>/.bin/<build>), and the variables the build needs
(Intel MPI's I_MPI_ROOT and library path). A builds file naming the modules is written
beside them."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ..atomic import atomic_write
from .record import BuildRecord

#: the tools a module of a Debian build puts on the PATH under their plain names (each
#: family's own only: /usr/bin/mpichversion is MPICH's, whichever MPI is loaded). Hydra
#: starts hydra_pmi_proxy from the folder its mpiexec was called from: it goes beside.
#: The compiler wrappers too: OSU links with mpicxx, Fortran codes with mpifort (a tool the
#: machine lacks is left out).
WRAPPERS = ("mpicc", "mpicxx", "mpic++", "mpifort", "mpif90", "mpif77")
DEBIAN_TOOLS = {"openmpi": (*WRAPPERS, "mpiexec", "mpirun", "ompi_info"),
                "mpich": (*WRAPPERS, "mpiexec", "mpirun", "mpichversion", "hydra_pmi_proxy",
                          "hydra_nameserver", "hydra_persist")}
_PREPEND = re.compile(r"^(?P<value>.*):\$\{?(?P<var>[A-Za-z_]+)\}?$")


def module_name(rec: BuildRecord) -> str:
    return f"{rec.family}/{rec.version}-{rec.provenance}"


def write_modules(builds: list[BuildRecord], root: Path) -> list[str]:
    """Write a modulefile per build under `root` and `root`/builds.yaml naming them;
    returns the module names."""
    names = []
    for rec in builds:
        name = module_name(rec)
        lines = [f'whatis("{rec.family} {rec.version} ({rec.provenance}), written by '
                 f'mpimatrix modules write")', 'family("mpi")']
        lines.append(f'prepend_path("PATH", {_lua(str(_bin_dir(rec, root)))})')
        for var, value in rec.env.items():
            if var.startswith("OMPI_"):  # the family's own settings: the record adds them
                continue
            m = _PREPEND.match(value)
            if m and m.group("var") == var:
                lines.append(f'prepend_path("{var}", {_lua(_plain(m.group("value")))})')
            else:
                lines.append(f'setenv("{var}", {_lua(_plain(value))})')
        path = root / f"{name}.lua"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, "\n".join(lines) + "\n")
        names.append(name)
    atomic_write(root / "builds.yaml", yaml.safe_dump(
        {"builds": [{"module": n} for n in names]}, sort_keys=False))
    return names


def _bin_dir(rec: BuildRecord, root: Path) -> Path:
    """The directory the module puts first on the PATH: the build's bin, or for a build
    whose tools carry a suffix (Debian's mpicc.mpich) links to them under plain names."""
    cc = Path(rec.cc)
    if cc.name == "mpicc":
        return cc.parent
    suffix = cc.name[len("mpicc"):]  # ".mpich", ".openmpi"
    links = root / ".bin" / rec.name
    links.mkdir(parents=True, exist_ok=True)
    for plain in DEBIAN_TOOLS.get(rec.family, ("mpicc", "mpiexec", "mpirun")):
        # a wrapper only under its suffix: Debian's plain mpicxx, mpifort are the
        # alternatives' (Open MPI's), whichever MPI this is
        tries = [cc.parent / f"{plain}{suffix}"] + ([] if plain in WRAPPERS else
                                                     [cc.parent / plain])
        target = next((t for t in tries if t.exists()), None)
        link = links / plain
        if target is None or (link.is_symlink() and link.resolve() == target.resolve()):
            continue
        link.unlink(missing_ok=True)
        link.symlink_to(target)
    return links


def _plain(value: str) -> str:
    """A record's environment value as text (its $$ is a literal $)."""
    return value.replace("$$", "$")


def _lua(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
