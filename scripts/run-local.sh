#!/usr/bin/env bash
# The main job on this machine's MPIs: set up, list the builds, run the quick
# regression (placement sanity on every build, IMB/OSU subset, NPB class S, MPI-IO),
# print a summary.
# Extra arguments go to `mpimatrix run`, e.g. --mode full.
# OSU, IMB and NPB for the builds without them are built from the offline kit beside the
# clone (../shared/offline, or $MPIMATRIX_OFFLINE_KIT) when there is one; --sources
# (or MPIMATRIX_SOURCES) overrides it, and without a kit the releases are downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/mpimatrix builds
sources=()
given=${MPIMATRIX_SOURCES:-}
for arg in "$@"; do
    case $arg in --sources|--sources=*) given=yes ;; --) break ;; esac
done
if [ -z "$given" ]; then
    # paths.offline_kit(): the project's one definition of where the kit is
    kit=$(.venv/bin/python -c 'from mpimatrix.paths import offline_kit; print(offline_kit() or "")')
    if [ -n "$kit" ]; then
        echo "run-local: OSU, IMB and NPB sources from the offline kit $kit (for the builds without them; --sources PATH overrides)"
        sources=(--sources "$kit")
    fi
fi
exec .venv/bin/mpimatrix run "${sources[@]}" "$@"
