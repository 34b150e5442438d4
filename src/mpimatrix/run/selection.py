"""What `mpimatrix run` selects besides the mode: partitions, test names, and a word on
the suites that get no test case.

- `--partition REGEX` (repeatable): MPIMATRIX_PARTITIONS, applied in the
  generated configuration (site/partitions.py), so it works with `--mode`.
- ReFrame matches `-n`/`-x` patterns against display names without spaces,
  while `reframe -l` prints them with spaces (`ImbCheck %placement=internode`):
  the spaces are taken out of the patterns here, so a name copied from the
  listing selects its test.
- ReFrame variables set among the ReFrame arguments (`-S ImbCheck.iterations=...`)
  are set in the confirmation run too, which measures again the same way.
"""

from __future__ import annotations

import os

from ..builds.bench_sources import SOURCE_ENVS
from ..builds.sources import BuildSet, load_builds
from ..rfm.fixtures import OSU_SOURCE_ENV
from ..site.config import all_systems
from ..site.partitions import PARTITIONS_ENV, check_current_system, partition_patterns

#: ReFrame options whose value is matched against display names without spaces.
NAME_OPTIONS = ("-n", "--name", "-x", "--exclude")


def select_partitions(partitions: list[str] | None) -> None:
    """Export the patterns and stop here if they leave this host's system nothing."""
    if not partitions:
        return
    os.environ[PARTITIONS_ENV] = "\n".join(partitions)
    partition_patterns()  # a bad regular expression stops here, with its name
    check_current_system(all_systems([b.environ_name for b in load_builds().builds]))


def name_patterns(args: list[str]) -> list[str]:
    """ReFrame arguments with the spaces taken out of -n/-x patterns."""
    out, take = [], False
    for a in args:
        if take:
            a, take = a.replace(" ", ""), False
        elif a in NAME_OPTIONS:
            take = True
        else:
            opt, eq, value = a.partition("=")
            if eq and opt in NAME_OPTIONS:
                a = f"{opt}={value.replace(' ', '')}"
            elif a[:2] in ("-n", "-x") and len(a) > 2 and not a.startswith("--"):
                a = a[:2] + a[2:].replace(" ", "")
        out.append(a)
    return out


def setvar_args(args: list[str]) -> list[str]:
    """The ReFrame variables set in ReFrame arguments (-S/--setvar, any spelling), as
    --setvar=[TEST.]VAR=VALUE options."""
    out, take = [], False
    for a in args:
        if take:
            out.append(f"--setvar={a}")
            take = False
        elif a in ("-S", "--setvar"):
            take = True
        elif a.startswith("--setvar="):
            out.append(a)
        elif a.startswith("-S"):
            out.append(f"--setvar={a[2:]}")
    return out


def ignored_under_mode(args: list[str]) -> str:
    """A warning when ReFrame arguments hold `-p`, which ReFrame 4.10 ignores under
    --mode ('' otherwise)."""
    if any(a.startswith("--prgenv") or (a.startswith("-p") and not a.startswith("--"))
           for a in args):
        return ("mpimatrix: WARNING: ReFrame ignores -p/--prgenv under --mode (4.10): use "
                "`mpimatrix run --only REGEX` to choose builds")
    return ""


def osu_note(bs: BuildSet | None = None) -> str:
    """Why some or all builds get no OSU test case, and how to get one ('' when every
    build has OSU). Spack builds whose benchmarks the lock has but Spack has not
    installed (OSU or IMB) are named apart, with the `spack install` of their rows."""
    bs = bs or load_builds()
    from_source = {s for s, var in SOURCE_ENVS.items() if os.environ.get(var)}
    rows: dict[str, dict[str, str]] = {}  # build: {suite: command}, Spack rows to install
    for b in bs.builds:
        todo = {s: c for s, c in (getattr(b, "missing_benchmarks", None) or {}).items()
                if s not in from_source}
        if todo:
            rows[b.name] = todo
    lines = [spack_rows_note(rows)] if rows else []
    if "osu" not in from_source:  # else the OsuFromSource fixture builds it for every build
        without = [b.name for b in bs.builds if "osu" not in b.benchmarks
                   and "osu" not in rows.get(b.name, {})]
        how = ("build it once: `mpimatrix osu-build --source <osu-micro-benchmarks tarball "
               f"or tree>`, or set {OSU_SOURCE_ENV}")
        if bs.source.startswith("lock:"):
            how = ("their rows of spack.yaml have none: drop `~osu` from them, then "
                   "`spack concretize` and `spack install` the rows")
        if without and len(without) == len(bs.builds):
            lines.append(f"OSU: no test case: no build has the OSU Micro-Benchmarks; {how}")
        elif without:
            lines.append(f"OSU: no test case for {', '.join(without)} (no OSU install); {how}")
    return "\n".join(lines)


def spack_rows_note(rows: dict[str, dict[str, str]]) -> str:
    """One line: the Spack builds whose OSU/IMB are not installed, and the `spack install`
    of their rows (the mpimatrix-benchmarks root of each MPI and compiler)."""
    labels = {"osu": "OSU", "imb": "IMB"}
    suites = sorted({s for todo in rows.values() for s in todo})
    cmds = list(dict.fromkeys(c for todo in rows.values() for c in todo.values()))
    spack = [c.removeprefix("spack install ") for c in cmds if c.startswith("spack install ")]
    cmds = [f"spack install {' '.join(spack)}"] * bool(spack) + [
        c for c in cmds if not c.startswith("spack install ")]
    return (f"{'/'.join(labels.get(s, s) for s in suites)}: no test case for "
            f"{', '.join(rows)}: the lock has the benchmarks, Spack has not installed them; "
            f"install their rows (mpimatrix-benchmarks for that MPI and compiler) in the "
            f"activated environment: {'; '.join(f'`{c}`' for c in cmds)}")
