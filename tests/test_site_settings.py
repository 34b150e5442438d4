"""site_config/site.yaml: the site's settings recorded once (site_settings.py), what they
set, what the environment keeps, and each bad file refused with its name and the fix;
`mpimatrix site` over them; the results store refused where SQLite's locks cannot be
trusted (run/store_fs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpimatrix.paths import project_root
from mpimatrix.run.store_fs import StoreFileSystemError, check_store, fs_type, lock_problem
from mpimatrix.site_settings import EXAMPLE, SiteSettingsError, apply, load

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "site.yaml"
    path.write_text(text)
    return path


def test_the_example_loads_and_sets_what_it_names(tmp_path, monkeypatch):
    monkeypatch.setenv("USER", "alice")
    settings = load(project_root() / EXAMPLE)
    env = {"PATH": "/usr/bin"}
    applied = {s.variable: s for s in apply(settings, env)}
    assert env["MPIMATRIX_BUILDS"] == str(project_root() / "site_config" / "builds.yaml")
    assert env["MPIMATRIX_STORE"] == "/var/tmp/mpimatrix-alice/db"
    assert env["MODULEPATH"] == "/apps/modules/all"
    assert applied["MPIMATRIX_STORE"].origin == "file"
    assert settings.nightly.mode == "nightly" and settings.nightly.report_since == "14d"
    assert settings.nightly.args == () and settings.nightly.mail_to == ()


def test_the_environment_wins_and_spack_and_modules_are_prepended(tmp_path):
    path = write(tmp_path, "lock: /site/spack.lock\nspack_root: /apps/spack\n"
                 "modulepath: [/apps/mods, mods2]\nenvironment: {MPIMATRIX_KEEP_FULL: 30d}\n"
                 "nightly: {mode: quick, args: [--only, openmpi], mail_to: a@b.org}\n")
    env = {"MPIMATRIX_LOCK": "/mine/spack.lock", "PATH": "/usr/bin", "MODULEPATH": "/x"}
    applied = {s.variable: s for s in apply(load(path), env)}
    assert env["MPIMATRIX_LOCK"] == "/mine/spack.lock"
    assert applied["MPIMATRIX_LOCK"].origin == "environment"
    assert env["SPACK_ROOT"] == "/apps/spack" and env["PATH"] == "/apps/spack/bin:/usr/bin"
    assert env["MODULEPATH"] == f"/apps/mods:{project_root() / 'mods2'}:/x"
    assert env["MPIMATRIX_KEEP_FULL"] == "30d"
    nightly = load(path).nightly
    assert nightly.mode == "quick" and nightly.args == ("--only", "openmpi")
    assert nightly.mail_to == ("a@b.org",)


@pytest.mark.parametrize("text,words", [
    ("bulids: x.yaml\n", "unknown key(s) bulids"),
    ("store: [a, b]\n", "store: expected a path"),
    ("nightly: {mode: [a]}\n", "nightly.mode: expected a word"),
    ("nightly: {when: 2am}\n", "nightly: unknown key(s) when"),
    ("store: $MPIMATRIX_NO_SUCH_VARIABLE/db\n", "$MPIMATRIX_NO_SUCH_VARIABLE is not set"),
    ("environment: {1BAD: x}\n", "environment: '1BAD'"),
    ("- a\n- b\n", "expected a mapping of settings"),
    ("store: a\nstore: b\n", "store"),
])
def test_a_bad_settings_file_names_itself_and_the_fix(tmp_path, text, words):
    path = write(tmp_path, text)
    with pytest.raises(SiteSettingsError) as err:
        load(path)
    assert str(path) in str(err.value) and words in str(err.value)
    assert "site.yaml.example" in str(err.value)


def test_mpimatrix_site_shows_the_settings_and_refuses_a_bad_file(tmp_path):
    good = write(tmp_path, f"store: {tmp_path / 'db'}\nnightly: {{mode: quick}}\n")
    env = {**os.environ, "MPIMATRIX_SITE_FILE": str(good)}
    env.pop("MPIMATRIX_STORE", None)
    proc = subprocess.run([MPIMATRIX, "site"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"MPIMATRIX_STORE = {tmp_path / 'db'}" in proc.stdout
    assert f"store: {tmp_path / 'db'} on " in proc.stdout and "locks work" in proc.stdout
    assert "nightly: mode quick" in proc.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("stroe: /x\n")
    for cmd in (["site"], ["builds"], ["nightly", "--dry-run"]):
        proc = subprocess.run([MPIMATRIX, *cmd], capture_output=True, text=True,
                              env={**env, "MPIMATRIX_SITE_FILE": str(bad)})
        assert proc.returncode == 2 and f"{bad}: unknown key(s) stroe" in proc.stderr
        assert "Traceback" not in proc.stderr
    proc = subprocess.run([MPIMATRIX, "site"], capture_output=True, text=True,
                          env={**env, "MPIMATRIX_SITE_FILE": str(tmp_path / "none.yaml")})
    assert proc.returncode == 2 and "no such site settings file" in proc.stderr


# -- the store's file system ----------------------------------------------------------------
#: /proc/self/mountinfo lines of a login node (an NFS home, a Lustre scratch, a local /var)
MOUNTINFO = """\
22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:40 / /home rw,relatime shared:5 - nfs4 fs1:/export/home rw,vers=4.2
31 22 0:41 / /scratch rw,relatime shared:6 - lustre 10.0.0.1@o2ib:/scratch rw,flock
32 22 253:1 / /var/tmp rw,relatime shared:7 - xfs /dev/vdb rw
33 30 0:42 / /home/alice/my\\040dir rw,relatime shared:8 - tmpfs tmpfs rw
"""


@pytest.mark.parametrize("path,kind", [
    ("/home/alice/mpimatrix/results/db", "nfs4"),
    ("/scratch/alice/db", "lustre"),
    ("/var/tmp/mpimatrix-alice/db", "xfs"),
    ("/home/alice/my dir/db", "tmpfs"),
    ("/opt/x", "ext4"),
])
def test_the_file_system_of_a_path_is_that_of_its_longest_mount(path, kind):
    assert fs_type(Path(path), MOUNTINFO)[1] == kind


@pytest.mark.parametrize("path", ["/home/alice/mpimatrix/results/db", "/scratch/alice/db"])
def test_a_store_on_a_network_file_system_is_refused_naming_the_setting(path):
    with pytest.raises(StoreFileSystemError) as err:
        check_store(Path(path), MOUNTINFO)
    assert path in str(err.value) and "store: /var/tmp/mpimatrix-$USER" in str(err.value)
    assert "MPIMATRIX_STORE" in str(err.value)


def test_a_local_store_passes_and_its_locks_are_probed(tmp_path):
    assert lock_problem(tmp_path) == ""
    line = check_store(tmp_path / "db")
    assert str(tmp_path / "db") in line and "locks work" in line
    assert not list((tmp_path / "db").iterdir())  # the probe leaves nothing
