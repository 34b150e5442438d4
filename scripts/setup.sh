#!/usr/bin/env bash
# Set up what the project needs on this machine; idempotent, safe to re-run, as any account.
#   system packages  Debian: apt, only as root (otherwise says what to install); elsewhere
#                    (no dpkg-query: RHEL, SUSE, ...) checks for the commands the project
#                    needs and names the dnf and zypper packages of what is missing,
#   .venv            the project with ReFrame (pinned in pyproject.toml),
#   .venv-mpi/       the PyPI MPI wheels, one venv each (pins in
#                    src/mpimatrix/builds/pypi_wheels.py).
# Usage: scripts/setup.sh [--dev] [--no-pypi-mpis] [--no-system-packages]
#                         [--wheelhouse DIR] [--cluster] [--spack]
#   --dev:                also what a developer needs (the `dev` extra: pytest, ruff, mypy,
#                         playwright); scripts/test.sh passes it
#   --no-pypi-mpis:       not the PyPI MPI wheels (a site whose MPIs are modules or a Spack
#                         tree; the Intel MPI wheel alone is 331 MB)
#   --no-system-packages: skip the system package step entirely (neither apt nor the check)
#   --wheelhouse DIR:     install the Python packages from DIR, made on a connected machine
#                         by scripts/wheelhouse.sh, with no network (pip --no-index); the
#                         PyPI MPIs only if their wheels are in it
#   --cluster:            also Slurm + munge for the emulated cluster
#   --spack:              also what Spack builds the kit's MPIs and benchmarks with
#                         (compilers: gcc, clang; autotools; the libraries the debian-local
#                         overlay names as externals; the -dev packages of the libraries
#                         Debian's libfabric.pc lists as private (psm, psm2, rdmacm, ibverbs,
#                         efa): MPICH's ch4:ofi links them, "cannot find -lpsm_infinipath"
#                         without)
set -euo pipefail
here=$PWD   # a relative --wheelhouse is from here
cd "$(dirname "$0")/.."

usage="scripts/setup.sh [--dev] [--no-pypi-mpis] [--no-system-packages] [--wheelhouse DIR] [--cluster] [--spack]"
pkgs="openmpi-bin libopenmpi-dev mpich libmpich-dev gcc make python3-venv"
cluster="" spack="" dev="" pypi_mpis=yes system=yes wheelhouse=""
while [ $# -gt 0 ]; do
    case $1 in
        --cluster) cluster=yes; pkgs="$pkgs slurm-wlm munge libpmix2 iproute2 util-linux" ;;
        --spack) spack=yes; pkgs="$pkgs g++ gfortran git patch xz-utils bzip2 autoconf automake libtool bison flex libpciaccess-dev libxml2-dev zlib1g-dev pkg-config clang libucx-dev libfabric-dev libpmix-dev libevent-dev libnuma-dev libhwloc-dev libslurm-dev libpmi2-0-dev libpsm2-dev librdmacm-dev libpsm-infinipath1-dev libibverbs-dev" ;;
        --dev) dev=yes ;;
        --no-pypi-mpis) pypi_mpis="" ;;
        --no-system-packages) system="" ;;
        --wheelhouse)
            if [ $# -lt 2 ]; then echo "setup: --wheelhouse needs a directory ($usage)" >&2; exit 2; fi
            wheelhouse=$2; shift ;;
        --wheelhouse=*) wheelhouse=${1#--wheelhouse=} ;;
        -h|--help) echo "usage: $usage"; exit 0 ;;
        *) echo "setup: unknown option $1 (usage: $usage)" >&2; exit 2 ;;
    esac
    shift
done

# The wheelhouse first: an offline machine learns at once that it cannot go on.
if [ -n "$wheelhouse" ]; then
    remake="make it on a connected machine with scripts/wheelhouse.sh DIR (the same Python version) and copy it here"
    case $wheelhouse in /*) ;; *) wheelhouse=$here/$wheelhouse ;; esac
    if [ ! -d "$wheelhouse" ]; then
        echo "setup: the wheelhouse $wheelhouse is not a directory: $remake" >&2
        exit 1
    fi
    wheelhouse=$(cd "$wheelhouse" && pwd)
    if ! compgen -G "$wheelhouse/*.whl" >/dev/null; then
        echo "setup: the wheelhouse $wheelhouse holds no wheels (*.whl): $remake" >&2
        exit 1
    fi
    if ! compgen -G "$wheelhouse/setuptools-*.whl" >/dev/null; then
        echo "setup: the wheelhouse $wheelhouse holds no setuptools wheel (pip builds the project with it): $remake" >&2
        exit 1
    fi
    # every pip below (the project's build backend and the PyPI MPIs' venvs too) reads these
    export PIP_NO_INDEX=1 PIP_FIND_LINKS="$wheelhouse"
    echo "setup: Python packages from the wheelhouse $wheelhouse (no index, no network)"
fi

py=${PYTHON:-python3}

# Not Debian: the commands the project needs, and the RHEL and SUSE packages that give them.
check_commands() {
    local lack=() rhel=() suse=() version
    # want WHAT RHEL-PACKAGES SUSE-PACKAGES COMMAND...: one of the commands on the PATH
    want() {
        local what=$1 r=$2 s=$3 c
        shift 3
        for c in "$@"; do command -v "$c" >/dev/null 2>&1 && return 0; done
        lack+=("$what"); rhel+=($r); suse+=($s)
    }
    if .venv/bin/python -c '' 2>/dev/null; then
        :  # the .venv is there: no Python needed to make it
    elif ! command -v "$py" >/dev/null 2>&1; then
        lack+=("Python 3.10 or newer with venv ($py: not found)"); rhel+=(python3); suse+=(python3)
    elif ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
        version=$("$py" --version 2>&1)
        lack+=("Python 3.10 or newer ($py is $version; name a newer one with PYTHON=python3.11)")
        rhel+=(python3.11); suse+=(python311)
    elif ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
        lack+=("the venv module of $py (venv, ensurepip)"); rhel+=(python3); suse+=(python3)
    fi
    want "a C compiler (cc, gcc)" gcc gcc "${CC:-cc}" gcc clang
    want "make" make make make gmake
    if [ -n "${MPIMATRIX_BUILDS:-}${MPIMATRIX_LOCK:-}" ]; then
        :  # the site names its MPIs (a builds file or a Spack lock)
    elif command -v module >/dev/null 2>&1 || [ -n "${LMOD_CMD:-}${MODULESHOME:-}" ]; then
        :  # environment modules: the MPIs are modules (builds.yaml names them)
    else
        want "an MPI: an MPI compiler wrapper on the PATH (mpicc, mpicc.openmpi or mpicc.mpich), environment modules (\`module\`), or the site's MPIs named in MPIMATRIX_BUILDS (a builds file) or MPIMATRIX_LOCK (a Spack lock)" \
            "openmpi-devel mpich-devel environment-modules" "openmpi4-devel mpich-devel lua-lmod" \
            mpicc mpicc.openmpi mpicc.mpich
    fi
    if [ -n "$cluster" ]; then
        want "Slurm (slurmctld, slurmd)" "slurm-slurmctld slurm-slurmd" slurm slurmctld
        want "munge (munged)" munge munge munged
        want "ip (iproute)" iproute iproute2 ip
        want "unshare, nsenter (util-linux)" util-linux util-linux nsenter
    fi
    if [ -n "$spack" ]; then
        want "a C++ compiler (g++)" gcc-c++ gcc-c++ g++
        want "a Fortran compiler (gfortran)" gcc-gfortran gcc-fortran gfortran
        want "clang" clang clang clang
        local tool
        for tool in git patch xz bzip2 autoconf automake bison flex; do
            want "$tool" "$tool" "$tool" "$tool"
        done
        want "libtool (libtoolize)" libtool libtool libtoolize
        want "pkg-config" pkgconf-pkg-config pkg-config pkg-config pkgconf
    fi
    if [ ${#lack[@]} = 0 ]; then
        echo "setup: no dpkg-query (not Debian): found what the project needs (Python 3.10+ with venv, a C compiler, make, an MPI or a way to name one)"
        return 0
    fi
    {
        echo "setup: no dpkg-query (not Debian), so setup checked for the commands the project needs; missing:"
        local item
        for item in "${lack[@]}"; do echo "setup:   - $item"; done
        echo "setup: install them as root (or ask your admin):"
        echo "setup:   RHEL, Rocky, Alma:  dnf install ${rhel[*]}"
        echo "setup:   SUSE (SLES, Leap):  zypper install ${suse[*]}"
        if [[ " ${rhel[*]} " == *" python3"* ]]; then
            echo "setup:   (RHEL/Rocky 8 and 9 ship a python3 older than 3.10: install python3.11, then run PYTHON=python3.11 scripts/setup.sh)"
        fi
        if [[ " ${rhel[*]} " == *" slurm-slurmd "* || " ${rhel[*]} " == *" munge "* ]]; then
            echo "setup:   (RHEL: Slurm and munge are in EPEL: dnf install epel-release first)"
        fi
        if [[ " ${rhel[*]} " == *" openmpi-devel "* ]]; then
            echo "setup:   (Lmod instead of environment-modules: dnf install Lmod, from EPEL)"
            echo "setup: their MPIs are modules: load one before running setup and mpimatrix, e.g. \`module load mpi/openmpi-x86_64\` (RHEL) or \`module load gnu openmpi\` (SUSE), or name the site's MPIs in a builds file (MPIMATRIX_BUILDS)"
        fi
        echo "setup: or skip this check with --no-system-packages"
    } >&2
    return 1
}

if [ -z "$system" ]; then
    echo "setup: --no-system-packages: system packages neither checked nor installed"
elif command -v dpkg-query >/dev/null 2>&1; then
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
            echo "setup: a site whose MPIs are modules or a Spack tree can skip the Debian MPI packages: scripts/setup.sh --no-system-packages" >&2
            exit 1
        fi
    fi
else
    check_commands || exit 1
fi

if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $($py --version)"
    "$py" -m venv .venv
fi
target=.
[ -n "$dev" ] && target='.[dev]'
if ! .venv/bin/python -m pip install -q --disable-pip-version-check -e "$target"; then
    if [ -n "$wheelhouse" ]; then
        echo "setup: pip could not install $target from the wheelhouse $wheelhouse (above: what it lacks); was it made with $(.venv/bin/python --version 2>&1) on this platform${dev:+, with --dev}? $remake" >&2
    fi
    exit 1
fi

if [ -z "$pypi_mpis" ]; then
    echo "setup: --no-pypi-mpis: the PyPI MPI wheels are not installed (.venv-mpi/)"
elif [ -z "$wheelhouse" ]; then
    .venv/bin/mpimatrix install-pypi-mpis
else
    # From the wheelhouse, the PyPI MPIs whose wheels it holds (or that are installed).
    names=() absent=()
    while IFS=$'\t' read -r name installed reqs; do
        if [ "$installed" = yes ] || .venv/bin/python -m pip install -q --disable-pip-version-check \
                --dry-run --ignore-installed $reqs >/dev/null 2>&1; then
            names+=("$name")
        else
            absent+=("$reqs")
        fi
    done < <(.venv/bin/python - <<'EOF'
from mpimatrix.builds.pypi_wheels import WHEELS
from mpimatrix.paths import pypi_mpi_root

for name, reqs in WHEELS.items():
    marker = pypi_mpi_root() / name / ".installed"
    installed = marker.exists() and marker.read_text().split() == reqs
    print(name, "yes" if installed else "no", " ".join(reqs), sep="\t")
EOF
)
    if [ ${#absent[@]} -gt 0 ]; then
        list=$(printf ', %s' "${absent[@]}")
        echo "setup: the wheelhouse $wheelhouse lacks the PyPI MPI wheels ${list:2}: those MPIs are not installed (scripts/wheelhouse.sh --pypi-mpis DIR puts them in; --no-pypi-mpis: not wanted)"
    fi
    if [ ${#names[@]} -gt 0 ]; then
        .venv/bin/mpimatrix install-pypi-mpis "${names[@]}"
    fi
fi
