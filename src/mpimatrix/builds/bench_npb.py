"""The NAS Parallel Benchmarks 3.4 (MPI) as a suite mpimatrix builds (bench_suites.py's
NPB): how a release tree is recognised, its version, and the build commands.

A release (NPB3.4.tar.gz, NASA's NPB3.4.1.tar.gz) holds NPB3.4/NPB3.4-MPI and
NPB3.4-OMP; the MPI tree is built. Its config/make.def is written with the build's
wrappers: the C wrapper for IS, the Fortran wrapper next to it (mpicc.openmpi ->
mpif90.openmpi) for the other seven kernels; gfortran 10 and later need
-fallow-argument-mismatch (MPI buffers of different types) and -fallow-invalid-boz
(X'...' constants), which other compilers do not take. Every kernel is built on its
own, in a copy of the tree (`jobs` at a time; NPB's makefiles are not parallel), for
every class of CLASSES: prefix/bin/<kernel>.<class>.x. What is not built is said, per
kernel and class, in prefix/npb-missing.txt (a build without a working Fortran wrapper
gets the C kernel IS only); IS class S must build, or the install is incomplete.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

#: The kernels and the language each is in (DT, the data traffic benchmark, is left out).
KERNELS = {"is": "c", "ep": "fortran", "cg": "fortran", "ft": "fortran", "mg": "fortran",
           "lu": "fortran", "bt": "fortran", "sp": "fortran"}
#: The classes built for every kernel (suites/npb/catalogue.py CLASSES: the same).
CLASSES = ("S", "A")
#: Per kernel and class not built: "<kernel>.<class>: why", below the install prefix.
MISSING_FILE = "npb-missing.txt"
GNU_FFLAGS = "-fallow-argument-mismatch -fallow-invalid-boz"
#: A C wrapper's name -> its Fortran sibling's.
FORTRAN_OF = (("mpiicx", "mpiifx"), ("mpiicc", "mpiifort"), ("mpigcc", "mpif90"),
              ("mpicc", "mpif90"))


def fortran_wrapper(cc: str) -> str:
    """The Fortran wrapper beside a C wrapper (mpicc.openmpi -> mpif90.openmpi)."""
    head, name = cc.rsplit("/", 1) if "/" in cc else ("", cc)
    for c, f in FORTRAN_OF:
        if name == c or name.startswith(c + "."):
            name = f + name[len(c):]
            break
    else:
        name = "mpif90"
    return f"{head}/{name}" if head else name


def _mpi_tree(path: Path) -> bool:
    return ((path / "config" / "make.def.template").is_file()
            and (path / "sys" / "setparams.c").is_file() and (path / "IS").is_dir())


def is_npb_tree(path: Path) -> bool:
    """NPB's MPI tree, or a release's top folder holding one (NPB3.4/NPB3.4-MPI)."""
    return _mpi_tree(path) or any(_mpi_tree(p) for p in path.glob("NPB*-MPI"))


def npb_tree_version(src: Path) -> str:
    """The VERSION of sys/setparams.c ("3.4"), of the tree or the release's MPI tree."""
    for tree in (src, *sorted(src.glob("NPB*-MPI"))):
        try:
            text = (tree / "sys" / "setparams.c").read_text(errors="replace")
        except OSError:
            continue
        m = re.search(r'#define\s+VERSION\s+"([^"]+)"', text)
        if m:
            return m.group(1)
    return ""


def npb_commands(cc: str, _cxx: str, prefix: Path, jobs: int) -> list[str]:
    """The shell commands that build every kernel and class into prefix/bin."""
    q = shlex.quote
    fortran = " ".join(k for k, lang in KERNELS.items() if lang == "fortran")
    c_kernels = " ".join(k for k, lang in KERNELS.items() if lang == "c")
    check = ("      program t\\n      include 'mpif.h'\\n      integer ierr\\n"
             "      call mpi_init(ierr)\\n      call mpi_finalize(ierr)\\n      end\\n")
    return [
        '[ -f config/make.def.template ] || cd "$(ls -d NPB*-MPI | head -n 1)"',
        f"export NPB_BIN={q(str(prefix / 'bin'))} NPB_MISSING={q(str(prefix / MISSING_FILE))}"
        f" NPB_CLASSES={q(' '.join(CLASSES))}",
        'mkdir -p "$NPB_BIN"; : > "$NPB_MISSING"',
        f"FC={q(fortran_wrapper(cc))}; FFLAGS_X=''; no_fortran=''",
        f'printf "{check}" > npb_fcheck.f',
        '# the Fortran wrapper must build an MPI program (with the flags gfortran 10+ needs)',
        'if ! command -v "$FC" > /dev/null 2>&1; then no_fortran="no Fortran MPI wrapper '
        '($FC not found)"',
        f'elif "$FC" {GNU_FFLAGS} -o npb_fcheck npb_fcheck.f > npb_fcheck.log 2>&1; then '
        f"FFLAGS_X={q(GNU_FFLAGS)}",
        'elif "$FC" -o npb_fcheck npb_fcheck.f >> npb_fcheck.log 2>&1; then :',
        'else no_fortran="$FC cannot build an MPI Fortran program: '
        '$(tail -n 2 npb_fcheck.log | tr "\\n" " ")"; fi',
        'kernels=' + q(c_kernels),
        'if [ -n "$no_fortran" ]; then',
        '  echo "NPB: $no_fortran: the C kernel (IS) only"',
        f'  for k in {fortran}; do for c in $NPB_CLASSES; do',
        '    echo "$k.$c: $no_fortran: the C kernel (IS) only" >> "$NPB_MISSING"; done; done',
        f'else kernels="$kernels {fortran}"; fi',
        "cat > config/make.def << NPB_MAKE_DEF",
        "MPIFC = $FC", "FLINK = $FC", "FFLAGS = -O3 $FFLAGS_X", "FLINKFLAGS = -O3 $FFLAGS_X",
        f"MPICC = {cc}", f"CLINK = {cc}", "CFLAGS = -O3", "CLINKFLAGS = -O3", "CC = cc -g",
        "BINDIR = $NPB_BIN", "CONVERTFLAG = -DFORTRAN_REC_SIZE=1", "RAND = randi8",
        "NPB_MAKE_DEF",
        "npb_kernel() {  # one kernel, every class, in a copy of the tree",
        '  local k=$1 w=../npb-$1 c t0',
        '  rm -rf "$w" && cp -r . "$w"',
        "  for c in $NPB_CLASSES; do",
        "    t0=$SECONDS",
        '    if make -C "$w" "$k" CLASS="$c" > "$w.$c.log" 2>&1 && [ -x "$NPB_BIN/$k.$c.x" ]',
        '    then echo "NPB $k.$c built in $((SECONDS - t0)) s"',
        '    else echo "NPB $k.$c: make failed:"; tail -n 8 "$w.$c.log"',
        '      echo "$k.$c: make failed: $(tail -n 1 "$w.$c.log")" >> "$NPB_MISSING"; fi',
        "  done",
        '  rm -rf "$w"',
        "}",
        "export -f npb_kernel",
        f"printf '%s\\n' $kernels | xargs -P {max(1, int(jobs))} -I{{}} bash -c "
        "'npb_kernel \"$1\"' _ {}",
    ]


def missing_reasons(bin_dir: str | Path) -> dict[str, str]:
    """{"cg.S.x": why} for what the install lacks (its npb-missing.txt)."""
    try:
        text = (Path(bin_dir).parent / MISSING_FILE).read_text(errors="replace")
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        name, sep, why = line.partition(": ")
        if sep:
            out[f"{name.strip()}.x"] = why.strip()
    return out
