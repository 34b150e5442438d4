"""The NPB kernels the checks run, the process counts each allows, the classes, and the
performance variables of every run.

NPB 3.4 fixes the class (problem size) when a kernel is compiled (`make cg CLASS=S`
gives bin/cg.S.x) and takes the process count at run time: IS, EP, CG, FT, MG and LU
need a power of two, BT and SP a square (on any other count they run on the largest
square below it and say "Active procs" < "Total processes"). IS is C; the others are
Fortran, so an MPI without Fortran bindings runs IS only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..common import Metric

#: Class S: seconds a kernel on 2 ranks (the quick profile); class A: the standard
#: smallest problem (seconds to a minute on a few ranks).
CLASSES = ("S", "A")

#: Mop/s total (NPB's own rate, higher is better) and the time it took (s).
METRICS = (
    Metric("mops_total", "mops_total", ("mops_total",), None, "Mop/s", True),
    Metric("time", "time", ("time",), None, "s"),
)


def power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def square(n: int) -> bool:
    return n > 0 and math.isqrt(n) ** 2 == n


@dataclass(frozen=True)
class NpbKernel:
    name: str  # "CG"
    language: str  # "fortran" or "c"
    squares: bool = False  # BT, SP: a square process count; else a power of two
    what: str = ""

    def allows(self, ranks: int) -> bool:
        """A process count the kernel uses in full: a square (1, 4, 9 ...) for BT and
        SP, a power of two from 2 up for the others (one rank exchanges nothing)."""
        return square(ranks) if self.squares else ranks >= 2 and power_of_two(ranks)

    @property
    def rule(self) -> str:
        return "a square process count" if self.squares else "a power of two from 2"

    def binary(self, klass: str) -> str:
        return f"{self.name.lower()}.{klass}.x"


KERNELS: tuple[NpbKernel, ...] = (
    NpbKernel("IS", "c", what="integer sort: random memory access, all-to-all"),
    NpbKernel("EP", "fortran", what="embarrassingly parallel: random numbers, little MPI"),
    NpbKernel("CG", "fortran", what="conjugate gradient: irregular communication"),
    NpbKernel("FT", "fortran", what="3D FFT: all-to-all"),
    NpbKernel("MG", "fortran", what="multigrid: near and far neighbours"),
    NpbKernel("LU", "fortran", what="LU Gauss-Seidel solver: many small messages"),
    NpbKernel("BT", "fortran", squares=True, what="block tri-diagonal solver"),
    NpbKernel("SP", "fortran", squares=True, what="scalar penta-diagonal solver"),
)

BY_NAME = {k.name: k for k in KERNELS}


@dataclass(frozen=True)
class NpbBenchmark:
    """One kernel at one class: what a test case runs (perf.py's catalogue entry)."""

    kernel: NpbKernel
    klass: str

    @property
    def name(self) -> str:
        return f"{self.kernel.name}.{self.klass}"

    @property
    def binary(self) -> str:
        return self.kernel.binary(self.klass)

    @property
    def metrics(self) -> tuple[Metric, ...]:
        return METRICS
