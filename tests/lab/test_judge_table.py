"""python -m lab steering-table end to end on the fake writer and the real MiniLM judge (offline):
validation first, a config no judge passes is refused, the section, table.json and the PNG."""

from __future__ import annotations

import json
from pathlib import Path

from gtsteer.evals.validation import ClassifierValidation

ROOT = Path(__file__).resolve().parents[2]


def load_script():
    from lab.studies import steering_table

    return steering_table


def test_table_validates_refuses_and_renders(tmp_path: Path) -> None:
    table = load_script()
    doc, png, results = tmp_path / "BENCHMARKS.md", tmp_path / "t.png", tmp_path / "results"
    table.main(["--models", "fake", "--configs", "gtsteer/configs/schedule_meeting_dow.yaml",
                "gtsteer/configs/trade_fruit_tone.yaml", "--results", str(results),
                "--doc", str(doc), "--png", str(png)])
    text = doc.read_text()
    start, end = table.START, table.END
    assert text.count(start) == 1 and text.count(end) == 1
    # MiniLM passes days (98% without definitions, chosen: its interval starts higher) and
    # fails fruit tone, which is refused rather than measured.
    assert "| `embed:all-MiniLM-L6-v2` | schedule_meeting_dow | **98% [88%, 100%]** |" in text
    assert "| schedule_meeting_dow | `fake` | `embed:all-MiniLM-L6-v2` (plain) |" in text
    assert "Not measured (no judge passed its labelled messages): trade_fruit_tone." in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads((results / "table.json").read_text())
    (row,) = saved["rows"]
    assert (row["config"], row["writer"], row["variant"]) == ("schedule_meeting_dow", "fake",
                                                              "plain")
    assert row["accuracy"]["n"] == 14 and row["empty"]["n"] == 16  # 7 days x 2; + 2 unguided
    # Rendering again from what was saved loads no model and gives the same table.
    again = tmp_path / "again.md"
    table.main(["--render-only", "--results", str(results), "--doc", str(again),
                "--png", str(tmp_path / "again.png"), "--configs",
                "gtsteer/configs/schedule_meeting_dow.yaml"])
    body = again.read_text().split("### The judges", 1)[1]
    assert body == text.split("### The judges", 1)[1]


def test_judge_for_takes_the_first_passing_judge() -> None:
    table = load_script()

    def v(judge: str, variant: str, low: float, passes: bool) -> ClassifierValidation:
        acc = {"correct": 1, "n": 2, "accuracy": 0.5, "ci_low": low, "ci_high": 0.9}
        return ClassifierValidation(judge=judge, config="c", key="k", variant=variant,
                                    accuracy=acc, chance=0.33, passes=passes, per_value=[],
                                    values=[], counts=[])

    found = [v("embed:m", "plain", 0.2, False), v("embed:m", "definitions", 0.2, False),
             v("local:a", "plain", 0.4, True), v("local:a", "definitions", 0.5, True)]
    assert table.judge_for("c", ["embed", "local:a"], found) == ("local:a", "definitions")
    assert table.judge_for("c", ["embed"], found) is None
    assert table.judge_for("other", ["local:a"], found) is None
