"""Layer 5: running ReFrame sessions (mpimatrix run) and reading stored ones."""
