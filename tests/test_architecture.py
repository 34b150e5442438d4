"""The package's layers: imports only go down, no module imports itself round a loop,
and no code sets another module's globals (settings are passed, as the gate's
GatePolicy is). The README's "What is where" shows the same layers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mpimatrix"

#: Rank of each top-level module or subpackage: a module may import from a lower
#: rank, or from its own subpackage.
LAYERS = {
    "__init__": 0, "paths": 0, "units": 0, "shell": 0, "atomic": 0, "placement": 0,
    "strict_yaml": 0, "urls": 0,
    "builds": 1, "suites": 1,
    "site_settings": 1,  # site_config/site.yaml (paths, strict_yaml)
    "reference_file": 1,  # keeps large files' parse in the cache folder (paths, atomic)
    "vcluster": 2,
    "rfm": 3, "results": 3,
    "site": 4,
    "run": 5,
    "validation": 6,  # experiments on top of runs and the store
    "cli": 7,
}
ROOT = SRC.parents[1]


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """The mpimatrix modules a file imports (relative imports resolved)."""
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("mpimatrix")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                mod = ".".join([*base, *([node.module] if node.module else [])])
            else:
                mod = node.module or ""
            if mod.startswith("mpimatrix"):
                out.add(mod)
                out |= {f"{mod}.{a.name}" for a in node.names}
    return out


MODULES = {module_name(p): p for p in SRC.rglob("*.py")}


def unit(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_module_has_a_layer():
    assert {unit(m) for m in MODULES} <= set(LAYERS), set(map(unit, MODULES)) - set(LAYERS)


@pytest.mark.parametrize("mod", sorted(MODULES))
def test_imports_only_go_down(mod):
    mine = unit(mod)
    for target in imports_of(MODULES[mod]):
        if target not in MODULES:
            continue  # a name imported from a module (checked through the module)
        theirs = unit(target)
        assert theirs == mine or LAYERS[theirs] < LAYERS[mine], (
            f"{mod} ({mine}, layer {LAYERS[mine]}) imports {target} ({theirs}, layer "
            f"{LAYERS[theirs]})")


def test_no_import_loops():
    graph = {m: {t for t in imports_of(p) if t in MODULES and t != m}
             for m, p in MODULES.items()}
    # a package's __init__ importing its own modules is not a loop through them
    for m in graph:
        graph[m] = {t for t in graph[m] if not (MODULES[t].name == "__init__.py"
                                                 and m.startswith(t + "."))}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        if state.get(m) == 2:
            return
        assert state.get(m) != 1, "import loop: " + " -> ".join([*path, m])
        state[m] = 1
        for t in sorted(graph[m]):
            visit(t, [*path, m])
        state[m] = 2

    for m in sorted(graph):
        visit(m, [])


def module_aliases(tree: ast.AST) -> set[str]:
    """Names a file binds to mpimatrix modules (import mpimatrix.x as y; from . import y)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names
                    if a.name.startswith("mpimatrix")}
        elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "")
                                                    .startswith("mpimatrix")):
            out |= {a.asname or a.name for a in node.names
                    if not a.name[:1].isupper() and a.name != "*"}
    return out


def foreign_global_writes(path: Path) -> list[str]:
    """Assignments to an attribute of an imported mpimatrix module (module.NAME = ...)."""
    tree = ast.parse(path.read_text())
    aliases = module_aliases(tree)
    out = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        for t in targets:
            base = t
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(t, ast.Attribute) and isinstance(base, ast.Name) \
                    and base.id in aliases:
                out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(t)} = ...")
    return out


#: The measuring scripts (and their helper modules) beside the package.
MEASURE = sorted((ROOT / "measure").glob("*.py"))
SCRIPTS = [*MODULES.values(), *MEASURE]


def test_the_measuring_scripts_are_found():
    assert len(MEASURE) > 10, MEASURE


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_code_sets_another_modules_globals(path):
    """The gate replay once switched host judging off with `host.MIN_BUILDS = 10**6`:
    settings travel as arguments (results.policy.GatePolicy), not as patched globals."""
    assert foreign_global_writes(path) == []


def test_the_raw_record_is_read_only_in_measurements():
    """A test case's ReFrame record (`Case.tc`) is read in results/measurements.py only:
    everything else reads the typed properties of Case (same values, one spelling)."""
    own = SRC / "results" / "measurements.py"
    offenders = [f"{path.relative_to(ROOT)}:{node.lineno}"
                 for path in sorted(SRC.rglob("*.py")) if path != own
                 for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Attribute) and node.attr == "tc"]
    assert offenders == [], "reads of the raw record outside measurements.py: " \
        + ", ".join(offenders)


def test_a_share_is_spelled_in_one_place():
    """Whether a value is a share (a percentage, judged in points) is `units.is_share`:
    no comparison of a unit with "%" elsewhere."""
    own = SRC / "units.py"
    offenders = [f"{path.relative_to(ROOT)}:{node.lineno}"
                 for path in sorted(SRC.rglob("*.py")) if path != own
                 for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Compare)
                 and any(isinstance(c, ast.Constant) and c.value == "%"
                         for c in [node.left, *node.comparators])]
    assert offenders == [], "units compared with '%' outside units.py: " + ", ".join(offenders)


#: The largest module: past it, a module holds more than one concern.
MAX_LINES = 350


def test_no_module_is_over_the_size_limit():
    big = {str(p.relative_to(ROOT)): n for p in SCRIPTS
           if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, f"modules and measuring scripts over {MAX_LINES} lines: {big}"


#: What measure/ may import of the package: its interface for them, and the top-level
#: helpers every layer uses.
MEASURE_IMPORTS = {"mpimatrix.validation.api", "mpimatrix.paths", "mpimatrix.units",
                   "mpimatrix.placement", "mpimatrix.shell"}


@pytest.mark.parametrize("path", MEASURE, ids=lambda p: str(p.relative_to(ROOT)))
def test_measuring_scripts_use_the_package_through_its_interface(path):
    """measure/*.py import mpimatrix names from validation/api.py only (and the top-level
    helpers), never the modules behind it nor the command line: what they lean on is one
    list, which the package keeps working."""
    from mpimatrix.validation.api import NAMES

    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules |= {a.name for a in node.names if a.name.startswith("mpimatrix")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mpimatrix"):
            modules.add(node.module)
            if node.module == "mpimatrix.validation.api":
                unknown = {a.name for a in node.names} - set(NAMES)
                assert not unknown, f"{path.name} imports {unknown}, not in validation/api.py"
    assert modules <= MEASURE_IMPORTS, f"{path.name} imports {modules - MEASURE_IMPORTS}"


def test_the_interface_of_measure_only_reaches_down():
    """Each name validation/api.py offers comes from a module validation may import (no
    command line), and resolves."""
    from mpimatrix.validation import api

    for name, (module, _) in api.NAMES.items():
        assert LAYERS[module.split(".")[0]] <= LAYERS["validation"], (name, module)
        assert f"mpimatrix.{module}" in MODULES, (name, module)
        getattr(api, name)
