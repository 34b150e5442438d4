"""What `mpimatrix run` does about benchmark sources before ReFrame starts.

The sources given (--sources, MPIMATRIX_SOURCES, MPIMATRIX_<SUITE>_SOURCE) are
checked, and each suite's is exported in its own variable for the session. A
suite that a discovered build lacks and no source was given for is taken from
the user cache or downloaded (bench_download.py). What stays missing is said
once, with how to add sources; the session runs what it has. The benchmarks are
built during the session, once per build, by the checks' fixtures, and reused
from the cache by later sessions.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..paths import offline_kit
from .bench_download import DOWNLOAD_ENV, downloaded, downloads_enabled, fetch, release_url
from .bench_sources import (
    SOURCE_ENVS,
    SOURCES_ENV,
    SourceError,
    add_given,
    configured_sources,
    scan,
)
from .bench_suites import SUITES
from .record import BuildRecord
from .sources import load_builds


def lacking(builds: list[BuildRecord]) -> dict[str, list[str]]:
    """Per suite, the builds that have no install of it (nor one planned from a source)."""
    out: dict[str, list[str]] = {}
    for name in SUITES:
        without = [b.name for b in builds if name not in b.benchmarks]
        if without:
            out[name] = without
    return out


def prepare_sources(given: list[str], quiet: bool = False) -> str:
    """Export each suite's source for the session (downloading what is missing);
    return the note on what still lacks one ('' when nothing does)."""
    add_given(given)
    for name, path in configured_sources().items():  # a bad path stops here
        os.environ[SOURCE_ENVS[name]] = str(path)
    bs = load_builds()
    if bs.source != "discovery":
        return ""  # Spack and builds-file builds bring their benchmarks
    missing = lacking(bs.builds)
    problems = []
    for name in list(missing):
        suite = SUITES[name]
        if not downloads_enabled():
            problems.append(f"{DOWNLOAD_ENV}=0: {suite.label} not downloaded")
            continue
        try:
            if downloaded(suite) is None and not quiet:
                print(f"mpimatrix: downloading {suite.label} {suite.release.version} from "
                      f"{release_url(suite)}", flush=True)
            path = fetch(suite)
        except SourceError as err:
            problems.append(str(err))
            continue
        os.environ[SOURCE_ENVS[name]] = str(path)
        del missing[name]
    return note(missing, problems, len(bs.builds), offline_kit())


def note(missing: dict[str, list[str]], problems: list[str], total: int,
         kit: Path | None = None) -> str:
    """One note for the whole session: which builds get no IMB/OSU case, why, and how
    to give sources (the offline kit beside the project, if there is one)."""
    if not missing:
        return ""
    parts = [f"{SUITES[n].label} on " + ("every build" if len(names) == total
                                         else ", ".join(names))
             for n, names in missing.items()]
    lines = [f"mpimatrix: no source to build the benchmarks from: no test case of "
             f"{'; '.join(parts)}"]
    lines += [f"  {p}" for p in problems]
    lines.append("  add sources: `mpimatrix run --sources PATH` (repeatable; an offline kit "
                 "or mirror folder, a release tarball or an unpacked source tree) or "
                 f"{SOURCES_ENV}=PATH[:PATH]")
    if kit is not None and set(missing) & set(scan(kit)):
        lines.append(f"  the offline kit {kit} has them: `mpimatrix run --sources {kit}` "
                     "(./scripts/run-local.sh takes it by default)")
    return "\n".join(lines)
