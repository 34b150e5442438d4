"""`mpimatrix spack ...`: locate, shims, mirror-add (no Spack needed)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess

import pytest
import yaml

from mpimatrix import cli
from mpimatrix.builds.spack import site_overlay
from mpimatrix.builds.spack import tool as spack_tool


def _site(tmp_path, shims: dict):
    d = tmp_path / "site_config" / "spack" / "demo"
    d.mkdir(parents=True)
    (d / "shims.yaml").write_text(yaml.safe_dump({"shims": shims}))
    return d


def test_shims_links_and_generated_externals(tmp_path):
    usr = tmp_path / "usr"
    (usr / "bin").mkdir(parents=True)
    for f in ("mpicc.demo", "mpiexec.demo", "helper"):
        (usr / "bin" / f).write_text("#!/bin/sh\n")
    (usr / "include").mkdir()
    _site(tmp_path, {
        "demo-1.0": {
            "package": "mpich", "spec": "mpich@1.0 device=ch4",
            "requires": [str(usr / "bin" / "mpicc.demo")],
            "links": {"bin/*": f"{usr}/bin/*.demo", "bin/helper": f"{usr}/bin/helper",
                      "include": f"{usr}/include", "lib/libmpi.so": f"{usr}/missing.so"},
        },
        "absent-2.0": {"package": "openmpi", "spec": "openmpi@2.0",
                       "requires": [str(usr / "bin" / "nope")], "links": {}},
    })
    log = []

    class Out:
        def write(self, s):
            log.append(s)

    scope, skipped = site_overlay.write_shims("demo", root=tmp_path, out=Out())
    prefix = tmp_path / ".cache" / "spack" / "shims" / "demo-1.0"
    assert os.readlink(prefix / "bin" / "mpicc") == f"{usr}/bin/mpicc.demo"
    assert os.readlink(prefix / "bin" / "mpiexec") == f"{usr}/bin/mpiexec.demo"
    assert (prefix / "bin" / "helper").exists() and (prefix / "include").is_symlink()
    assert any("dangling" in s and "libmpi.so" in s for s in log)
    assert skipped and skipped[0].startswith("absent-2.0")
    gen = yaml.safe_load((scope / "packages.yaml").read_text())["packages"]
    assert gen == {"mpich": {"externals": [{"spec": "mpich@1.0 device=ch4",
                                            "prefix": str(prefix)}]}}
    assert scope == tmp_path / ".cache" / "spack" / "demo"
    # idempotent: a second run rebuilds the same tree
    site_overlay.write_shims("demo", root=tmp_path, out=Out())
    assert os.readlink(prefix / "bin" / "mpicc") == f"{usr}/bin/mpicc.demo"


def test_shims_unknown_site_says_which_exist(tmp_path):
    _site(tmp_path, {})
    try:
        site_overlay.write_shims("nosuch", root=tmp_path)
    except site_overlay.ShimError as err:
        assert "nosuch" in str(err) and "demo" in str(err)
    else:
        raise AssertionError("expected ShimError")


def test_mirror_add_uses_spack_layout(tmp_path, capsys):
    src = tmp_path / "pkg-1.0.tar.gz"
    src.write_bytes(b"not really a tarball")
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    mirror = tmp_path / "mirror"
    rc = cli.main(["spack", "mirror-add", str(src), "--sha256", sha, "--mirror", str(mirror)])
    assert rc == 0
    dest = mirror / "_source-cache" / "archive" / sha[:2] / f"{sha}.tar.gz"
    assert dest.read_bytes() == src.read_bytes()
    assert capsys.readouterr().out.strip() == str(dest)
    rc = cli.main(["spack", "mirror-add", str(src), "--sha256", "0" * 64,
                   "--mirror", str(mirror)])
    assert rc == 1 and "not the expected" in capsys.readouterr().err


def test_locate_without_spack_says_how_to_get_it(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("SPACK_ROOT", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert cli.main(["spack", "locate"]) == 1
    err = capsys.readouterr().err
    assert f"--branch v{spack_tool.SPACK_VERSION}" in err
    assert spack_tool.PACKAGES_TAG in err


def test_locate_finds_spack_root(monkeypatch, tmp_path, capsys):
    root = tmp_path / "spack"
    (root / "bin").mkdir(parents=True)
    exe = root / "bin" / "spack"
    exe.write_text(f"#!/bin/sh\necho '{spack_tool.SPACK_VERSION} ({spack_tool.SPACK_COMMIT})'\n")
    exe.chmod(0o755)
    monkeypatch.setenv("SPACK_ROOT", str(root))
    monkeypatch.setenv("MPIMATRIX_SPACK_SITE", "debian-local")
    assert spack_tool.find_spack() == str(exe)
    assert cli.main(["spack", "locate"]) == 0
    out = capsys.readouterr().out
    assert spack_tool.SPACK_COMMIT in out and "debian-local" in out


def _tagged_repo(path, tag):
    """A git repository with one commit tagged `tag`, as the upstream ones are."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    path.mkdir()
    (path / "README").write_text(tag)
    for cmd in (["init", "-q"], ["add", "README"], ["commit", "-qm", tag], ["tag", tag]):
        subprocess.run(["git", "-C", str(path), *cmd], check=True, env=env)
    return f"file://{path}"


def test_get_clones_the_pinned_tags_when_no_spack(monkeypatch, tmp_path, capsys):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    monkeypatch.setenv("MPIMATRIX_SPACK_GIT",
                       _tagged_repo(tmp_path / "up-spack", f"v{spack_tool.SPACK_VERSION}"))
    monkeypatch.setenv("MPIMATRIX_PACKAGES_GIT",
                       _tagged_repo(tmp_path / "up-packages", spack_tool.PACKAGES_TAG))
    monkeypatch.delenv("SPACK_ROOT", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path / 'nothing'}:/usr/bin:/bin")
    dest = tmp_path / "site" / "spack"
    assert cli.main(["spack", "get", "--dest", str(dest)]) == 0
    assert (dest / "README").read_text() == f"v{spack_tool.SPACK_VERSION}"
    assert (tmp_path / "site" / "spack-packages" / "README").read_text() == spack_tool.PACKAGES_TAG
    assert f"{dest}/share/spack/setup-env.sh" in capsys.readouterr().out
    # With Spack present nothing is cloned.
    monkeypatch.setenv("SPACK_ROOT", str(dest))
    (dest / "bin").mkdir()
    (dest / "bin" / "spack").write_text("#!/bin/sh\n")
    (dest / "bin" / "spack").chmod(0o755)
    assert cli.main(["spack", "get", "--dest", str(tmp_path / "other")]) == 0
    assert "already here" in capsys.readouterr().out
    assert not (tmp_path / "other").exists()
