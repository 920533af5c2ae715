"""One Werewolf setup (issue 41 item 6): `GameConfig` is declared once and is what the engine,
the runner, the web lobby and the replay pass around; the rules' bounds are written once."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from werewolf_helpers import table

from gtsteer.werewolf import engine, replay, runner
from gtsteer.werewolf.replay import initial_state
from gtsteer.werewolf.rules import default_wolves
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import GameConfig, load_snapshot
from gtsteer.werewolf.store import GameStore
from gtsteer.werewolf.web import manager
from gtsteer.werewolf.web.schemas import CreateGame

#: Every field away from its default, so a field that is dropped on the way shows.
UNUSUAL = GameConfig(n_players=7, n_wolves=1, maniac=False, max_days=2, max_messages_per_day=3,
                     intro=False, rules="simple", ties="random")


def test_every_setup_field_is_away_from_its_default_here() -> None:
    moved = {k for k in GameConfig.model_fields
             if getattr(UNUSUAL, k) != getattr(GameConfig(n_players=7), k)}
    assert moved == set(GameConfig.model_fields) - {"n_players"}


def test_no_setup_field_is_spelled_again_as_a_keyword() -> None:
    """`new_game` and `create_game` take the setup as one `GameConfig`, not field by field."""
    fields = set(GameConfig.model_fields)
    for fn in (engine.new_game, runner.create_game):
        params = inspect.signature(fn).parameters
        assert params["config"].annotation in ("GameConfig | None", GameConfig | None)
        assert fields.isdisjoint(params), (fn.__name__, fields & set(params))
    for module in (replay, manager):  # no bridge matching config fields to parameters
        assert "inspect.signature" not in Path(module.__file__).read_text()


def test_a_whole_setup_reaches_the_stored_game_and_its_replay(tmp_path) -> None:
    store = GameStore(tmp_path / "s.sqlite")
    state = create_game(store, UNUSUAL, seed=4, game_id="u")
    assert state.config == UNUSUAL and store.load("u").config == UNUSUAL
    assert state.phase == "discussion"  # intro=False reached the engine
    assert [p.role.value for p in state.players].count("werewolf") == 1
    assert "maniac" not in {p.role.value for p in state.players}
    final = GameRunner(store).run(state)
    assert final.config == UNUSUAL and final.day <= 2
    start = initial_state(store.load("u"))
    assert start.config == UNUSUAL and start.model_dump() == state.model_dump()
    assert len(list(replay.replay(final, store.steps("u")))) == final.step


def test_the_lobby_builds_the_same_setup() -> None:
    req = CreateGame(players=7, wolves=1, max_days=2, max_messages_per_day=3,
                     rules={"rules": "simple", "ties": "random"})
    assert req.to_config() == UNUSUAL.model_copy(update={"maniac": True, "intro": True})
    assert CreateGame().to_config() == GameConfig(max_messages_per_day=8)


def test_wolves_and_maniac_default_by_size_and_stay_as_stored() -> None:
    for n in range(5, 13):
        cfg = GameConfig(n_players=n)
        assert (cfg.n_wolves, cfg.maniac) == (default_wolves(n), n >= 6)
        assert GameConfig(n_players=n, n_wolves=None, maniac=None) == cfg
    assert GameConfig() == GameConfig(n_players=7, n_wolves=2, maniac=True)
    stored = GameConfig(n_players=9, n_wolves=1, maniac=False)
    assert GameConfig.model_validate_json(stored.model_dump_json()) == stored
    assert load_snapshot(_snapshot(stored)).config == stored


def _snapshot(config: GameConfig) -> str:
    cast = [(f"P{i}", "", "balanced") for i in range(config.n_players)]
    return engine.new_game(cast, config).model_dump_json()


# ---- bounds, written once in rules.py ---------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def test_speaker_bounds_are_the_rules_own() -> None:
    from gtsteer.werewolf import router, rules
    from gtsteer.werewolf.engine import IllegalDecision, pending, step
    from gtsteer.werewolf.state import Decision

    assert (router.MIN_SPEAKERS, router.MAX_SPEAKERS) == (rules.MIN_SPEAKERS, rules.MAX_SPEAKERS)
    state = table("WWDTMVVVV", intro=False)
    legal = pending(state).legal_targets
    most = legal[:rules.MAX_SPEAKERS]
    assert step(state, Decision(kind="route", speakers=most)).queue == most
    with pytest.raises(IllegalDecision, match=f"router must pick 1 to {rules.MAX_SPEAKERS} of"):
        step(state, Decision(kind="route", speakers=legal[:rules.MAX_SPEAKERS + 1]))


def test_no_player_count_bounds_outside_the_rules() -> None:
    """5..12 players is `rules.MIN_PLAYERS`/`MAX_PLAYERS`; drivers, options and the lobby
    read them (the lobby from /api/config)."""
    literal = re.compile(r"ge=5,\s*le=12|\(5\.\.12\)|min=\"5\"\s+max=\"12\"|k <= 5\b")
    found = [str(p.relative_to(ROOT)) for p in (ROOT / "gtsteer").rglob("*")
             if p.suffix in (".py", ".html", ".js") and literal.search(p.read_text())]
    assert found == []
    from gtsteer.runs.werewolf_evaluate import EvaluateConfig
    from gtsteer.runs.werewolf_steer import SteerTrainConfig
    from gtsteer.werewolf.rules import MAX_PLAYERS, MIN_PLAYERS

    for model in (EvaluateConfig, SteerTrainConfig):
        with pytest.raises(ValueError, match=f"greater than or equal to {MIN_PLAYERS}"):
            model(players=MIN_PLAYERS - 1)
        with pytest.raises(ValueError, match=f"less than or equal to {MAX_PLAYERS}"):
            model(players=MAX_PLAYERS + 1)
    assert "config.max_players" in (ROOT / "gtsteer/werewolf/web/static/lobby.js").read_text()
