"""What the scripts of measure/ may use of the package, and nothing else: the experiment
harness and its store reader (validation/experiment.py, validation/store.py), the gate's
and the history's entry points, the report's writer, and the builds, the cluster and the
launch vocabulary the scripts time. measure/*.py import mpimatrix names from here only
(beside the top-level helpers paths, units, placement and shell; tests/test_architecture.py
checks it), so what they lean on is this list, not the modules behind it.

A name is imported the first time it is used (PEP 562): a script that times Spack does not
load the gate or the report's drawing."""

from __future__ import annotations

import importlib
from typing import Any

#: name -> (module under mpimatrix, its attribute)
NAMES: dict[str, tuple[str, str]] = {
    # the experiment harness: stored nights, blessed from the first, judged in turn
    "Experiment": ("validation.experiment", "Experiment"),
    "Judged": ("validation.experiment", "Judged"),
    "split": ("validation.experiment", "split"),
    "measured_again": ("validation.experiment", "measured_again"),
    "varied_policy": ("validation.experiment", "varied_policy"),
    "gated_values": ("validation.experiment", "gated_values"),
    "Store": ("validation.store", "Store"),
    "StoredNight": ("validation.store", "StoredNight"),
    "builds_of": ("validation.store", "builds_of"),
    "sessions_given": ("validation.store", "sessions_given"),
    "require_at_least_one": ("validation.gate_rates", "require_at_least_one"),
    "Rate": ("validation.tally", "Rate"),
    "slow_case": ("validation.year", "slow_case"),
    "generate_year": ("validation.year", "generate"),
    "recorded_nightly": ("validation.year", "recorded"),
    "DERIVED_LAYOUTS": ("validation.derived_session", "LAYOUTS"),
    "derive_session": ("validation.derived_session", "derive"),
    "derived_prices": ("validation.derived_session", "prices"),
    # sessions and the gate
    "load": ("results.measurements", "load"),
    "load_report": ("results.sessions", "load_report"),
    "DEFAULT_POLICY": ("results.policy", "DEFAULT_POLICY"),
    "GatePolicy": ("results.policy", "GatePolicy"),
    "variation": ("results.policy", "variation"),
    "to_confirm": ("results.night", "to_confirm"),
    "REGRESSION": ("results.gate", "REGRESSION"),
    "WATCH": ("results.gate", "WATCH"),
    "Kind": ("results.values", "Kind"),
    "kind_of": ("results.values", "kind_of"),
    "case_name": ("results.values", "case_name"),
    "robust_spread": ("results.statistics", "spread"),
    # the detection floors (results/floors.py)
    "floor_step": ("results.floors", "step"),
    "value_floors": ("results.floors", "value_floors"),
    "percentile": ("results.floors", "percentile"),
    "caught_pooled": ("results.floors", "caught_pooled"),
    # the history (`mpimatrix changes`)
    "Series": ("results.history", "Series"),
    "series_of": ("results.history", "series_of"),
    "series_against_host": ("results.history", "against_host"),
    "change_points": ("results.history", "change_points"),
    "all_changes": ("results.history", "all_changes"),
    "CHANGE_WINDOW": ("results.steps", "WINDOW"),
    # the report and the stores
    "make_report": ("results.report", "make_report"),
    "write_report": ("results.report", "write"),
    "drawing_workers": ("results.report.render", "workers"),
    "PALETTE": ("results.report.figures", "PALETTE"),
    "figure_grid": ("results.report.figures", "grid"),
    "legend_below": ("results.report.figures", "legend_below"),
    "log_y": ("results.report.figures", "log_y"),
    "plain_log": ("results.report.figures", "plain_log"),
    "software_dir": ("results.software_store", "software_dir"),
    # the site's perflog handlers: the budget a night's verdict records get
    "PERFLOG_VERDICT_BUDGET": ("run.perflog_verdicts", "BUDGET"),
    # the builds, the emulated cluster and the launch
    "load_builds": ("builds.sources", "load_builds"),
    "launch_argv": ("rfm.launchers", "launch_argv"),
    "crash_report": ("suites.crash", "crash_report"),
    "Layout": ("vcluster.layout", "Layout"),
    "cluster_up": ("vcluster.cluster", "up"),
    "cluster_down": ("vcluster.cluster", "down"),
    "cluster_run": ("vcluster.cluster", "run"),
    "cluster_state": ("vcluster.cluster", "load_state"),
    # Spack (builds/spack)
    "find_spack": ("builds.spack.tool", "find_spack"),
    "spack_env_copy": ("builds.spack.tool", "env_copy"),
    "spack_version": ("builds.spack.tool", "spack_version"),
    "SPACK_SITE_ENV": ("builds.spack.tool", "SITE_ENV"),
    "write_shims": ("builds.spack.site_overlay", "write_shims"),
    "write_activation": ("builds.spack.activation", "write_activation"),
    "spack_env_args": ("builds.spack.installed", "spack_env_args"),
    "KIT_ROWS": ("builds.spack.kit", "KIT_ROWS"),
    "add_kit_sources": ("builds.spack.kit", "add_kit_sources"),
    "Lock": ("builds.spack.lockfile", "Lock"),
    "read_lock": ("builds.spack.lockfile", "read_lock"),
    **{name: ("builds.spack.buildcache", name) for name in (
        "build_log_path", "cache_size", "default_cache", "env_with_lock", "install_times",
        "osu_latency_command", "phases_text", "read_install_log", "row_label", "row_mpi",
        "row_nodes", "store_index", "store_root", "tree_scope")},
}

__all__ = sorted(NAMES)


def __getattr__(name: str) -> Any:
    try:
        module, attr = NAMES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"mpimatrix.{module}"), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return [*globals(), *__all__]
