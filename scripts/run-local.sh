#!/usr/bin/env bash
# The main job on this machine's MPIs: set up, list the builds, run the quick
# regression (placement sanity on every build, IMB/OSU subset), print a summary.
# Extra arguments go to `mpimatrix run`, e.g. --mode full.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/mpimatrix builds
exec .venv/bin/mpimatrix run "$@"
