#!/usr/bin/env bash
# The test suite: set up (as root also Slurm for the emulated cluster), lint, pytest.
# Extra arguments go to pytest, e.g. -k imb or -m 'not cluster'.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then scripts/setup.sh --cluster; else scripts/setup.sh; fi
.venv/bin/ruff check src tests reframe_checks site_config benchmarks
exec .venv/bin/pytest "$@"
