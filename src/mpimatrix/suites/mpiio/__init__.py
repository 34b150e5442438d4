"""MPI-IO write bandwidth (reframe_checks/src/mpiio_bench.c): the variants, the
program's output and its sanity."""
