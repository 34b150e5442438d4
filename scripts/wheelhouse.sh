#!/usr/bin/env bash
# An offline wheelhouse, made on a connected machine: the wheels that
# `scripts/setup.sh --wheelhouse DIR` installs from with no network (pip --no-index):
#   the project's pinned dependencies (pyproject.toml) and what pip builds the project
#   with (setuptools>=68, wheel);
#   --dev:       also the dev extra (pytest, ruff, mypy, playwright: scripts/test.sh);
#   --pypi-mpis: also the PyPI MPI wheels (pins in src/mpimatrix/builds/pypi_wheels.py;
#                Intel MPI alone is 331 MB).
# Wheels are per Python version and platform: make it with the Python version the offline
# machine has, on the same platform (x86_64 Linux), e.g. PYTHON=python3.11. Without PYTHON,
# the project's .venv if there is one, else python3. Adds to DIR (re-runs fetch only what
# is missing); copy DIR to the offline machine.
# Usage: scripts/wheelhouse.sh [--dev] [--pypi-mpis] DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage="scripts/wheelhouse.sh [--dev] [--pypi-mpis] DIR"
dev="" mpis="" dir=""
while [ $# -gt 0 ]; do
    case $1 in
        --dev) dev=yes ;;
        --pypi-mpis) mpis=yes ;;
        -h|--help) echo "usage: $usage"; exit 0 ;;
        -*) echo "wheelhouse: unknown option $1 (usage: $usage)" >&2; exit 2 ;;
        *)
            if [ -n "$dir" ]; then echo "wheelhouse: one DIR only (usage: $usage)" >&2; exit 2; fi
            dir=$1 ;;
    esac
    shift
done
if [ -z "$dir" ]; then echo "wheelhouse: which directory? (usage: $usage)" >&2; exit 2; fi

if [ -n "${PYTHON:-}" ]; then
    py=$PYTHON
elif [ -x "$root/.venv/bin/python" ]; then
    py=$root/.venv/bin/python
else
    py=python3
fi
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    echo "wheelhouse: $py is not Python 3.10 or newer; give one as PYTHON=python3.11" >&2
    exit 1
fi
if ! "$py" -m pip --version >/dev/null 2>&1; then
    echo "wheelhouse: $py has no pip (Debian: apt-get install python3-pip, or run scripts/setup.sh first: its .venv has pip)" >&2
    exit 1
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
pip=("$py" -m pip download -q --disable-pip-version-check -d "$dir")
# pip reads the dependencies from the project's metadata, which setuptools writes beside
# the sources: from a copy of pyproject.toml (and the README it names), so that a checkout
# this account may not write serves too
meta=$(mktemp -d)
trap 'rm -rf "$meta"' EXIT
cp "$root/pyproject.toml" "$root/README.md" "$meta/"
mkdir "$meta/src"
what="the project's dependencies"
target=$meta
if [ -n "$dev" ]; then
    what="$what, the dev extra"
    target="$meta[dev]"
fi
echo "wheelhouse: $what and the build backend for $("$py" --version) into $dir"
"${pip[@]}" "$target"
"${pip[@]}" "setuptools>=68" wheel
if [ -n "$mpis" ]; then
    # the pins, from the module install-pypi-mpis installs them by (standard library only)
    reqs=$(PYTHONPATH="$root/src" "$py" -c 'from mpimatrix.builds.pypi_wheels import WHEELS
print(" ".join(r for rs in WHEELS.values() for r in rs))')
    echo "wheelhouse: the PyPI MPI wheels: $reqs"
    "${pip[@]}" $reqs
fi
count=$(find "$dir" -maxdepth 1 -name '*.whl' | wc -l)
then="scripts/setup.sh --wheelhouse $dir"
[ -n "$dev" ] && then="$then --dev"
[ -z "$mpis" ] && then="$then --no-pypi-mpis"
echo "wheelhouse: $count wheels, $(du -sh "$dir" | cut -f1), in $dir; on the offline machine: $then"
