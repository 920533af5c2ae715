"""Saved state carries a schema version; older Werewolf snapshots and databases are migrated,
others are refused naming both versions (issue 27, item 10).

The fixtures were written by gtsteer 75b91b7, before night results became a list of deaths:
`data/werewolf_snapshot_v1.json` (a game on day 2 after one night kill) and
`data/werewolf_db_v0.sql` (that game in progress and a finished one, as `sqlite3 .dump`).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gtsteer
from gtsteer.cli import app
from gtsteer.werewolf.runner import GameRunner
from gtsteer.werewolf.state import STATE_VERSION, SnapshotError, load_snapshot
from gtsteer.werewolf.store import DB_VERSION, GameStore, StoreError

DATA = Path(__file__).parents[1] / "data"
OLD_SNAPSHOT = DATA / "werewolf_snapshot_v1.json"
OLD_DB = DATA / "werewolf_db_v0.sql"
runner = CliRunner()


def old_db(tmp_path: Path) -> Path:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(OLD_DB.read_text(encoding="utf-8"))
    conn.close()
    return path


def test_an_old_snapshot_is_migrated_mechanically() -> None:
    raw = json.loads(OLD_SNAPSHOT.read_text())
    assert raw["night_results"] == [{"night": 1, "killed": "Kaja", "role": "villager"}]
    state = load_snapshot(OLD_SNAPSHOT.read_text(), str(OLD_SNAPSHOT))
    assert state.schema_version == STATE_VERSION == 2
    assert [(r.night, [(d.name, d.role.value, d.cause) for d in r.deaths])
            for r in state.night_results] == [(1, [("Kaja", "villager", "werewolves")])]
    assert state.config.rules == "simple"  # the table that game was played under
    # written at dawn of day 2, about day 1 (what Summary.day means now)
    assert {(x.day, x.bot) for x in state.summaries} == {(1, "Bram"), (1, "Clara"),
                                                         (1, "Elin"), (1, "Hugo")}
    assert state.players[4].name == "Kaja" and not state.players[4].alive


def test_a_night_without_a_death_migrates_to_no_deaths() -> None:
    raw = json.loads(OLD_SNAPSHOT.read_text())
    raw["night_results"] = [{"night": 1, "killed": None, "role": None}]
    raw["players"][4].update(alive=True, died_day=None, cause=None)
    assert load_snapshot(json.dumps(raw)).night_results[0].deaths == []


def test_act_replays_a_decision_from_an_old_snapshot() -> None:
    """`werewolf act --snapshot` refused this file with a raw pydantic extra_forbidden dump."""
    result = runner.invoke(app, ["werewolf", "act", "--snapshot", str(OLD_SNAPSHOT),
                                 "--bot", "Bram", "--action", "vote", "--llm", "fake"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)  # the JSON alone: the usage line goes to stderr
    assert payload["kind"] == "vote" and payload["target"] in payload["legal_targets"]
    assert sorted(payload["legal_targets"]) == ["Clara", "Elin", "Hugo"]


def test_a_newer_snapshot_is_refused_naming_both_versions(tmp_path: Path) -> None:
    raw = json.loads(OLD_SNAPSHOT.read_text())
    raw["schema_version"] = 7
    path = tmp_path / "future.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(SnapshotError, match="schema version 7 .* writes version 2"):
        load_snapshot(path.read_text(), str(path))
    result = runner.invoke(app, ["werewolf", "act", "--snapshot", str(path), "--bot", "Bram",
                                 "--action", "vote", "--llm", "fake"])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "schema version 7" in text and "version 2" in text and "Traceback" not in text


def test_a_bad_snapshot_is_one_line_naming_the_field(tmp_path: Path) -> None:
    raw = json.loads(OLD_SNAPSHOT.read_text())
    raw["players"][0]["colour"] = "red"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw))
    result = runner.invoke(app, ["werewolf", "act", "--snapshot", str(path), "--bot", "Bram",
                                 "--action", "vote", "--llm", "fake"])
    assert result.exit_code == 2
    assert "players.0.colour: Extra inputs are not permitted" in " ".join(result.output.split())
    assert "errors.pydantic.dev" not in result.output


def test_an_old_database_is_migrated_and_its_game_resumes(tmp_path: Path) -> None:
    path = old_db(tmp_path)
    store = GameStore(path)
    assert store.conn.execute("PRAGMA user_version").fetchone()[0] == DB_VERSION == 1
    assert [g[0] for g in store.games()] == ["old1", "old2"]
    finished = store.load("old2")
    assert [r.killed for r in finished.night_results] == [[], [], ["Hugo"]]
    assert finished.winner == "werewolves"
    columns = {r[1] for r in store.conn.execute("PRAGMA table_info(llm_calls)")}
    assert {"sent", "day"} <= columns
    assert len(store.calls("old1")) == 3  # old rows read with the new columns' defaults
    state = store.load("old1")
    assert state.step == 20 and state.config.rules == "simple"
    assert {r[0] for r in store.conn.execute(
        "SELECT day FROM summaries WHERE game_id='old1'")} == {1}
    final = GameRunner(store).run(state)
    assert final.over and final.step > 20
    steps = [r[0] for r in store.conn.execute(
        "SELECT step FROM steps WHERE game_id='old1' ORDER BY step")]
    assert steps == list(range(1, final.step + 1))
    store.close()
    again = GameStore(path)  # a second open migrates nothing more
    assert again.load("old1").step == final.step


def test_a_newer_database_is_refused_naming_both_versions(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    GameStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 9")
    conn.close()
    with pytest.raises(StoreError, match="schema version 9; this gtsteer reads versions 0 to 1"):
        GameStore(path)
    result = runner.invoke(app, ["werewolf", "list", "--db", str(path)])
    assert result.exit_code == 2 and "schema version 9" in result.output


def test_result_files_carry_a_schema_version(tmp_path: Path) -> None:
    import solve_helpers  # noqa: F401  (registers the test utility)
    from solve_helpers import MIXED_2X2, ConstantBackend

    from gtsteer.llm import LLM
    from gtsteer.runs.solve_schema import SCHEMA_VERSION

    gtsteer.solve(MIXED_2X2, llm=LLM(backend=ConstantBackend()), games=1, iterations=10,
                  out=tmp_path, quiet=True)
    assert json.loads((tmp_path / "summary.json").read_text())["schema_version"] == SCHEMA_VERSION
    game = json.loads((tmp_path / "games" / "0.json").read_text())
    assert game["schema_version"] == SCHEMA_VERSION
