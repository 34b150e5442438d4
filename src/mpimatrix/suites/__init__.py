"""Layer 1: benchmark suites (IMB, OSU, the probes): catalogues, output parsers, sanity."""
