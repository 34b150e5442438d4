"""`spack env activate .` then `reframe -r`: what activation sets up, and undoes.

Without Spack: the generated activation (env_vars with absolute paths, the
`reframe` on PATH) and what that `reframe` does with its arguments (the quick mode
unless --mode is given; -r runs `mpimatrix run`'s session; no lock: how to make one).

With Spack 1.x (`-m spack`; skipped, saying why, without): a copy of the environment
holding the committed lock fixture is activated by Spack's own shell support; the
variables are set, `reframe --list` from a scratch directory lists the project's
checks on the lock's builds (the Debian externals), and deactivation leaves the
shell's environment as it was.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import FIXTURES, ROOT
from test_spack_concretize import spack_requirements

from mpimatrix.builds.spack import activation, site_overlay
from mpimatrix.builds.spack import tool as spack_tool
from mpimatrix.cli import spack as spack_cli

BUNDLE_LOCK = FIXTURES / "spack" / "debian-local-bundle-v6.spack.lock"
SHIMS_WHEN_CONCRETIZED = "/work/wt-spack/.cache/spack/shims"


# -- no Spack needed -----------------------------------------------------------------------
def test_env_vars_point_reframe_at_the_project(tmp_path):
    ev = activation.env_vars(tmp_path, ROOT)
    assert set(ev["set"]) == set(activation.SET_VARS)
    assert set(ev["prepend_path"]) == set(activation.PREPEND_VARS) == {"PATH"}
    assert ev["set"]["MPIMATRIX_LOCK"] == str(tmp_path / "spack.lock")
    assert ev["set"]["RFM_CONFIG_FILES"] == str(ROOT / "site_config" / "reframe_config.py")
    assert ev["set"]["RFM_CHECK_SEARCH_PATH"] == str(ROOT / "reframe_checks")
    assert ev["set"]["RFM_REFERENCE_PREFIX"].endswith("results/references")
    assert ev["prepend_path"]["PATH"] == str(tmp_path / ".cache/spack/activate/bin")
    for v in (*ev["set"].values(), *ev["prepend_path"].values()):
        assert v == "true" or Path(v).is_absolute(), v  # Spack expands nothing there


def test_written_activation_is_a_spack_scope_and_reframe_on_path(tmp_path):
    out = activation.write_activation(tmp_path, ROOT, python=sys.executable)
    data = yaml.safe_load((out / "env_vars.yaml").read_text())
    assert data == {"env_vars": activation.env_vars(tmp_path, ROOT)}
    written = activation.activate_dir(tmp_path)
    assert (written / "env_vars.yaml").is_file()
    assert os.access(written / "bin" / "reframe", os.X_OK)
    shim = out / "bin" / "reframe"
    # No lock in this environment: the shim says how to make one, and runs nothing.
    env = dict(os.environ, MPIMATRIX_LOCK=str(tmp_path / "spack.lock"))
    env.pop("MPIMATRIX_BUILDS", None)
    proc = subprocess.run([str(shim), "-r"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert f"no Spack lock {tmp_path / 'spack.lock'}" in proc.stderr
    assert "spack concretize" in proc.stderr and "spack install" in proc.stderr


def test_spack_yaml_includes_the_activation():
    env = yaml.safe_load((ROOT / "spack.yaml").read_text())["spack"]
    paths = [i["path"] if isinstance(i, dict) else i for i in env["include"]]
    assert str(activation.ACTIVATE_DIR) in paths


@pytest.fixture
def calls(monkeypatch, tmp_path):
    seen = []
    lock = tmp_path / "spack.lock"
    lock.write_text("{}")
    monkeypatch.setenv("MPIMATRIX_LOCK", str(lock))
    monkeypatch.delenv("MPIMATRIX_BUILDS", raising=False)
    monkeypatch.setattr(os, "execv", lambda exe, argv: seen.append(("exec", argv[1:])))
    import mpimatrix.run.session as session
    monkeypatch.setattr(session, "run_session",
                        lambda mode, only, args: seen.append(("run", mode, args)) or 0)
    return seen


@pytest.mark.parametrize("argv, expected", [
    (["-r"], ("run", "quick", [])),
    (["-r", "--mode", "nightly"], ("run", "nightly", [])),
    (["--mode=nightly", "-n", "ImbCheck", "--run"], ("run", "nightly", ["-n", "ImbCheck"])),
    (["--list"], ("exec", ["--mode=quick", "--list"])),
    (["--mode", "full", "-L"], ("exec", ["--mode", "full", "-L"])),
    (["--help"], ("exec", ["--help"])),
])
def test_reframe_defaults_to_the_quick_mode(calls, argv, expected):
    spack_cli.reframe_main(argv)
    assert calls == [expected]


# -- with Spack ----------------------------------------------------------------------------
SCRIPT = """
. "$SETUP_ENV"
env | sort > "$OUT/before"
spack env activate "$ENV_DIR"
env | sort > "$OUT/during"
cd "$SCRATCH"
command -v reframe > "$OUT/which"
reframe {args} > "$OUT/stdout" 2> "$OUT/stderr"
echo $? > "$OUT/rc"
spack env deactivate
env | sort > "$OUT/after"
"""


def _activated(spack: str, env_dir: Path, out: Path, args: str) -> dict[str, str]:
    out.mkdir()
    scratch = out / "scratch"
    scratch.mkdir()
    env = dict(os.environ, SETUP_ENV=str(Path(spack).parents[1] / "share/spack/setup-env.sh"),
               ENV_DIR=str(env_dir), OUT=str(out), SCRATCH=str(scratch),
               MPIMATRIX_SPACK_SITE="debian-local", MPIMATRIX_RESULTS=str(out / "results"))
    for var in (*activation.SET_VARS, "SPACK_ENV", "MPIMATRIX_BUILDS"):
        env.pop(var, None)
    proc = subprocess.run(["bash", "-c", SCRIPT.format(args=args)], env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {f.name: f.read_text() for f in out.iterdir() if f.is_file()}


def _vars(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


@pytest.mark.spack
def test_activate_then_reframe_list_then_deactivate(tmp_path):
    spack = spack_requirements()
    site_overlay.write_shims("debian-local", out=open(os.devnull, "w"))
    env_dir = spack_tool.env_copy(tmp_path / "env")
    shims = str(ROOT / ".cache" / "spack" / "shims")
    (env_dir / "spack.lock").write_text(
        BUNDLE_LOCK.read_text().replace(SHIMS_WHEN_CONCRETIZED, shims))
    got = _activated(spack, env_dir, tmp_path / "out", "--list=T")

    during = _vars(got["during"])
    assert during["SPACK_ENV"] == str(env_dir)
    assert during["MPIMATRIX_LOCK"] == str(env_dir / "spack.lock")
    assert during["RFM_CONFIG_FILES"] == str(ROOT / "site_config" / "reframe_config.py")
    assert during["RFM_CHECK_SEARCH_PATH"] == str(ROOT / "reframe_checks")
    assert during["RFM_CHECK_SEARCH_RECURSIVE"] == "true"
    assert during["PATH"].startswith(str(env_dir / ".cache/spack/activate/bin") + ":")
    assert got["which"].strip() == str(env_dir / ".cache/spack/activate/bin/reframe")

    assert got["rc"].strip() == "0", got["stdout"][-2000:] + got["stderr"][-2000:]
    listing = got["stdout"]
    assert "--mode=quick --list=T" in listing  # the default selection: the quick mode
    assert f"settings files:    '<builtin>', '{ROOT}/site_config/reframe_config.py'" \
        in listing
    assert "- MpiPlacementCheck" in listing, listing[-3000:]
    # on the lock's installed builds: the Debian externals (their OSU/IMB are not built)
    for build in ("openmpi-4_1_4-ext-gcc12", "openmpi-4_1_4-ext-llvm14",
                  "mpich-4_0_2-ext-gcc12", "mpich-4_0_2-ext-llvm14"):
        assert f"+{build} " in listing, listing[-3000:]
    assert "skipped: not located" in got["stderr"] or "not installed" in got["stderr"]

    before, after = _vars(got["before"]), _vars(got["after"])
    for d in (before, after):
        d.pop("PWD", None)
        d.pop("OLDPWD", None)
    assert after == before


@pytest.mark.spack
def test_activated_without_a_lock_says_how_to_make_one(tmp_path):
    spack = spack_requirements()
    site_overlay.write_shims("debian-local", out=open(os.devnull, "w"))
    env_dir = spack_tool.env_copy(tmp_path / "env")
    got = _activated(spack, env_dir, tmp_path / "out", "-r")
    assert got["rc"].strip() == "1"
    assert f"no Spack lock {env_dir / 'spack.lock'}" in got["stderr"]
    assert "`spack concretize`" in got["stderr"]
