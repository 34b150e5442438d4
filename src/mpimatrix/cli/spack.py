"""`mpimatrix spack ...`: get Spack, prepare a site overlay, fill a local mirror.

    mpimatrix spack locate            which Spack, is it the pinned one, is builtin pinned
    mpimatrix spack get [--kit DIR]   no Spack: clone the pinned release and packages
                                      (from an offline kit), Python with clingo
    mpimatrix spack setup [--site S] [--kit DIR]
                                      what `spack env activate .` needs: the activation
                                      (ReFrame variables, `reframe` on PATH) and the
                                      site's machine-local externals
    mpimatrix spack shims [--site S]  machine-local externals of a site overlay (Debian MPIs)
    mpimatrix spack kit-rows          the matrix rows an offline kit's sources serve, one a
                                      line (`| xargs -d '\\n' spack install`)
    mpimatrix spack mirror-add FILE   put a source tarball where a file:// mirror is read

Each prints its next steps as commands to copy: with --kit when a kit was used, the
kit's rows instead of the whole matrix, and this mpimatrix by a path that works
(`.venv/bin/mpimatrix` from the project root) when `mpimatrix` is not on PATH.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

from ..builds.checksum import file_sha256
from ..builds.sources import lock_path_from_env
from ..builds.spack.activation import write_activation
from ..builds.spack.kit import KIT_ROWS, KitError, add_kit_sources
from ..builds.spack.site_overlay import (
    ShimError,
    archive_ext,
    generated_dir,
    mirror_path,
    overlay_dir,
    write_shims,
)
from ..builds.spack.tool import (
    PACKAGES_TAG,
    SITE_ENV,
    SPACK_COMMIT,
    SPACK_VERSION,
    clone_pinned,
    default_spack_dir,
    ensure_spack_python,
    find_spack,
    get_spack_instructions,
    git_head,
    pin_report,
)
from ..paths import offline_kit, project_root


# -- the next steps each command prints ------------------------------------------------------
def mpimatrix_cmd() -> str:
    """This mpimatrix as a hint names it: `mpimatrix` when that is what PATH finds, else
    its path (relative when below the working directory: `.venv/bin/mpimatrix`)."""
    exe = Path(sys.executable).absolute().parent / "mpimatrix"
    if not exe.is_file():
        return "mpimatrix"
    on_path = shutil.which("mpimatrix")
    if on_path and Path(on_path).resolve() == exe.resolve():
        return "mpimatrix"
    return shlex.quote(_here(exe))


def _here(path: Path) -> str:
    """path relative to the working directory when below it ('.' for itself)."""
    try:
        return str(path.absolute().relative_to(Path.cwd())) or "."
    except ValueError:
        return str(path)


def kit_used(root: Path | None = None) -> bool:
    """Whether `spack setup --kit` wrote the kit scope in this checkout."""
    return (generated_dir(root) / "kit" / "packages.yaml").is_file()


def _step(cmd: str, why: str = "") -> str:
    return f"  {cmd:<40} # {why}" if why else f"  {cmd}"


def install_lines(kit: bool) -> list[str]:
    """`spack install` of the kit's rows (one per line), or of the whole matrix."""
    if not kit:
        return [_step("spack install", "the whole matrix: what the site can build or fetch")]
    rows = [shlex.quote(r) for r in KIT_ROWS]
    return ([f"  spack install {rows[0]} \\"]
            + [f"                {r} \\" for r in rows[1:-1]]
            + [f"                {rows[-1]}   # the {len(rows)} matrix rows the kit's "
               "sources serve"])


def next_steps(site: str, kit: Path | None, setup: bool = True) -> list[str]:
    """From `spack setup` (when `setup`) to `reframe -r`, as commands to copy."""
    env = shlex.quote(_here(project_root()))
    lines = [_step(f"export {SITE_ENV}={site}", "" if "#" in site
                   else "the site overlay under site_config/spack/")]
    if setup:
        lines.append(_step(f"{mpimatrix_cmd()} spack setup"
                           + (f" --kit {shlex.quote(str(kit))}" if kit else ""),
                           "activation, externals" + (", the kit's sources" if kit else "")))
    lines += [_step(f"spack env activate {env}"),
              _step("spack concretize", "once: writes spack.lock"),
              *install_lines(kit is not None),
              _step("reframe -r", "the quick mode on the lock's installed builds")]
    return lines


def cmd_locate(args) -> int:
    exe = find_spack()
    if exe is None:
        print("mpimatrix: no Spack found (neither $SPACK_ROOT/bin/spack nor `spack` on PATH).\n"
              f"Get the pinned release (Spack {SPACK_VERSION}, builtin packages "
              f"{PACKAGES_TAG}) with `{_get_cmd()}`, or:\n\n{get_spack_instructions()}\n\n"
              "then see docs/spack.md (offline sites: mirror and bootstrap).",
              file=sys.stderr)
        return 1
    lines, ok = pin_report(exe)
    print("\n".join(lines))
    return 0 if ok else 1


def _get_cmd() -> str:
    kit = offline_kit()
    return f"{mpimatrix_cmd()} spack get" + (f" --kit {shlex.quote(str(kit))}" if kit else "")


def cmd_get(args) -> int:
    kit = Path(args.kit).expanduser().resolve() if args.kit else None
    dest = Path(args.dest).expanduser().resolve() if args.dest else default_spack_dir()
    exe = find_spack()
    if exe is not None and not args.force:
        dest = Path(exe).resolve().parents[1]
        print(f"Spack is already here: {exe} (`{mpimatrix_cmd()} spack locate` checks it against "
              "the pins; --force clones anyway)",
              file=sys.stderr if args.print_env else sys.stdout)
    else:
        clone_pinned(dest, kit)
        head = git_head(dest)
        if head and head != SPACK_COMMIT:
            print(f"  WARNING: {dest} is at {head[:12]}, the pin is {SPACK_COMMIT[:12]}",
                  file=sys.stderr)
    python = os.environ.get("SPACK_PYTHON") or str(
        ensure_spack_python(dest, kit / "wheels" if kit else None))
    exports = f"export SPACK_ROOT={dest}\nexport SPACK_PYTHON={python}"
    if args.print_env:
        print(exports)
        return 0
    sites = sorted(d.name for d in overlay_dir("x").parent.iterdir() if d.is_dir())
    site = os.environ.get(SITE_ENV) or ("debian-local" if kit else
                                        f"<site>   # one of {', '.join(sites)} (or a copy)")
    print("\n".join([
        f"Spack {SPACK_VERSION} in {dest}, builtin packages {PACKAGES_TAG} in "
        f"{dest.parent / 'spack-packages'}, clingo in {python}.", "Next:",
        *(f"  {line}" for line in exports.splitlines()),
        _step(f". {shlex.quote(str(dest))}/share/spack/setup-env.sh", "Spack in this shell"),
        *next_steps(site, kit)]))
    return 0


def cmd_shims(args) -> int:
    site = args.site or os.environ.get(SITE_ENV) or "debian-local"
    try:
        _, skipped = write_shims(site)
    except ShimError as err:
        print(f"mpimatrix spack shims: {err}", file=sys.stderr)
        return 2
    for s in skipped:
        print(f"  skipped {s}", file=sys.stderr)
    return 0


def cmd_setup(args) -> int:
    site = args.site or os.environ.get(SITE_ENV) or "debian-local"
    if not overlay_dir(site).is_dir():
        print(f"mpimatrix spack setup: no site overlay {overlay_dir(site)}", file=sys.stderr)
        return 2
    if (overlay_dir(site) / "shims.yaml").is_file():
        rc = cmd_shims(args)
        if rc:
            return rc
    if args.kit:
        try:
            for line in add_kit_sources(Path(args.kit).expanduser().resolve()):
                print(line)
        except KitError as err:
            print(f"mpimatrix spack setup: {err}", file=sys.stderr)
            return 2
    out = write_activation()
    kit = Path(args.kit).expanduser().resolve() if args.kit else None
    get = f"{mpimatrix_cmd()} spack get" + (f" --kit {shlex.quote(str(kit))}" if kit else "")
    print("\n".join([
        f"wrote {out}/env_vars.yaml and {out}/bin/reframe", f"Next (site {site}):",
        f'  eval "$({get} --print-env)"; . "$SPACK_ROOT/share/spack/setup-env.sh"'
        "   # Spack in this shell",
        *next_steps(site, kit, setup=False)]))
    return 0


# -- `reframe` in the activated environment ------------------------------------------------
def no_lock_fix() -> str:
    install = (f"`{mpimatrix_cmd()} spack kit-rows | xargs -d '\\n' spack install` (the rows "
               "the kit's sources serve)" if kit_used() else "`spack install`")
    return ("make it in the activated environment: `spack concretize` (writes spack.lock), "
            f"then {install}; or `spack env deactivate` to run on the MPIs this machine has")


def _mode_in(argv: list[str]) -> str | None:
    for i, a in enumerate(argv):
        if a == "--mode" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--mode="):
            return a.partition("=")[2]
    return None


def _run_args(argv: list[str]) -> list[str]:
    """argv without -r/--run and --mode [MODE] (`mpimatrix run` adds its own)."""
    out, it = [], iter(argv)
    for a in it:
        if a == "--mode":
            next(it, None)
        elif a not in ("-r", "--run") and not a.startswith("--mode="):
            out.append(a)
    return out


def reframe_main(argv: list[str]) -> int:
    """`reframe` on PATH in the activated environment (.cache/spack/activate/bin/reframe).

    Without --mode: the quick mode (serial). With -r/--run: `mpimatrix run`'s session
    (report in results/reports, session in the results database, the project's
    summary). Anything else goes to ReFrame as it is, with --mode added.
    """
    from ..run.reframe_cmd import reframe_exe
    from ..run.session import run_session

    if any(a in ("-h", "--help", "-V", "--version") for a in argv):
        os.execv(reframe_exe(), [reframe_exe(), *argv])
        return 127  # not reached
    lock = None if os.environ.get("MPIMATRIX_BUILDS") else lock_path_from_env()
    if lock is not None and not lock.is_file():
        print(f"reframe (mpimatrix): no Spack lock {lock}: {no_lock_fix()}", file=sys.stderr)
        return 1
    mode = _mode_in(argv) or "quick"
    if "-r" in argv or "--run" in argv:
        return run_session(mode, None, _run_args(argv))
    rest = argv if _mode_in(argv) else [f"--mode={mode}", *argv]
    os.execv(reframe_exe(), [reframe_exe(), *rest])
    return 127  # not reached


def cmd_kit_rows(args) -> int:
    print("\n".join(KIT_ROWS))
    return 0


def cmd_mirror_add(args) -> int:
    src = Path(args.file)
    sha = file_sha256(src)
    if args.sha256 and args.sha256 != sha:
        print(f"mpimatrix: {src}: sha256 {sha} is not the expected {args.sha256}; Spack would "
              "reject it (a re-rolled or differently packed tarball)", file=sys.stderr)
        return 1
    mirror = Path(args.mirror) if args.mirror else generated_dir() / "mirror"
    ext = "" if args.patch else archive_ext(src.name)
    dest = mirror_path(mirror, sha, ext)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    print(dest)
    return 0


def register(sub) -> None:
    p = sub.add_parser("spack", help="Spack: locate it, prepare site overlays, local mirror")
    ssub = p.add_subparsers(dest="spack_cmd", required=True)

    s = ssub.add_parser("locate", help="find Spack and check it against the pins")
    s.set_defaults(func=cmd_locate)

    s = ssub.add_parser("get", help="no Spack here: clone the pinned Spack release and "
                        "builtin packages")
    s.add_argument("--dest", help="where Spack goes (default "
                   "${XDG_CACHE_HOME:-~/.cache}/mpimatrix/spack/spack, where the project "
                   "finds it; the packages go next to it, the Python with clingo to "
                   "../python)")
    s.add_argument("--kit", help="clone from an offline kit (the folder with git/spack.git "
                   "and git/spack-packages.git) instead of GitHub")
    s.add_argument("--force", action="store_true", help="clone even if Spack is found")
    s.add_argument("--print-env", action="store_true", help="print only the export lines "
                   "of SPACK_ROOT and SPACK_PYTHON (for eval in scripts)")
    s.set_defaults(func=cmd_get)

    s = ssub.add_parser("setup", help="prepare `spack env activate .`: ReFrame variables, "
                        "`reframe` on PATH, the site's machine-local externals")
    s.add_argument("--kit", help="an offline kit's top folder: its source archives go "
                   "into the project mirror, and their versions are required")
    s.add_argument("--site", help=f"overlay under site_config/spack (default ${SITE_ENV}, "
                   "else debian-local)")
    s.set_defaults(func=cmd_setup)

    s = ssub.add_parser("shims", help="make a site's machine-local externals (Debian MPIs)")
    s.add_argument("--site", help=f"overlay under site_config/spack (default ${SITE_ENV}, "
                   "else debian-local)")
    s.set_defaults(func=cmd_shims)

    s = ssub.add_parser("kit-rows", help="the matrix rows an offline kit's sources serve, "
                        "one a line: `... | xargs -d '\\n' spack install` installs them")
    s.set_defaults(func=cmd_kit_rows)

    s = ssub.add_parser("mirror-add", help="copy a source tarball into a file:// mirror "
                        "at the path Spack reads")
    s.add_argument("file")
    s.add_argument("--sha256", help="expected sha256 (the recipe's); refuse on mismatch")
    s.add_argument("--mirror", help="mirror root (default <project>/.cache/spack/mirror)")
    s.add_argument("--patch", action="store_true",
                   help="a recipe patch: stored without extension, as Spack expects")
    s.set_defaults(func=cmd_mirror_add)
