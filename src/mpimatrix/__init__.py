"""mpimatrix: glue between MPI builds (Spack or the machine's own) and ReFrame checks."""

__version__ = "0.1.0"
