"""The lab: the benchmarks and studies that measure gtsteer and write this repository's docs
(docs/BENCHMARKS.md, TABLE1.md, the results sections of the other pages). Run as
`python -m lab NAME` (lab/__main__.py). Not shipped in the gtsteer wheel; it imports gtsteer,
and gtsteer never imports it (tests/project/test_conformance.py)."""
