"""Benchmark reports: the provenance every report carries and the rendering of the reports into
the blocks of BENCHMARKS.md and docs/RESEARCH.md."""
