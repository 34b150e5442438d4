"""The Spack matrix as Lmod modules: a builds file naming, for each installed row of a
Spack lock, the modules Spack wrote for its MPI and for the OSU and IMB built on it
(`spack module lmod refresh`, with the environment's `modules:` configuration: one
hierarchy, compiler then MPI). Each build is then what a user gets with `module load`
(builds/lmod.py resolves the entries), and keeps its Spack hash and lock for what
changed.

Spack names the modules (its `spack.modules.get_module`, the API behind `spack module
lmod find`), asked once for every hash in one `spack python <script>` (`spack python -c`
reads one statement): the names follow the site's projections and hierarchy, whatever
they are.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..families import FAMILIES
from ..record import BuildRecord, Skipped
from .installed import spack_env_args
from .lock_builds import PREFIX_VARIABLES

#: the answer's line in `spack python`'s output (Spack may print warnings around it)
MARK = "@@mpimatrix-modules "
#: prints {hash: {use, path, compiler: {use, path}} | {error}} for the hashes it is given
SCRIPT = r"""
import json
import sys

import spack.modules
import spack.store
from spack.modules.common import ModuleNotFoundError


def names(spec):
    try:
        return {"use": spack.modules.get_module("lmod", spec, False, required=False),
                "path": spack.modules.get_module("lmod", spec, True, required=False)}
    except ModuleNotFoundError as err:
        return {"error": str(err)}


out = {}
for h in sys.argv[1:]:
    found = spack.store.STORE.db.get_by_hash(h) or []
    if not found:
        out[h] = {"error": "not installed"}
        continue
    entry = names(found[0])
    compilers = found[0].dependencies(virtuals=("c",))
    if compilers:
        entry["compiler"] = names(compilers[0])
    out[h] = entry
print(MARK + json.dumps(out))
"""
REFRESH = "spack module lmod refresh -y"


@dataclass
class ModuleTree:
    entries: list[dict]  # builds file entries ({module, benchmarks, needs, name, ...})
    skipped: list[Skipped] = field(default_factory=list)
    module_paths: list[str] = field(default_factory=list)  # what to `module use`


class ModuleTreeError(Exception):
    """Spack could not be asked; the message says how to fix it."""


def module_names(spack: str, lock_path: Path, hashes: list[str]) -> dict[str, dict]:
    """Spack's Lmod module (use-name and file) of each installed hash, with its compiler's."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "module_names.py"
        script.write_text(f"MARK = {MARK!r}\n{SCRIPT}")
        cmd = [spack, *spack_env_args(lock_path), "python", str(script), *sorted(set(hashes))]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise ModuleTreeError(f"`spack python` failed: {err}") from None
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)), None)
    if proc.returncode != 0 or line is None:
        said = " ".join((proc.stderr or proc.stdout).split())[-600:]
        raise ModuleTreeError(f"asking Spack ({' '.join(cmd[:4])} python) for the modules "
                              f"failed, rc {proc.returncode}: {said}")
    return json.loads(line[len(MARK):])


def _modulepath(answer: dict) -> str:
    """The folder to `module use` for a module: its file less its use-name."""
    return str(Path(answer["path"]).parents[len(Path(answer["use"]).parts) - 1])


def module_tree(builds: list[BuildRecord], names: dict[str, dict]) -> ModuleTree:
    """The builds file entries for `builds` (records from the lock) given Spack's answers.
    A build whose MPI or benchmarks have no module file is skipped, saying so."""
    tree = ModuleTree([])
    for b in builds:
        if b.unusable:
            tree.skipped.append(Skipped(b.name, b.unusable))
            continue
        mpi = names.get(b.dag_hash) or {"error": "not asked"}
        benches = {s: names.get(i.spec_hash) or {"error": "not asked"}
                   for s, i in sorted(b.benchmarks.items(), reverse=True) if i.spec_hash}
        missing = [a["error"] for a in (mpi, *benches.values()) if a.get("error")]
        missing += [f"{what} is excluded from the modules (modules: ... exclude)"
                    for what, a in (("its MPI", mpi), *benches.items())
                    if not a.get("error") and not a.get("use")]
        if missing or not benches:
            why = "; ".join(missing) or "no OSU or IMB of its own in the lock"
            if missing:
                why += f" (write them: `{REFRESH}`)"
            tree.skipped.append(Skipped(b.name, why))
            continue
        entry: dict = {"name": b.name, "module": mpi["use"],
                       "benchmarks": [a["use"] for a in benches.values()]}
        compiler = mpi.get("compiler") or {}
        # under a hierarchy the MPI of a non-core compiler appears once the compiler's
        # module is loaded (Spack writes core compilers' builds into Core/)
        first = mpi
        if "Core" not in Path(mpi["path"]).parts and compiler.get("use"):
            entry["needs"], first = [compiler["use"]], compiler
        # what the lock knows and a module cannot say: fabric, PMI (srun's --mpi), the
        # lock's variables beyond the family's own and the paths the module sets
        extra = {k: v for k, v in b.env.items() if k not in FAMILIES[b.family].env
                 and k not in PREFIX_VARIABLES}
        entry.update({k: v for k, v in (("fabric", b.fabric), ("pmi", b.pmi), ("env", extra),
                                        ("spec", b.spec), ("dag_hash", b.dag_hash),
                                        ("lock_sha256", b.lock_sha256)) if v})
        tree.entries.append(entry)
        where = _modulepath(first)
        if where not in tree.module_paths:
            tree.module_paths.append(where)
    return tree
