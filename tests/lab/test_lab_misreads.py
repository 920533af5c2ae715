"""`python -m lab misreads` (issue 57 item 4): counter-proposals the reward reader paid, counted
from a solved meeting tree's terminals with no model call."""

from __future__ import annotations

import json
from pathlib import Path

from lab.studies import misreads

PREFS = ["Monday: 9, Tuesday: 4, Wednesday: 7, Thursday: 2, Friday: 8, Saturday: 1, Sunday: 3",
         "Monday: 2, Tuesday: 6, Wednesday: 5, Thursday: 9, Friday: 3, Saturday: 1, Sunday: 8"]
GAME = {"index": 3, "status": "solved", "instance": {"private_info": [
    {"out_of_office": "Friday", "day_preferences": PREFS[0]},
    {"out_of_office": "Sunday", "day_preferences": PREFS[1]}]}}


def terminal(offer: str, reply: str, raw: list[float]) -> dict:
    return {"turns": [{"text": offer}, {"text": reply}], "raw": raw, "returns": raw}


TERMINALS = [
    terminal("Shall we meet on Monday?", "Monday works for me.", [9, 2]),  # agreed, paid
    terminal("Shall we meet on Monday?", "Monday is fine.", [0, 0]),  # agreed, not paid
    terminal("Monday?", "How about Thursday instead?", [9, 2]),  # misread: the proposal
    terminal("Monday?", "I prefer Thursday.", [2, 9]),  # misread: the reply's day
    terminal("Monday?", "Tuesday, not Monday.", [0, 0]),  # counter, read right
    terminal("Let's meet soon.", "Thursday?", [2, 9]),  # no proposal: not counted
]


def test_counter_proposals_paid_are_counted_with_the_day_the_payoff_matches() -> None:
    count = misreads.count_game(GAME, TERMINALS, ["Monday", "Tuesday", "Wednesday", "Thursday",
                                                  "Friday", "Saturday", "Sunday"])
    assert count.model_dump() == {
        "instance": 3, "terminals": 6, "counter": 3, "counter_paid": 2,
        "counter_paid_proposal": 1, "counter_paid_counter": 1, "same": 2, "same_paid": 1}


def test_the_command_writes_the_counts_and_renders_them_from_the_data(tmp_path: Path) -> None:
    run = tmp_path / "solve"
    (run / "games").mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"config": "schedule_meeting_dow",
                                                  "model": "local"}))
    for i in (0, 1):
        (run / "games" / f"{i}.json").write_text(json.dumps({**GAME, "index": i}))
        (run / "games" / f"{i}.terminals.jsonl").write_text(
            "".join(json.dumps(t) + "\n" for t in TERMINALS[: 4 + i]))
    data, doc = tmp_path / "data", tmp_path / "B.md"
    misreads.main([str(run), "--name", "meeting", "--data", str(data), "--doc", str(doc)])
    saved = json.loads((data / "meeting.json").read_text())
    assert [r["counter"] for r in saved["instances"]] == [2, 3]
    assert [r["counter_paid"] for r in saved["instances"]] == [2, 2]
    text = doc.read_text()
    # 4 paid of 5 counter-proposals pooled; per instance 2/2 and 2/3: mean 0.833
    assert "| `meeting` | `schedule_meeting_dow` | 2 | 2 | 5 | 4 (80% [" in text
    assert "| 83% [" in text
    before = text
    misreads.main(["--render-only", "--data", str(data), "--doc", str(doc)])
    assert doc.read_text() == before
