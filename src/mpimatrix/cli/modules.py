"""`mpimatrix modules`: Lmod modulefiles for the MPIs found on this machine."""

from __future__ import annotations

import sys
from pathlib import Path

from ..builds.discovery import discover
from ..builds.lmod import INSTALL, lmod_home
from ..builds.lmod_write import write_modules


def cmd_modules_write(args) -> int:
    root = Path(args.root).absolute()
    builds = [b for b in discover()[0] if not b.modules]
    if not builds:
        print("mpimatrix modules write: no MPI found on this machine to write a module "
              "for (see `mpimatrix builds`)", file=sys.stderr)
        return 1
    try:
        names = write_modules(builds, root)
    except OSError as err:
        print(f"mpimatrix modules write: cannot write under {root}: {err.strerror}; give a "
              "folder you can write", file=sys.stderr)
        return 2
    for name in names:
        print(f"  {name}")
    print(f"wrote {len(names)} modules under {root} and {root / 'builds.yaml'} naming them:")
    print(f"  module use {root}; module avail")
    print(f"  MPIMATRIX_BUILDS={root / 'builds.yaml'} mpimatrix run   # through module load")
    if lmod_home() is None:
        print(f"note: Lmod is not installed here: {INSTALL}", file=sys.stderr)
    return 0


def register(sub) -> None:
    s = sub.add_parser("modules", help="Lmod modulefiles for the MPIs found on this machine")
    ms = s.add_subparsers(dest="modules_cmd", required=True)
    w = ms.add_parser("write", help="write a modulefile per discovered MPI (Debian, PyPI) "
                      "and a builds file naming them")
    w.add_argument("root", help="the module tree's folder (then `module use` it)")
    w.set_defaults(func=cmd_modules_write)
