#!/usr/bin/env bash
# The test suite: set up (as root also Slurm for the emulated cluster), lint, pytest.
# Extra arguments go to pytest, e.g. -k imb or -m 'not cluster'.
set -euo pipefail
cd "$(dirname "$0")/.."
# The offline kit (an air-gapped site's mirror: Spack, its packages, benchmark and
# MVAPICH2 sources), if present beside the project or named by MPIMATRIX_OFFLINE_KIT:
# Spack is cloned from it into the user cache (reused by later runs), with a Python
# for Spack with clingo, and its sources go into the project's Spack mirror. Without
# it the Spack tests skip, saying why.
setup_args=""
[ "$(id -u)" = 0 ] && setup_args="--cluster"
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
exec .venv/bin/pytest "$@"
