"""Benchmarks that write numbers into docs/BENCHMARKS.md: `python -m lab NAME` runs one
(lab/__main__.py lists them); `benchdoc` is what they share (docs/DESIGN.md)."""
