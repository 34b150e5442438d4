"""OSU Micro-Benchmarks: catalogue, options per version, known issues, parser, sanity."""
