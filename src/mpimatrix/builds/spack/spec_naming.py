"""What a Spack lock's MPI nodes are: family, toolchain, fabric, PMI, spec text."""

from __future__ import annotations

import re

from ..families import FAMILIES
from .lockfile import Lock, Node

MPI_FAMILIES = {
    "openmpi": "openmpi",
    "hpcx-mpi": "openmpi",
    "mpich": "mpich",
    "cray-mpich": "mpich",
    "mvapich2": "mvapich2",
    "mvapich": "mvapich",
    "mvapich-plus": "mvapich",
    "intel-oneapi-mpi": "impi",
    "intel-mpi": "impi",
}
# Shorter names in build names.
NAME_OF_PACKAGE = {"intel-oneapi-mpi": "impi", "intel-mpi": "impi"}
COMPILER_TAGS = {"intel-oneapi-compilers": "oneapi",
                 "intel-oneapi-compilers-classic": "icc",
                 "llvm-amdgpu": "rocmcc"}

# PMI wire protocol per MPICH-family `pmi` variant value (MPICH's "default" and
# "pmi" are its simple PMI-1).
PMI_OF_VARIANT = {"default": "pmi1", "pmi": "pmi1", "pmi1": "pmi1", "pmi2": "pmi2",
                  "pmix": "pmix", "cray": "cray"}

_FLAG_KEYS = {"cflags", "cppflags", "cxxflags", "fflags", "ldflags", "ldlibs"}


# -- naming --------------------------------------------------------------------------------------
def compiler_of(lock: Lock, node: Node) -> Node | None:
    """The compiler node providing C (else C++, Fortran) to a node; None for externals."""
    for lang in ("c", "cxx", "fortran"):
        h = node.dep_providing(lang)
        if h:
            return lock.node(h)
    return None


def compiler_tag(comp: Node | None) -> str:
    if comp is None:
        return ""
    name = COMPILER_TAGS.get(comp.name, re.sub(r"[^A-Za-z0-9]", "", comp.name))
    return f"{name}{comp.version.split('.')[0]}"


def compiler_spec(comp: Node | None) -> str:
    return f"{comp.name}@{comp.version}" if comp else ""


def fabric_of(node: Node, family: str) -> tuple[str, list[str]]:
    """(fabric field of the record, tags for the build name)."""
    if family == "openmpi":
        fabrics = [f for f in node.values("fabrics") if f not in ("auto", "none")]
        tags = list(fabrics)
        if node.variant("pmi") is True:
            tags.append("pmi")
        return ",".join(node.values("fabrics")), tags
    if family in ("mpich", "mvapich"):
        device = str(node.variant("device", "") or "")
        netmod = str(node.variant("netmod", "") or "")
        if device == "ch3:sock":
            return device, ["ch3-sock"]
        if device.startswith("ch3"):
            return f"ch3:{netmod}", [f"ch3-{netmod}"]
        return (f"{device}:{netmod}" if device else netmod), ([netmod] if netmod else [])
    if family == "mvapich2":
        fabrics = node.values("fabrics")
        return ",".join(fabrics), fabrics
    if family == "impi":
        return "ofi", []
    return "", []


def pmi_of(node: Node, family: str) -> str:
    """The PMI wire protocol the MPI node speaks (pmix, pmi1, pmi2, cray)."""
    if family == "openmpi":
        # A Spack-built 4.x +pmi links Slurm's PMI-2; 5.x speaks PMIx only, and
        # Debian's 4.1.4 (an external) runs under --mpi=pmix.
        return "pmi2" if node.variant("pmi") is True and not node.is_external else "pmix"
    if family == "impi":
        return FAMILIES["impi"].pmi
    if family == "mvapich" and not node.is_external:
        return pmi_of_mvapich(node)[0]
    variant = "pmi_version" if family == "mvapich2" else "pmi"
    return PMI_OF_VARIANT.get(str(node.variant(variant, "default")), FAMILIES[family].pmi)


def pmi_of_mvapich(node: Node) -> tuple[str, str]:
    """(PMI wire, why) of a Spack-built MVAPICH (`mvapich`, 4.x: MPICH 4.3-based).

    Its recipe (spack-packages v2025.11.0) has no `pmi` variant: the PMI follows
    `process_managers`. `auto` (the default) and hydra/gforker/remshell add no
    --with-pmi, so MPICH 4.3's own PMI client is built, PMI-1 by default (MPICH >= 4.2
    builds the PMI-1 and PMI-2 client interfaces, PMI-1 the default), and Hydra's
    mpiexec. `slurm` configures --with-pm=none --with-pmi=slurm: Slurm's libpmi,
    no mpiexec at all; its requests go through Slurm's own library, not as PMI-1
    lines to the pmi2 plugin, so srun --mpi=pmi2 launches it directly.
    """
    pms = node.values("process_managers") or ["auto"]
    if "slurm" in pms:
        return "pmi2", ("MVAPICH process_managers=slurm: Slurm's PMI library, no mpiexec; "
                        "srun --mpi=pmi2")
    return "pmi1", (f"MVAPICH {node.version} (MPICH 4.3-based), process_managers="
                    f"{','.join(pms)}: MPICH's PMI-1 client and Hydra's mpiexec")


def spec_string(lock: Lock, node: Node) -> str:
    """The node's concrete spec, in Spack's syntax (variants, arch, compiler)."""
    parts = [f"{node.name}@{node.version}"]
    bools, keyed = [], []
    for k in sorted(node.params):
        v = node.params[k]
        if k in _FLAG_KEYS or k == "patches":
            if k in _FLAG_KEYS and v:
                keyed.append(f'{k}="{" ".join(map(str, v))}"')
            continue
        if isinstance(v, bool):
            bools.append(("+" if v else "~") + k)
        elif isinstance(v, list):
            keyed.append(f"{k}:={','.join(map(str, v))}" if len(v) > 1 else f"{k}={v[0]}"
                         if v else f"{k}=none")
        else:
            keyed.append(f"{k}={v}")
    parts[0] += "".join(bools)
    parts += keyed
    arch = node.data.get("arch") or {}
    target = arch.get("target")
    if isinstance(target, dict):
        target = target.get("name")
    if arch:
        parts.append(f"arch={arch.get('platform', '')}-{arch.get('platform_os', '')}-{target}")
    langs: dict[str, list[str]] = {}
    for h, _, virtuals in node.deps():
        vs = [v for v in virtuals if v in ("c", "cxx", "fortran")]
        if vs:
            dep = lock.node(h)
            langs.setdefault(f"{dep.name}@{dep.version}", []).extend(vs)
    for comp, vs in langs.items():
        parts.append(f"%{','.join(vs)}={comp}")
    return " ".join(parts)
