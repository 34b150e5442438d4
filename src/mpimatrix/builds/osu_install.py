"""OSU Micro-Benchmarks installs under their OSU names: the general machinery
(bench_install.py, bench_suites.py) for callers that know only OSU (the tests of
`mpimatrix osu-build`, docs/osu.md)."""

from __future__ import annotations

from pathlib import Path

from . import bench_install as _bi
from .bench_install import BenchBuildError as OsuBuildError  # noqa: F401
from .bench_install import BuildPlan, cxx_for, script_text  # noqa: F401 (re-exported)
from .bench_suites import OSU, find_binary  # noqa: F401
from .record import BenchmarkInstall

RECORD = _bi.record_name(OSU)


def source_version(src: Path) -> str:
    """OMB version of a source tree (configure.ac, CHANGES), else of its name."""
    return OSU.version_of(src, src)


def stage_source(source: Path, work: Path) -> Path:
    return _bi.stage_source(OSU, source, work)


def build_osu(build, source: Path, prefix: Path | None = None, jobs: int | None = None,
              keep: bool = False, quiet: bool = False) -> BenchmarkInstall:
    return _bi.run_build(OSU, build, source, prefix, jobs, keep, quiet)


def installed_osu(build_name: str, root: Path | None = None) -> BenchmarkInstall | None:
    return _bi.installed(OSU, build_name, root)
