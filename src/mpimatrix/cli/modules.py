"""`mpimatrix modules`: Lmod modulefiles for the MPIs found on this machine; a builds file
naming the modules Spack wrote for a lock's builds."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from ..atomic import atomic_write
from ..builds.discovery import discover
from ..builds.lmod import INSTALL, lmod_home
from ..builds.lmod_write import write_modules
from ..builds.sources import lock_path_from_env
from ..builds.spack.lock_builds import LockError, builds_from_lock
from ..builds.spack.module_tree import REFRESH, ModuleTreeError, module_names, module_tree
from ..builds.spack.tool import find_spack


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


def cmd_modules_spack(args) -> int:
    """The lock's builds as the Lmod modules Spack wrote for them: a builds file."""
    lock = Path(args.lock).absolute() if args.lock else lock_path_from_env()
    out = Path(args.output).absolute()
    if lock is None:
        print("mpimatrix modules spack: no Spack lock: activate the environment (`spack env "
              "activate .`), or give --lock <env>/spack.lock", file=sys.stderr)
        return 2
    spack = find_spack()
    if spack is None:
        print("mpimatrix modules spack: Spack not found (SPACK_ROOT or PATH); it names the "
              "modules it wrote: `mpimatrix spack locate`", file=sys.stderr)
        return 2
    try:
        builds, _ = builds_from_lock(lock, spack=spack)
        hashes = [h for b in builds for h in (b.dag_hash, *(i.spec_hash for i in
                                                               b.benchmarks.values())) if h]
        tree = module_tree(builds, module_names(spack, lock, hashes))
    except (LockError, ModuleTreeError) as err:
        print(f"mpimatrix modules spack: {err}", file=sys.stderr)
        return 2
    for s in tree.skipped:
        print(f"  skipped {s.name}: {s.reason}")
    if not tree.entries:
        print(f"mpimatrix modules spack: no build of {lock} has its modules; write them "
              f"with `{REFRESH}` in the environment", file=sys.stderr)
        return 1
    try:
        atomic_write(out, f"# the builds of {lock} as the Lmod modules Spack wrote for them "
                     "(mpimatrix modules spack)\n" + yaml.safe_dump(
                         {"builds": tree.entries}, sort_keys=False))
    except OSError as err:
        print(f"mpimatrix modules spack: cannot write {out}: {err.strerror}; give a file "
              "you can write", file=sys.stderr)
        return 2
    for e in tree.entries:
        loads = [*e.get("needs", []), e["module"], *e["benchmarks"]]
        print(f"  {e['name']}: module load {' '.join(loads)}")
    print(f"wrote {out}: {len(tree.entries)} build(s) of {lock} through their modules")
    print(f"  module use {' '.join(tree.module_paths)}")
    print(f"  MPIMATRIX_BUILDS={out} mpimatrix run   # through module load")
    return 0


def register(sub) -> None:
    s = sub.add_parser("modules", help="Lmod modulefiles for the MPIs found on this machine")
    ms = s.add_subparsers(dest="modules_cmd", required=True)
    w = ms.add_parser("write", help="write a modulefile per discovered MPI (Debian, PyPI) "
                      "and a builds file naming them")
    w.add_argument("root", help="the module tree's folder (then `module use` it)")
    w.set_defaults(func=cmd_modules_write)
    sp = ms.add_parser("spack", help="a builds file naming the Lmod modules Spack wrote "
                       f"for the lock's builds (after `{REFRESH}`)")
    sp.add_argument("output", help="the builds file to write (then MPIMATRIX_BUILDS=it)")
    sp.add_argument("--lock", help="the Spack lock (default: the active environment's, or "
                    "MPIMATRIX_LOCK)")
    sp.set_defaults(func=cmd_modules_spack)
