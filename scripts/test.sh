#!/usr/bin/env bash
# The test suite: set up with the dev extra (as root also Slurm for the emulated cluster),
# lint, pytest.
# Extra arguments go to pytest, e.g. -k imb or -m 'not cluster' (then one pytest run).
set -euo pipefail
cd "$(dirname "$0")/.."
# The offline kit (an air-gapped site's mirror: Spack, its packages, benchmark and
# MVAPICH2 sources), if present beside the project or named by MPIMATRIX_OFFLINE_KIT:
# Spack is cloned from it into the user cache (reused by later runs), with a Python
# for Spack with clingo, and its sources go into the project's Spack mirror. Without
# it the Spack tests skip, saying why.
setup_args="--dev"   # the dev extra: pytest, ruff, mypy, playwright
[ "$(id -u)" = 0 ] && setup_args="$setup_args --cluster"
[ -x .venv/bin/mpimatrix ] || scripts/setup.sh $setup_args   # a fresh machine: the .venv first
# paths.offline_kit(): the project's one definition of where the kit is
kit=$(.venv/bin/python -c 'from mpimatrix.paths import offline_kit; print(offline_kit() or "")')
[ -n "$kit" ] && setup_args="$setup_args --spack"
scripts/setup.sh $setup_args
if [ -n "$kit" ]; then
    eval "$(.venv/bin/mpimatrix spack get --kit "$kit" --print-env)"
    export MPIMATRIX_SPACK_SITE=debian-local MPIMATRIX_OFFLINE_KIT="$kit"
    .venv/bin/mpimatrix spack setup --kit "$kit"
fi
.venv/bin/ruff check src tests reframe_checks site_config measure
.venv/bin/mypy   # the type check of src/mpimatrix/results ([tool.mypy] in pyproject.toml)
# Given a marker selection (-m), one pytest run. Otherwise two: first the tests that run no
# MPI, ReFrame, Slurm or Spack (pure Python, about 1050) on every core (pytest-xdist; its own
# short --basetemp: the cluster tests' directories hold Unix sockets, at most 64 characters);
# then the others one at a time: they measure performance, and two benchmarks side by side
# measure each other (a session with other programs on its cores is DISTURBED).
for arg in "$@"; do
    case "$arg" in -m*|--markexpr*) exec .venv/bin/pytest "$@" ;; esac
done
pure="not mpi and not reframe and not cluster and not spack"
base=$(mktemp -d /tmp/pt-XXXX)
set +e
.venv/bin/pytest -n auto --basetemp="$base" -m "$pure" "$@"; first=$?
.venv/bin/pytest -m "not ($pure)" "$@"; second=$?
set -e
rm -rf "$base"
# 5: the selection left a phase nothing to run
if [ "$first" = 5 ] && [ "$second" = 5 ]; then exit 5; fi
for rc in "$first" "$second"; do
    if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then exit "$rc"; fi
done
exit 0
