"""Layer 1: MPI builds — the record, per-family facts, and where builds come from."""
