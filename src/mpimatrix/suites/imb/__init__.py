"""Intel MPI Benchmarks: catalogue, output parser, sanity."""
