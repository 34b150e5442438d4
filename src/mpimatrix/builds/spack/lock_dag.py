"""A build's dependency graph in a Spack lock, as facts that can be compared between
two locks: for every node reachable from the build's MPI and benchmark nodes (build
dependencies too: a new compiler or cmake makes a different binary), its version,
variants and flags, compiler, external prefix and recipe hash.

The DAG hash of a node changes when anything below it changes; the facts do not, so
comparing facts names the node where a change is, not every node above it."""

from __future__ import annotations

from .lockfile import Lock, Node
from .spec_naming import compiler_of, compiler_spec


def node_facts(lock: Lock, node: Node) -> dict[str, str]:
    """{fact: text} of one node, each fact one line of a difference."""
    facts = {"version": node.version}
    for name, value in sorted(node.params.items()):
        if name in ("patches",):
            continue
        text = " ".join(map(str, value)) if isinstance(value, list) else str(value)
        facts[name] = text
    if node.params.get("patches"):
        facts["patches"] = " ".join(str(p)[:7] for p in node.values("patches"))
    comp = compiler_of(lock, node)
    if comp is not None:
        facts["compiler"] = compiler_spec(comp)
    if node.is_external:
        facts["external"] = node.external_path
    facts["target"] = str((node.data.get("arch") or {}).get("target", ""))
    facts["recipe"] = str(node.data.get("package_hash", ""))[:12]
    facts["namespace"] = str(node.data.get("namespace", ""))
    return facts


BENCHMARK_PACKAGES = ("osu-micro-benchmarks", "intel-mpi-benchmarks", "npb")


def build_roots(lock: Lock, mpi_hash: str, compiler: str = "") -> list[str]:
    """The MPI node of a build and the benchmark nodes built on it (by `compiler`, when
    given: an external MPI serves one build per compiler), installed or not."""
    out = [mpi_hash] if mpi_hash in lock.nodes else []
    for node in lock.nodes.values():
        if node.name in BENCHMARK_PACKAGES and node.dep_providing("mpi") == mpi_hash and (
                not compiler or compiler_spec(compiler_of(lock, node)) == compiler):
            out.append(node.hash)
    return sorted(out)


def build_dag(lock: Lock, roots: list[str]) -> dict[str, list[dict[str, str]]]:
    """{package: [facts of each node of that name]} of every node reachable from the
    given node hashes (hashes missing from the lock are left out)."""
    seen: set[str] = set()
    todo = [h for h in roots if h in lock.nodes]
    out: dict[str, list[dict[str, str]]] = {}
    while todo:
        h = todo.pop()
        if h in seen:
            continue
        seen.add(h)
        node = lock.nodes[h]
        out.setdefault(node.name, []).append(node_facts(lock, node))
        todo += [d for d, _, _ in node.deps() if d in lock.nodes and d not in seen]
    return {k: sorted(v, key=lambda f: sorted(f.items())) for k, v in sorted(out.items())}
