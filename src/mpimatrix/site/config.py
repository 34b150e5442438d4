"""Generate the ReFrame site configuration from build records.

One ReFrame environment per build, on every partition. Partitions launch with
`srun` or `build-mpiexec` (rfm/launchers.py). A build given as Lmod modules
(builds/lmod.py) has an environment that loads them. Loading the configuration has no
side effect but the results directory (ReFrame's file log handler does not create its
directory) and, with module builds, LMOD_CMD for ReFrame's Lmod backend when the shell
that started it had not set it.
"""

from __future__ import annotations

import os
import shlex
import sys

from .. import site_settings
from ..builds.lmod import INSTALL as LMOD_INSTALL
from ..builds.lmod import lmod_cmd, lmod_init
from ..builds.record import BuildError, BuildRecord
from ..builds.sources import BuildSet, load_builds
from ..paths import project_root, reports_dir, results_db, results_dir
from ..rfm.fixtures import OSU_SOURCE_ENV
from ..rfm.launchers import BUILD_MPIEXEC
from ..shell import shell_value
from .partitions import keep_partitions
from .perflog import perflog_handlers
from .systems import site_systems

PERFLOG_FORMAT = (
    "%(check_job_completion_time)s|reframe %(version)s|%(check_display_name)s|"
    "%(check_system)s:%(check_partition)s|%(check_environ)s|"
    "%(check_build_hash)s|%(check_job_nodelist)s|%(check_perfvalues)s"
)
PERFVAR_FORMAT = (
    "%(check_perf_var)s=%(check_perf_value)s %(check_perf_unit)s "
    "(ref=%(check_perf_ref)s l=%(check_perf_lower_thres)s "
    "u=%(check_perf_upper_thres)s %(check_perf_result)s)|"
)

# Performance runs are serial: two benchmarks sharing the cores of a node
# measure each other. Every mode therefore uses the serial execution policy
# and every partition allows one job at a time.
SERIAL = ["--exec-policy=serial"]
# The quick modes stay quick: no layout with more busy ranks than cores (its
# values measure the OS scheduler, and it is slow), the benchmarks once per node
# set (not again on a partition that only launches differently; the placement
# and latency checks run on every partition), and a build that hangs costs the
# session at most 3 minutes (rfm/hang_budget.py).
QUICK = ["--tag=quick", "--exclude-tag=oversubscribed", "--setvar=profile=quick",
         "--setvar=every_launcher=false", "--setvar=hang_budget=3m"]

MODES = [
    # The README's main job: sanity on every build, a representative IMB/OSU
    # subset at a few sizes, NPB class S, MPI-IO's three ways of writing. Minutes.
    {"name": "quick", "options": [*SERIAL, *QUICK]},
    # Whole catalogue, full size sweeps.
    {"name": "full", "options": [*SERIAL, "--setvar=profile=full"]},
    # Nightly regression: the whole catalogue on every build and placement at
    # the sizes the references cover, 3 interleaved passes (--reruns=2): the gate
    # judges the best of them (results/gate.py), which moves far less from night
    # to night than one pass; regressions fail against the references.
    {"name": "nightly", "options": [*SERIAL, "--setvar=profile=quick", "--reruns=2"]},
    # Comparison runs: 3 passes over the session
    # (--reruns=2); in each pass every test runs on all builds back to back, so
    # a disturbed node hits every build alike, and the repetitions of one build
    # are a whole pass apart. See docs/osu.md, "Interleaved repetitions".
    {"name": "compare", "options": [*SERIAL, *QUICK, "--reruns=2"]},
    # Site acceptance: the whole catalogue, full sweeps, 3 interleaved passes;
    # `mpimatrix bless` then writes the references from their median.
    {"name": "acceptance", "options": [*SERIAL, "--setvar=profile=full", "--reruns=2"]},
]


#: What each mode is for (`mpimatrix run --help`).
MODE_HELP = {
    "quick": "sanity on every build, a representative IMB/OSU subset, NPB class S and "
             "MPI-IO's three ways of writing (the main job)",
    "full": "the whole catalogue, full size sweeps",
    "nightly": "the regression run: every build and placement, 3 interleaved passes, gated",
    "compare": "the quick subset in 3 interleaved passes, to compare builds",
    "acceptance": "the whole catalogue, full sweeps, 3 interleaved passes, to bless from",
}


def environment(rec: BuildRecord, osu_from_source: bool = False) -> dict:
    """The ReFrame environment of a build. ReFrame writes `export NAME=value` and the
    compiler unquoted into job scripts: values and paths are shell words here."""
    features = rec.features()
    if osu_from_source and "osu" not in features:
        features.append("osu")  # the OsuFromSource fixture builds it
    env = {
        "name": rec.environ_name,
        "cc": shlex.quote(rec.cc),
        "env_vars": [[k, shell_value(v)] for k, v in rec.env.items()],
        "features": features,
        "extras": {"build": rec.to_dict()},
    }
    if rec.prepare_cmds:
        env["prepare_cmds"] = list(rec.prepare_cmds)
    if rec.modules:
        env["modules"] = list(rec.modules)
    return env


def with_lmod(systems: list[dict]) -> list[dict]:
    """The systems with Lmod as their modules system, for builds given as modules: the
    ones mpimatrix writes (nomod) switch to it, and their job scripts source Lmod's init
    first (a batch shell does not always inherit the `module` function: not from a
    shell that never sourced it, not through every Slurm setup). A site system that
    names its own modules system keeps it."""
    init, cmd = lmod_init(), lmod_cmd()
    if init is None or cmd is None:
        raise BuildError(f"builds given as modules need Lmod: {LMOD_INSTALL}")
    os.environ.setdefault("LMOD_CMD", str(cmd))
    for system in systems:
        if system.get("modules_system", "nomod") != "nomod":
            continue
        system["modules_system"] = "lmod"
        for part in system["partitions"]:
            part["prepare_cmds"] = [f"source {shlex.quote(str(init))} >/dev/null 2>&1",
                                    *part.get("prepare_cmds", [])]
    return systems


def local_system(envs: list[str]) -> dict:
    return {
        "name": "local",
        "descr": "This machine, no scheduler: intranode checks on every build",
        "hostnames": [".*"],
        "modules_system": "nomod",
        "prefix": str(results_dir()),
        "partitions": [{
            "name": "default",
            "descr": "mpiexec/mpirun of each build on this node",
            "scheduler": "local",
            "launcher": BUILD_MPIEXEC,
            "environs": envs,
            "max_jobs": 1,
            "features": ["nodes1"],
            "extras": {"nodes": 1},
        }],
    }


def build_config(buildset: BuildSet | None = None, extra_systems: list[dict] | None = None
                 ) -> dict:
    buildset = buildset or load_builds()
    results_dir().mkdir(parents=True, exist_ok=True)
    report_skipped(buildset)
    osu_source = bool(os.environ.get(OSU_SOURCE_ENV))
    envs = [environment(b, osu_source) for b in buildset.builds]
    names = [e["name"] for e in envs]
    systems = keep_partitions(all_systems(names, extra_systems))
    if any(b.modules for b in buildset.builds):
        systems = with_lmod(systems)
    if not envs:
        # ReFrame needs at least one environment per partition: keep a marker one
        # so that `reframe --list` works and says why nothing runs.
        envs = [{"name": "no-mpi-build-found", "features": []}]
        for s in systems:
            for p in s["partitions"]:
                p["environs"] = ["no-mpi-build-found"]
    return {
        "systems": systems,
        "environments": envs,
        "modes": MODES,
        "logging": [{
            "handlers_perflog": [{
                "type": "filelog",
                "prefix": "%(check_system)s/%(check_partition)s",
                "level": "info",
                "format": PERFLOG_FORMAT,
                "format_perfvars": PERFVAR_FORMAT,
                "append": True,
            }, *perflog_handlers(site_settings.current().perflog, buildset.builds)],
            "handlers": [
                {"type": "stream", "name": "stdout", "level": "info",
                 "format": "%(message)s"},
                {"type": "file", "name": str(results_dir() / "reframe.log"),
                 "level": "debug", "append": False,
                 "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s"},
            ],
        }],
        "general": [{
            "check_search_path": [str(project_root() / "reframe_checks")],
            "check_search_recursive": True,
            "report_file": str(reports_dir() / "run-{sessionid}.json"),
            # the report without indentation: 40 % smaller (a nightly of 40 builds: 56
            # instead of 93 MB), the same JSON
            "compress_report": True,
            "save_log_files": True,
        }],
        "storage": [{"enable": True, "sqlite_db_file": str(results_db())}],
    }


def all_systems(names: list[str], extra_systems: list[dict] | None = None) -> list[dict]:
    """The site's systems, the emulated cluster's (while up), then this machine."""
    if extra_systems is None:
        extra_systems = [*site_systems(names), *cluster_systems(names)]
    return [*extra_systems, local_system(names)]


def cluster_systems(envs: list[str]) -> list[dict]:
    """The emulated Slurm cluster's system while it is up (mpimatrix cluster up)."""
    from .vcluster_system import systems_if_up

    return systems_if_up(envs)


def report_skipped(buildset: BuildSet) -> None:
    """Say, on stderr, which builds will not run and why (once per process)."""
    if getattr(report_skipped, "_done", False):
        return
    report_skipped._done = True
    for s in buildset.skipped:
        print(f"mpimatrix: WARNING: build {s.name} skipped: {s.reason}", file=sys.stderr)
