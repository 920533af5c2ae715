"""Studies that write numbers into docs (Table 1: `python -m lab table1`; the others: `gtsteer
study NAME`), and the playthrough recorder behind tests/data/playthroughs (docs/DESIGN.md)."""
