"""NAS Parallel Benchmarks (MPI): the kernels, their output and its sanity."""
