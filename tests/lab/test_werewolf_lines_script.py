"""python -m lab werewolf-lines measures a stored game (a fake-model game: no model is loaded) and
renders its section; the play step runs the CLI on a fake model too."""

from __future__ import annotations

from pathlib import Path

from test_bench_docs import load

from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import GameConfig
from gtsteer.werewolf.store import GameStore


def stored_game(folder: Path, seed: int = 0) -> None:
    store = GameStore(folder / "werewolf.sqlite")
    GameRunner(store).run(create_game(store,
                                      GameConfig(n_players=7, max_days=1, max_messages_per_day=3),
                                      seed=seed, model="fake", game_id="g0"))


def test_a_stored_game_is_measured_and_rendered(tmp_path: Path) -> None:
    script = load("werewolf_lines")
    stored_game(tmp_path / "fake")
    row = script.measure("fake", tmp_path / "fake")
    report = row["report"]
    store = GameStore(tmp_path / "fake" / "werewolf.sqlite")
    spoken = [d for d in store.steps("g0") if d.kind == "speak"]
    assert report["lines"] == len(spoken) >= 7  # seven introductions, then the turns
    assert report["distinct"] == len({d.text.lower() for d in spoken})
    assert report["speak_calls"] == len(spoken) and row["game_s"] >= 0 and row["wall_s"] is None
    section = script.render([row], "cmd", "abc1234", label="after")
    start, end = script.benchdoc.markers("werewolf_lines_after")
    assert section.startswith(start) and section.endswith(end)
    assert f"| `fake` | {report['lines']} | " in section
    n = report["lines"]
    first = report["first_try_distinct"]
    assert first is not None and first <= n  # a new game keeps its first tries
    assert (f"| `fake` | {n} | {script.pct(report['distinct'], n)} | {script.pct(first, n)} | "
            in section)
    assert "(after)" in section.splitlines()[1]


def test_play_runs_the_cli_into_the_folder(tmp_path: Path, monkeypatch) -> None:
    script = load("werewolf_lines")
    monkeypatch.setattr(script, "GAME", ["--players", "5", "--max-days", "1", "--max-messages",
                                         "1", "--seed", "0"])
    monkeypatch.setattr(script, "MODEL_PREFIX", "")
    wall = script.play("fake", tmp_path / "fake", script.benchdoc.ROOT)
    assert wall > 0 and (tmp_path / "fake" / "wall_s").exists()
    assert script.measure("fake", tmp_path / "fake")["report"]["lines"] >= 5


def test_games_of_several_seeds_get_a_total_row(tmp_path: Path) -> None:
    script = load("werewolf_lines")
    rows = []
    for seed in (0, 3):
        folder = script.game_folder(tmp_path, "fake", seed)
        stored_game(folder, seed)
        rows.append(script.measure("fake", folder, seed))
    assert {"fake", "fake-seed3"} <= {p.name for p in tmp_path.iterdir()}
    section = script.render(rows, "cmd", "abc1234")
    lines = sum(r["report"]["lines"] for r in rows)
    distinct = sum(r["report"]["distinct"] for r in rows)
    assert f"| `fake`, all 2 games | {lines} | {distinct}/{lines} " in section
    assert "| `fake` seed 3 | " in section and "| `fake` | " in section


def test_a_row_without_first_tries_renders_them_as_not_recorded(tmp_path: Path) -> None:
    """Rows measured from games stored before first tries were kept (or saved before they were
    counted) show n/r, in their own row and in the model's total."""
    script = load("werewolf_lines")
    rows = []
    for seed in (0, 3):
        folder = script.game_folder(tmp_path, "fake", seed)
        stored_game(folder, seed)
        rows.append(script.measure("fake", folder, seed))
    for key in ("first_try_distinct", "first_try_cut", "first_try_empty"):
        del rows[1]["report"][key]
    section = script.render(rows, "cmd", "abc1234")
    total = next(line for line in section.splitlines() if "all 2 games" in line)
    old = next(line for line in section.splitlines() if line.startswith("| `fake` seed 3 |"))
    for line in (total, old):
        cells = [c.strip() for c in line.split("|")]
        assert (cells[4], cells[6], cells[9]) == ("n/r", "n/r", "n/r")
    new = next(line for line in section.splitlines() if line.startswith("| `fake` |"))
    assert "n/r" not in new
