"""`mpimatrix spack ...`: locate, shims, mirror-add (no Spack needed)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import ROOT

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
    monkeypatch.setenv("MPIMATRIX_USER_CACHE", str(tmp_path / "cache"))  # no `spack get`
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
    monkeypatch.setenv("MPIMATRIX_USER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPACK_PYTHON", sys.executable)  # no clingo venv made here
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


def _kit_like(bare: Path, upstream: str) -> None:
    """A shallow-less bare clone whose refs live only in packed-refs and which has no
    refs/ directory, as the offline kit's repositories are."""
    subprocess.run(["git", "clone", "-q", "--bare", upstream, str(bare)], check=True)
    subprocess.run(["git", "-C", str(bare), "pack-refs", "--all"], check=True)
    shutil.rmtree(bare / "refs")


def _kit_with_repositories(tmp_path: Path) -> Path:
    """A kit folder holding Spack's and the packages' repositories as the kit packs them."""
    kit = tmp_path / "kit"
    (kit / "git").mkdir(parents=True)
    _kit_like(kit / "git" / "spack.git",
              _tagged_repo(tmp_path / "up-spack", f"v{spack_tool.SPACK_VERSION}"))
    _kit_like(kit / "git" / "spack-packages.git",
              _tagged_repo(tmp_path / "up-packages", spack_tool.PACKAGES_TAG))
    return kit


def test_get_from_a_kit_without_refs_dirs(monkeypatch, tmp_path, capsys):
    """git refuses the kit's bare repositories as they are; `get --kit` clones through a
    view of them, leaving the kit untouched, and prints the exports for eval."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    kit = _kit_with_repositories(tmp_path)
    plain = subprocess.run(["git", "clone", "-q", str(kit / "git" / "spack.git"),
                            str(tmp_path / "plain")], capture_output=True, text=True)
    assert plain.returncode != 0  # the trap itself
    before = sorted(p.name for p in (kit / "git" / "spack.git").iterdir())
    monkeypatch.delenv("SPACK_ROOT", raising=False)
    monkeypatch.setenv("MPIMATRIX_USER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPACK_PYTHON", sys.executable)
    monkeypatch.setenv("PATH", f"{tmp_path / 'nothing'}:/usr/bin:/bin")
    assert cli.main(["spack", "get", "--kit", str(kit), "--print-env"]) == 0
    dest = tmp_path / "cache" / "spack" / "spack"
    assert capsys.readouterr().out.splitlines() == [
        f"export SPACK_ROOT={dest}", f"export SPACK_PYTHON={sys.executable}"]
    assert (dest / "README").read_text() == f"v{spack_tool.SPACK_VERSION}"
    assert (dest.parent / "spack-packages" / "README").read_text() == spack_tool.PACKAGES_TAG
    assert sorted(p.name for p in (kit / "git" / "spack.git").iterdir()) == before


def test_kit_sources_go_into_the_mirror_and_wrong_ones_are_refused(tmp_path, monkeypatch):
    from mpimatrix.builds.spack import kit as kit_mod

    kit = tmp_path / "kit"
    sources = []
    for i, src in enumerate(kit_mod.KIT_SOURCES):
        f = kit / src.path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(f"archive {i}".encode())
        sources.append(kit_mod.KitSource(src.package, src.version, src.path,
                                         hashlib.sha256(f.read_bytes()).hexdigest()))
    monkeypatch.setattr(kit_mod, "KIT_SOURCES", tuple(sources))
    # a project with this one's site overlays (the site's externals come from them)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "site_config").symlink_to(ROOT / "site_config")
    lines = kit_mod.add_kit_sources(kit, root=tmp_path / "project", site="debian-local")
    mirror = tmp_path / "project" / ".cache" / "spack" / "mirror"
    for src in sources:
        ext = "tar.xz" if src.path.endswith(".xz") else "tar.gz"
        got = mirror / "_source-cache" / "archive" / src.sha256[:2] / f"{src.sha256}.{ext}"
        assert got.read_bytes() == (kit / src.path).read_bytes()
    scope = tmp_path / "project" / ".cache" / "spack" / "kit" / "packages.yaml"
    required = yaml.safe_load(scope.read_text())["packages"]
    assert required["osu-micro-benchmarks"] == {"require": "@=7.4-kit"}
    assert required["mvapich2"] == {"require": "@=2.3.7-1-kit"}
    # the kit's two Open MPI trees, or the site's own 4.1.4 (the Debian external)
    assert required["openmpi"] == {"require": [{"any_of": ["@=4.1.4-kit", "@=5.0.7-kit",
                                                           "@=4.1.4"]}]}
    assert required["mpich"] == {"require": [{"any_of": ["@=4.0.2-kit", "@=4.0.2"]}]}
    assert lines[-1] == f"wrote {scope}"
    (kit / sources[0].path).write_bytes(b"re-rolled")
    shutil.rmtree(mirror)
    with pytest.raises(kit_mod.KitError, match="re-copy it"):
        kit_mod.add_kit_sources(kit, root=tmp_path / "project")


def _shell_block(out: str, after: str) -> str:
    """The commands printed after the line `after`, as the user copies them."""
    lines = out.split(f"{after}\n", 1)[1].splitlines()
    return "\n".join(line[2:] for line in lines)


def _assert_kit_steps(block: str, kit: Path, mpimatrix: str) -> None:
    from mpimatrix.builds.spack.kit import KIT_ROWS

    proc = subprocess.run(["bash", "-n"], input=block, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr + block  # it is shell, continuations included
    assert mpimatrix != "mpimatrix" and mpimatrix.endswith("bin/mpimatrix")
    assert "export MPIMATRIX_SPACK_SITE=debian-local" in block
    install = block[block.index("spack install "):block.index("reframe -r")]
    for row in KIT_ROWS:  # the kit's rows, not the whole matrix
        assert f"'{row}'" in install, (row, install)
    assert install.split("#")[0].count("'") == 2 * len(KIT_ROWS)  # nothing else
    assert block.rstrip().splitlines()[-1].lstrip().startswith("reframe -r")
    for line in block.splitlines():  # no bare `mpimatrix` (not on PATH)
        assert not line.startswith("mpimatrix ") and " mpimatrix spack" not in line, line


def test_get_with_a_kit_prints_the_kit_steps_to_reframe(monkeypatch, tmp_path, capsys):
    """After `spack get --kit`: Spack in the shell, then setup --kit (by the path of
    this mpimatrix, not on PATH), activate, concretize, the kit's rows, reframe -r."""
    from mpimatrix.cli import spack as spack_cli

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    kit = _kit_with_repositories(tmp_path)
    for var in ("SPACK_ROOT", "MPIMATRIX_SPACK_SITE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MPIMATRIX_USER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPACK_PYTHON", sys.executable)
    monkeypatch.setenv("PATH", f"{tmp_path / 'nothing'}:/usr/bin:/bin")
    monkeypatch.chdir(ROOT)
    assert cli.main(["spack", "get", "--kit", str(kit)]) == 0
    out = capsys.readouterr().out
    mm = spack_cli.mpimatrix_cmd()
    dest = tmp_path / "cache" / "spack" / "spack"
    block = _shell_block(out, "Next:")
    assert block.splitlines()[:2] == [f"export SPACK_ROOT={dest}",
                                      f"export SPACK_PYTHON={sys.executable}"]
    assert block.splitlines()[2].startswith(f". {dest}/share/spack/setup-env.sh ")
    assert f"\n{mm} spack setup --kit {kit} " in block
    assert "\nspack env activate .\n" in block
    _assert_kit_steps(block, kit, mm)


def test_setup_prints_the_steps_of_its_kit_or_of_the_whole_matrix(monkeypatch, tmp_path,
                                                                   capsys):
    from mpimatrix.cli import spack as spack_cli

    root = tmp_path / "project"
    (root / "site_config" / "spack" / "debian-local").mkdir(parents=True)  # no shims
    monkeypatch.setenv("MPIMATRIX_HOME", str(root))
    monkeypatch.setenv("PATH", f"{tmp_path / 'nothing'}:/usr/bin:/bin")
    monkeypatch.delenv("MPIMATRIX_SPACK_SITE", raising=False)
    monkeypatch.chdir(root)
    kit = tmp_path / "kit"
    monkeypatch.setattr(spack_cli, "add_kit_sources", lambda k: [f"sources of {k}"])
    assert cli.main(["spack", "setup", "--kit", str(kit)]) == 0
    out = capsys.readouterr().out
    mm = spack_cli.mpimatrix_cmd()
    block = _shell_block(out, "Next (site debian-local):")
    assert block.splitlines()[0].startswith(
        f'eval "$({mm} spack get --kit {kit} --print-env)"; '
        '. "$SPACK_ROOT/share/spack/setup-env.sh"')
    _assert_kit_steps(block, kit, mm)
    assert "spack setup" not in block  # done
    # `reframe` in the environment without a lock names the kit's rows too
    assert spack_cli.kit_used() is False  # add_kit_sources was replaced: no kit scope
    (root / ".cache" / "spack" / "kit").mkdir(parents=True)
    (root / ".cache" / "spack" / "kit" / "packages.yaml").write_text("packages: {}\n")
    assert f"`{mm} spack kit-rows | xargs -d '\\n' spack install`" in spack_cli.no_lock_fix()

    # a connected site: no --kit anywhere, `spack install` of the whole matrix
    assert cli.main(["spack", "setup"]) == 0
    block = _shell_block(capsys.readouterr().out, "Next (site debian-local):")
    assert "--kit" not in block and "mpimatrix-benchmarks" not in block
    assert "\nspack install                            # the whole matrix" in block
    assert subprocess.run(["bash", "-n"], input=block, text=True).returncode == 0


def test_kit_rows_prints_one_row_a_line(capsys):
    from mpimatrix.builds.spack.kit import KIT_ROWS

    assert cli.main(["spack", "kit-rows"]) == 0
    assert capsys.readouterr().out.splitlines() == list(KIT_ROWS)


def test_mpimatrix_in_hints_is_the_name_on_path_or_the_running_one(monkeypatch, tmp_path):
    from mpimatrix.cli import spack as spack_cli

    exe = Path(sys.executable).absolute().parent / "mpimatrix"
    if not exe.is_file():
        pytest.skip(f"no {exe}: mpimatrix is not installed beside this Python")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.chdir(exe.parents[2])
    assert spack_cli.mpimatrix_cmd() == str(exe.relative_to(exe.parents[2]))  # .venv/bin/...
    monkeypatch.chdir(tmp_path)
    assert spack_cli.mpimatrix_cmd() == str(exe)
    monkeypatch.setenv("PATH", str(exe.parent))
    assert spack_cli.mpimatrix_cmd() == "mpimatrix"


def test_spack_python_takes_clingo_from_the_kits_wheels_with_no_index(tmp_path, monkeypatch):
    """The air-gapped path needs nothing from PyPI: `spack get --kit` makes the Python for
    Spack from the kit's wheels/ (a dead index proves pip never asked one)."""
    from helpers import offline_kit_or_skip

    wheels = offline_kit_or_skip() / "wheels"
    if not any(wheels.glob(f"clingo-{spack_tool.CLINGO_VERSION}-*.whl")):
        pytest.skip(f"the kit's wheels/ has no clingo {spack_tool.CLINGO_VERSION}")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    spack_dir = tmp_path / "spack"
    spack_dir.mkdir()
    python = spack_tool.ensure_spack_python(spack_dir, wheels)
    version = subprocess.run([str(python), "-c", "import clingo; print(clingo.__version__)"],
                             capture_output=True, text=True)
    assert version.stdout.strip() == spack_tool.CLINGO_VERSION, version.stderr
    assert spack_tool.offline_wheels(tmp_path) == []  # no wheels there: PyPI, as before
