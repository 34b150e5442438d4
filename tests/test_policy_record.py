"""The gate's settings travel with the references: `mpimatrix bless --vary` writes the
policy it blessed with (`$policy`) beside the tolerances it computed with it, and the
gate loads that policy with the references (a field an older bless did not write keeps
its default)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import yaml
from helpers import FIXTURES

from mpimatrix.results.policy import DEFAULT_POLICY, POLICY_KEY, REMOVED, from_record
from mpimatrix.results.reference_set import ReferenceSet

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
BLESS = [FIXTURES / "sessions" / f"imb-quick-bless-{i}.json" for i in (1, 2, 3)]


def bless(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([MPIMATRIX, "bless", "--include-disturbed", "--output",
                           str(tmp_path / "refs.yaml"), *extra,
                           *[a for r in BLESS for a in ("--report", str(r))]],
                          env={**os.environ, "MPIMATRIX_RESULTS": str(tmp_path)},
                          capture_output=True, text=True)


def test_bless_vary_writes_its_policy_and_the_gate_judges_with_it(tmp_path):
    proc = bless(tmp_path, "--vary", "build_floor=0.08,build_sigmas=3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("  gate settings other than the defaults: build_floor=0.08,"
            "build_sigmas=3.0") in proc.stdout.splitlines(), proc.stdout
    stats = yaml.safe_load((tmp_path / "refs.stats.yaml").read_text())
    assert stats[POLICY_KEY]["build_floor"] == 0.08
    assert stats[POLICY_KEY]["build_sigmas"] == 3.0
    loaded = ReferenceSet.load(tmp_path / "refs.yaml")
    assert loaded.policy.build_floor == 0.08 and loaded.policy.build_sigmas == 3.0
    assert loaded.policy.k_sigma == DEFAULT_POLICY.k_sigma
    # a policy given to the loader is the one used
    assert ReferenceSet.load(tmp_path / "refs.yaml", DEFAULT_POLICY).policy == DEFAULT_POLICY
    # bless again (a nightly `bless --since 7d`): the file's settings stay; --vary changes
    # one of them; --replace starts from the defaults
    assert bless(tmp_path).returncode == 0
    assert ReferenceSet.load(tmp_path / "refs.yaml").policy == loaded.policy
    assert bless(tmp_path, "--vary", "build_floor=0.1").returncode == 0
    again = ReferenceSet.load(tmp_path / "refs.yaml").policy
    assert again.build_floor == 0.1 and again.build_sigmas == 3.0
    proc = bless(tmp_path, "--replace")
    assert proc.returncode == 0 and "gate settings" not in proc.stdout
    assert ReferenceSet.load(tmp_path / "refs.yaml").policy == DEFAULT_POLICY


def test_bless_vary_with_an_unknown_field_or_value_is_an_argument_error(tmp_path):
    proc = bless(tmp_path, "--vary", "build_flor=0.1")
    assert proc.returncode == 2
    assert "--vary 'build_flor=0.1': not FIELD=VALUE with a GatePolicy field (" in proc.stderr
    assert "build_floor" in proc.stderr and "Traceback" not in proc.stderr
    proc = bless(tmp_path, "--vary", "min_builds=three")
    assert proc.returncode == 2 and "'three' is not an int" in proc.stderr
    # a field an earlier policy had: what it became, and the fields there are
    proc = bless(tmp_path, "--vary", "build_against_others=0")
    assert proc.returncode == 2
    assert ("--vary 'build_against_others=0': build_against_others is no longer a "
            "GatePolicy field (each whole build is judged against the median of the other "
            "builds' levels); the fields: ") in proc.stderr, proc.stderr
    assert "build_floor" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "refs.yaml").exists()


def test_a_policy_record_from_an_older_or_edited_file_keeps_the_defaults_it_lacks():
    assert from_record(None) == DEFAULT_POLICY and from_record("x") == DEFAULT_POLICY
    older = {k: v for k, v in DEFAULT_POLICY.record().items() if not k.startswith("build_")}
    assert from_record({**older, "value_floor": 0.2}).value_floor == 0.2
    assert from_record(older).build_floor == DEFAULT_POLICY.build_floor
    edited = from_record({"build_floor": "low", "min_builds": 4, "k_sigma": 3,
                          "unknown": 1, "build_sigmas": "no"})
    assert edited.build_floor == DEFAULT_POLICY.build_floor  # not a number: the default
    assert edited.min_builds == 4 and edited.k_sigma == 3.0
    assert edited.build_sigmas == DEFAULT_POLICY.build_sigmas


def test_a_policy_record_with_the_fields_bless_no_longer_writes_reads_without_them():
    """A statistics file blessed before the whole-build modes left GatePolicy: its
    `$policy` keeps them; they are ignored (their one behaviour is the gate's), the
    fields it shares are read."""
    older = {**DEFAULT_POLICY.record(), "build_floor": 0.15, "build_sigmas": 4.0,
             "host_every_value": False, "build_below_references": False,
             "build_against_others": False, "build_spread_pooled": False,
             "build_confirm_pooled": False}
    policy = from_record(older)
    assert policy == replace(DEFAULT_POLICY, build_floor=0.15, build_sigmas=4.0)
    assert set(older) - set(policy.record()) == set(REMOVED)
