"""Every check in reframe_checks/ keeps the checks' contract (rfm/build_check.py,
docs/develop.md): it composes BuildCheck, leaves none of its contract methods
(parse_output, results_complete; metric_value for a catalogue check) undefined, has a
sanity function, names its hooks for what they do, and sets `ref_key` (and `bench`
for a catalogue check) by the end of the init phase, in every variant.

The checks are instantiated in a subprocess, under ReFrame's builtin generic system:
instantiating needs a ReFrame runtime, which must not leak into other tests (the
placements of a session depend on it). About a second."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKS = sorted((ROOT / "reframe_checks").glob("*.py"))

PROBE = r"""
import importlib.util, json, sys
import reframe as rfm
from reframe.core import config, runtime

cfg = config.load_config()
cfg.select_subconfig("generic")
runtime.init_runtime(cfg)

from mpimatrix.rfm.build_check import BuildCheck
from mpimatrix.rfm.perf import CataloguePerformance
from mpimatrix.rfm.output import undefined_contract_methods

out = {}
for path in sys.argv[1:]:
    name = "contract_" + path.rsplit("/", 1)[-1][:-3]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    for cname, cls in vars(mod).items():
        if not (isinstance(cls, type) and issubclass(cls, rfm.RegressionTest)
                and cls.__module__ == name):
            continue
        rec = out[cname] = {
            "file": path, "build_check": issubclass(cls, BuildCheck),
            "catalogue": issubclass(cls, CataloguePerformance),
            "abstract": undefined_contract_methods(cls),
            "sanity": hasattr(cls, "_rfm_sanity"),
            "own_hooks": sorted(h.__name__ for h in cls._rfm_local_hook_registry),
            "variants": []}
        if rec["abstract"]:
            continue
        for i in range(cls.num_variants):
            test = cls(variant_num=i)
            case = {"name": test.display_name}
            for var in ("ref_key", "bench"):
                try:
                    case[var] = str(getattr(test, var))
                except AttributeError as err:
                    case[var] = f"<{err}>"
            rec["variants"].append(case)

class Forgetful(rfm.RunOnlyRegressionTest, BuildCheck):
    ref_key = "x@intranode"
try:
    Forgetful(variant_num=0)
    out["<forgetful>"] = ""
except Exception as err:  # the post-init hook's TypeError, as ReFrame passes it on
    out["<forgetful>"] = str(err)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def checks(tmp_path_factory):
    probe = tmp_path_factory.mktemp("contract") / "probe.py"  # ReFrame reads a check's file
    probe.write_text(PROBE)
    proc = subprocess.run([sys.executable, str(probe), *map(str, CHECKS)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_check_file_has_a_check(checks):
    files = {c["file"] for name, c in checks.items() if not name.startswith("<")}
    assert files == {str(p) for p in CHECKS}


def test_checks_compose_build_check_and_define_what_it_leaves_abstract(checks):
    for name, c in checks.items():
        if name.startswith("<"):
            continue
        assert c["build_check"], f"{name} does not derive from BuildCheck"
        assert not c["abstract"], f"{name} does not define {c['abstract']}"
        assert c["sanity"], f"{name} has no @sanity_function"
        private = [h for h in c["own_hooks"] if h.startswith("_")]
        assert not private, f"{name}: name hooks for what they do, not {private}"


def test_every_variant_sets_its_keys_at_init(checks):
    for name, c in checks.items():
        if name.startswith("<"):
            continue
        assert c["variants"], name
        for case in c["variants"]:
            assert case["ref_key"] and not case["ref_key"].startswith("<"), case
            if c["catalogue"]:
                assert not case["bench"].startswith("<"), case
            else:
                assert "has not been set" in case["bench"] or "no attribute" in case["bench"]


def test_a_check_without_its_output_methods_cannot_be_instantiated(checks):
    msg = checks["<forgetful>"]
    assert "does not define" in msg and "parse_output" in msg and "results_complete" in msg, msg
