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
    """Why some or all builds get no OSU test case ('' when every build has OSU)."""
    bs = bs or load_builds()
    if os.environ.get(OSU_SOURCE_ENV):
        return ""  # the OsuFromSource fixture builds it for every build
    without = [b.name for b in bs.builds if "osu" not in b.benchmarks]
    if not without:
        return ""
    how = ("build it once: `mpimatrix osu-build --source <osu-micro-benchmarks tarball or "
           f"tree>`, or set {OSU_SOURCE_ENV}")
    if len(without) == len(bs.builds):
        return f"OSU: no test case: no build has the OSU Micro-Benchmarks; {how}"
    return f"OSU: no test case for {', '.join(without)} (no OSU install); {how}"
