"""Benchmarks that write numbers into docs/BENCHMARKS.md: `gtsteer bench NAME` runs one
(gtsteer/cli/bench.py lists them); `benchdoc` is what they share (docs/DESIGN.md)."""
