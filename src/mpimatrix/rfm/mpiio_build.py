"""The MPI-IO benchmark (reframe_checks/src/mpiio_bench.c), compiled once per build
with the build's own wrapper (a fixture of reframe_checks/mpiio.py)."""

from __future__ import annotations

import os

from reframe.core.builtins import run_before

from ..paths import project_root
from .fixtures import _Fixture

MPIIO_BENCH = "mpiio_bench"


class MpiioBenchBuild(_Fixture):
    descr = "MPI-IO write benchmark compiled with the build's wrapper"
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]
    sourcesdir = str(project_root() / "reframe_checks" / "src")
    build_system = "CustomBuild"

    @run_before("compile")
    def compile_the_benchmark(self):
        cc = self.current_environ.cc
        self.build_system.commands = [f"{cc} -O2 {MPIIO_BENCH}.c -o {MPIIO_BENCH}"]

    def path(self) -> str:
        return os.path.join(self.stagedir, MPIIO_BENCH)
