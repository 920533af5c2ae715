"""`--ray` on `werewolf evaluate` and `werewolf steer-train` (fake model, a real 2-CPU Ray node on
127.0.0.1): the same result JSON, game databases, records and policy as the serial run, and a
rerun on Ray makes no model call. Also, without Ray: a unit's games do not depend on the units
played before it (what lets them run anywhere), and a game played into memory is stored as
playing it into the store would have stored it."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ray_support import one_node
from typer.testing import CliRunner
from werewolf_helpers import database, hash_embedder

from gtsteer.cli import app
from gtsteer.llm import LLM, ResponseCache
from gtsteer.runs import werewolf_steer
from gtsteer.runs.context import RunContext
from gtsteer.runs.executor import InOrder
from gtsteer.runs.werewolf_evaluate import (
    CONDITIONS,
    EvaluationGame,
    EvaluationSeed,
    chooser_for,
    play_evaluation_seed,
)
from gtsteer.runs.werewolf_steer import SteerTrainConfig, logged_setups
from gtsteer.werewolf.bot_games import GameSetup, PlayedGame, Steering, play_game
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.playstyles import AssignedPlaystyle
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import GameConfig
from gtsteer.werewolf.steering import DistilledPlaystyleChooser
from gtsteer.werewolf.store import GameStore

#: Small games: 5 players, one day, a few discussion turns.
STEER_ARGS = ["--games", "2", "--llm", "fake", "--states", "3", "--iterations", "20",
              "--train-steps", "5", "--max-days", "1", "--players", "5", "--max-messages", "3"]
EVAL_ARGS = ["--games", "2", "--llm", "fake", "--max-days", "1", "--max-messages", "2",
             "--players", "5"]
ON_RAY = ["--ray", "local", "--workers", "2"]


@pytest.fixture(scope="module")
def ray_node() -> Iterator[None]:
    with one_node(cpus=2):
        yield


def run_cli(args: list[str], cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One CLI run with a fresh (or the given) response cache."""
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(cache))
    result = CliRunner().invoke(app, ["werewolf", *args])
    assert result.exit_code == 0, result.output


def untimed(value: Any) -> Any:
    """A result JSON without its wall times (the only fields timing fills)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if "seconds" not in k}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def how_played(report: dict) -> dict:
    """An evaluate.json without how the run went: its command, workers, finish time and
    timings."""
    return untimed({k: v for k, v in report.items()
                    if k not in ("command", "workers", "finished")})


def cache_keys(cache: Path) -> set[str]:
    return set(ResponseCache(cache / "responses")._cache)


# ---- on Ray ------------------------------------------------------------------------------


def test_steer_train_on_ray_equals_serial_and_a_rerun_makes_no_call(
    ray_node: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Logged games and playstyle games as Ray tasks, the training here: the same files."""
    runs = {name: tmp_path / name for name in ("serial", "ray", "again")}
    run_cli(["steer-train", *STEER_ARGS, "-o", str(runs["serial"])], tmp_path / "c-serial",
            monkeypatch)
    run_cli(["steer-train", *STEER_ARGS, *ON_RAY, "-o", str(runs["ray"])], tmp_path / "c-ray",
            monkeypatch)
    run_cli(["steer-train", *STEER_ARGS, *ON_RAY, "-o", str(runs["again"])], tmp_path / "c-ray",
            monkeypatch)
    summary = {name: json.loads((out / "steer_train.json").read_text())
               for name, out in runs.items()}
    serial_calls = summary["serial"].pop("model_calls")
    assert len(summary["serial"]["solved"]) == 3 and serial_calls["new_calls"] > 0
    for name in ("ray", "again"):
        calls = summary[name].pop("model_calls")
        assert untimed(summary[name]) == untimed(summary["serial"])
        # Two playstyle games solved at once can each ask what one would have cached for the
        # other (docs/SCALE.md), so only the total is the serial run's on a fresh cache.
        assert calls["requests"] == serial_calls["requests"]
        for file in ("records.jsonl", "states.jsonl", "policy/config.json",
                     "policy/model.safetensors"):
            assert (runs[name] / file).read_bytes() == (runs["serial"] / file).read_bytes()
    assert database(runs["ray"] / "games.sqlite") == database(runs["serial"] / "games.sqlite")
    assert database(runs["again"] / "games.sqlite", hits=False) == \
        database(runs["serial"] / "games.sqlite", hits=False)
    again = json.loads((runs["again"] / "steer_train.json").read_text())["model_calls"]
    assert again == {"requests": serial_calls["requests"], "cache_hits": serial_calls["requests"],
                     "new_calls": 0}
    assert cache_keys(tmp_path / "c-ray") == cache_keys(tmp_path / "c-serial")


def test_evaluate_on_ray_equals_serial_and_a_rerun_makes_no_call(
    ray_node: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The policy (default embedder) travels as its files; each worker loads it once."""
    steer = tmp_path / "steer"
    run_cli(["steer-train", *STEER_ARGS, "-o", str(steer)], tmp_path / "c-train", monkeypatch)
    runs = {name: tmp_path / name for name in ("serial", "ray", "again")}
    args = ["evaluate", *EVAL_ARGS, "--steer", str(steer)]
    run_cli([*args, "-o", str(runs["serial"])], tmp_path / "c-serial", monkeypatch)
    run_cli([*args, *ON_RAY, "-o", str(runs["ray"])], tmp_path / "c-ray", monkeypatch)
    run_cli([*args, *ON_RAY, "-o", str(runs["again"])], tmp_path / "c-ray", monkeypatch)
    report = {name: json.loads((out / "evaluate.json").read_text())
              for name, out in runs.items()}
    serial = report["serial"]
    assert len(serial["results"]) == 6 and serial["llm_calls"]["new_calls"] > 0
    # win rates, intervals, tokens and the call counts; not how it ran (the command, the
    # workers, when and how long)
    assert how_played(report["ray"]) == how_played(serial)
    assert (serial["workers"], report["ray"]["workers"]) == (1, 2)
    assert "--ray local --workers 2" in report["ray"]["command"]
    assert database(runs["ray"] / "evaluate.sqlite") == database(runs["serial"] / "evaluate.sqlite")
    assert database(runs["again"] / "evaluate.sqlite", hits=False) == \
        database(runs["serial"] / "evaluate.sqlite", hits=False)
    again = report["again"]
    # A rerun reads every structured answer from the cache, and those count 0 tokens.
    assert [{**r, "tokens_per_game": 0} for r in how_played(again)["results"]] == \
        [{**r, "tokens_per_game": 0} for r in how_played(serial)["results"]]
    assert again["llm_calls"] == {"requests": serial["llm_calls"]["requests"],
                                  "cache_hits": serial["llm_calls"]["requests"], "new_calls": 0}
    assert cache_keys(tmp_path / "c-ray") == cache_keys(tmp_path / "c-serial")


# ---- without Ray ------------------------------------------------------------------------


def test_workers_without_ray_is_a_one_line_error(tmp_path: Path) -> None:
    for args in (["steer-train", *STEER_ARGS, "-o", str(tmp_path / "s")],
                 ["evaluate", *EVAL_ARGS, "--steer", str(tmp_path / "s")]):
        result = CliRunner().invoke(app, ["werewolf", *args, "--workers", "2"])
        assert result.exit_code == 2 and "only with --ray local" in result.output
        result = CliRunner().invoke(app, ["werewolf", *args, "--ray", "auto", "--workers", "2"])
        assert result.exit_code == 2 and "--ray local" in result.output
    assert not (tmp_path / "s").exists()  # refused before any work


def records(game: PlayedGame) -> list[dict]:
    calls = [*game.create_records, *(r for _, _, rs in game.steps for r in rs)]
    return [c.model_dump(exclude={"latency_s"}) for c in calls]


def fresh_model() -> LLM:
    return LLM("fake", cache=ResponseCache(tempfile.mkdtemp(prefix="gtsteer-test-")))


def test_an_evaluation_seed_plays_alone_as_in_the_serial_sequence(tmp_path: Path) -> None:
    """A unit played on its own (a worker with nothing cached) gives exactly the games the
    serial run plays after the earlier units: call records with their token counts and cache
    hits included. One game per unit would not: a condition repeats the calls of the one
    before it on the same seed, and a structured answer from the cache counts 0 tokens."""
    policy = tmp_path / "steer"
    werewolf_steer.run(
        SteerTrainConfig(
            games=2, llm="fake", players=5, max_messages=3, max_days=1, states=3, iterations=20,
            train_steps=5), RunContext.of(out=policy, progress=False, embedder=hash_embedder()),
        werewolf_steer.SteerTrainOptions())
    steering = Steering(chooser=DistilledPlaystyleChooser.load(policy, hash_embedder()))
    units = [EvaluationSeed(tuple(
        EvaluationGame(GameSetup(f"eval-{c}-{g}", g, 5, "fake", 1, 2), team, kind)
        for c, (team, kind) in enumerate(CONDITIONS.values())), steering) for g in range(2)]
    shared = fresh_model()
    in_sequence = [play_evaluation_seed(unit, shared) for unit in units]
    alone = [play_evaluation_seed(unit, fresh_model()) for unit in units]
    assert [[records(g) for g in games] for games in alone] == \
        [[records(g) for g in games] for games in in_sequence]
    assert any(r["cached"] for games in in_sequence for g in games for r in records(g))
    # ... and one game per unit differs from the serial sequence:
    first_repeat = units[0].games[1]  # "village uniform" after "neither steered" on seed 0
    one_game = play_game(first_repeat.setup, fresh_model(),
                         chooser_for(first_repeat.team, first_repeat.kind, AssignedPlaystyle()))
    assert records(one_game) != records(in_sequence[0][1])


def test_a_game_played_into_memory_is_stored_as_playing_it_into_the_store(
    tmp_path: Path
) -> None:
    """The driver's copy of a unit's game equals the game played straight into SQLite (the
    serial path before games became units)."""
    cfg = SteerTrainConfig(games=1, llm="fake", players=5, max_messages=3, max_days=1)
    setup = logged_setups(cfg)[0]
    direct = GameStore(tmp_path / "direct.sqlite")
    model = fresh_model()  # each run with nothing cached: the same hits, the same records
    pool = LLMPool(factory=lambda _name: model)
    state = create_game(direct, GameConfig(n_players=5, max_days=1, max_messages_per_day=3),
                        seed=setup.seed, model="fake", game_id=setup.game_id, pool=pool)
    GameRunner(direct, pool).run(state)
    direct.close()
    via_unit = GameStore(tmp_path / "unit.sqlite")
    play_game(setup, fresh_model()).write_to(via_unit)
    via_unit.close()
    stored = database(tmp_path / "unit.sqlite")
    assert len(stored["steps"]) > 10
    assert stored == database(tmp_path / "direct.sqlite")


def test_a_policy_travelling_as_files_chooses_as_the_folder_does(tmp_path: Path) -> None:
    policy = tmp_path / "steer"
    werewolf_steer.run(
        SteerTrainConfig(
            games=2, llm="fake", players=5, max_messages=3, max_days=1, states=3, iterations=20,
            train_steps=5), RunContext.of(out=policy, progress=False, embedder=hash_embedder()),
        werewolf_steer.SteerTrainOptions())
    travelled = Steering.from_folder(policy, hash_embedder()).get()
    loaded = DistilledPlaystyleChooser.load(policy, hash_embedder())
    assert isinstance(travelled, DistilledPlaystyleChooser)
    texts = [json.loads(line)["text"] for line in
             (policy / "records.jsonl").read_text().splitlines()[:5]]
    assert texts and all(travelled.policy.probs(t) == loaded.policy.probs(t) for t in texts)


def test_in_order_writes_results_in_the_units_order() -> None:
    written: list[tuple[int, str]] = []
    on_result = InOrder(lambda i, v: written.append((i, v)))
    for i, v in [(2, "c"), (0, "a"), (3, "d"), (1, "b")]:
        on_result(i, v)
    assert written == [(0, "a"), (1, "b"), (2, "c"), (3, "d")]
