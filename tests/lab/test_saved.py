"""The studies' saved rows (lab/studies/saved.py): a JSON-lines file keeps only its run's whole
rows, and a one-file-a-row ledger is cut back past a gap."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from gtsteer.runs.ledger import Ledger
from lab.studies.saved import append_lines, drop_from, read_lines, write_lines


class Row(BaseModel):
    run_key: str
    index: int
    value: float


def test_a_lines_file_counts_what_it_leaves_out(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    write_lines(path, [Row(run_key="k", index=0, value=0.5)])
    append_lines(path, [Row(run_key="x", index=1, value=1.0),
                        Row(run_key="k", index=2, value=2.0)])
    with path.open("a") as fh:
        fh.write('{"run_key": "k", "index": 3')  # the cut last line of a kill
    kept, dropped = read_lines(path, "k", Row, lambda r: r.index < 2)
    assert (kept, dropped) == ([Row(run_key="k", index=0, value=0.5)], 3)
    assert read_lines(tmp_path / "none.jsonl", "k", Row) == ([], 0)


def test_drop_from_deletes_the_rows_past_a_count(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, "k1", Row)
    for i in range(3):
        ledger.add(i, Row(run_key="k1", index=i, value=i / 2))
    (tmp_path / "stray.json").write_text("{}")  # no row index: removed too
    drop_from(ledger, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.json"]
