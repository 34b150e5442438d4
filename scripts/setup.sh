#!/usr/bin/env bash
# Set up what the project needs on this machine; idempotent, safe to re-run.
#   system packages (apt, only as root; otherwise says what to install),
#   .venv       the project with ReFrame (pinned in pyproject.toml),
#   .venv-mpi/  the PyPI MPI wheels, one venv each (pins in src/mpimatrix/pypi_mpis.py).
# Usage: scripts/setup.sh [--cluster] [--spack]
#   --cluster: also Slurm + munge for the emulated cluster
#   --spack:   also what Spack builds the kit's MPIs and benchmarks with (compilers: gcc,
#              clang; autotools; the libraries the debian-local overlay names as externals;
#              the -dev packages of the libraries Debian's libfabric.pc lists as private
#              (psm, psm2, rdmacm, ibverbs, efa): MPICH's ch4:ofi links them, "cannot find
#              -lpsm_infinipath" without)
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs="openmpi-bin libopenmpi-dev mpich libmpich-dev gcc make python3-venv"
for arg in "$@"; do
    case $arg in
        --cluster) pkgs="$pkgs slurm-wlm munge libpmix2 iproute2 util-linux" ;;
        --spack) pkgs="$pkgs g++ gfortran git patch xz-utils bzip2 autoconf automake libtool bison flex libpciaccess-dev libxml2-dev zlib1g-dev pkg-config clang libucx-dev libfabric-dev libpmix-dev libevent-dev libnuma-dev libhwloc-dev libslurm-dev libpmi2-0-dev libpsm2-dev librdmacm-dev libpsm-infinipath1-dev libibverbs-dev" ;;
        *) echo "setup: unknown option $arg (use --cluster, --spack)" >&2; exit 2 ;;
    esac
done

missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "setup: installing system packages:$missing"
        # finish an interrupted dpkg run first; wait for locks held by boot-time apt jobs
        dpkg --configure -a || true
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >/dev/null
    else
        echo "setup: missing system packages:$missing" >&2
        echo "setup: install them with: sudo apt-get install$missing" >&2
        exit 1
    fi
fi

py=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $($py --version)"
    "$py" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
.venv/bin/mpimatrix install-pypi-mpis
