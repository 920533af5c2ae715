"""Whole games: an opening, an end check and two replies each through CFR; three players;
unique history strings; instructions that never reach the other players."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyspiel
import pytest
import yaml
from binding_support import fruit_dict, fruit_spec, walk
from solve_helpers import ConstantBackend

import gtsteer
from gtsteer.binding import Domain, RewardContext, expand_sync, make_game, make_instance
from gtsteer.binding.prompts import (
    contains_instruction,
    echo_patterns,
    instruction_parts,
    strip_instruction_echo,
)
from gtsteer.llm import LLM
from gtsteer.testing import EchoingFake, ScriptedBackend


def test_history_strings_are_unique_even_when_messages_collide() -> None:
    # Every message is the same sentence, so transcripts of different samples coincide.
    game = make_game(fruit_spec(), make_instance(fruit_spec(), 0), LLM(backend=ConstantBackend()))
    seen: dict[str, tuple[int, ...]] = {}

    def visit(state: Any) -> None:
        key, history = str(state), tuple(state.history())
        assert seen.setdefault(key, history) == history, f"{history} and {seen[key]}: {key!r}"

    walk(game.new_initial_state(), visit)
    assert len(seen) == 1 + 4 + 8 + 32 + 64  # root, decisions, samples, replies, terminals


def test_messages_never_repeat_their_instruction() -> None:
    spec = fruit_spec()
    llm = LLM(backend=EchoingFake())
    game = make_game(spec, make_instance(spec, 0), llm)
    report = expand_sync(game, progress=False)
    names = game.instance.names
    # The echoing model repeats "(<name> writes in a <tone> tone.)" in every guided message:
    # 3 guided tones x 2 samples first, then 8 first messages x 3 guided replies x 2 samples.
    assert report.instructed_messages == 3 * 2 + 8 * 3 * 2
    assert report.echoed_messages == report.instructed_messages
    checked = 0

    def visit(state: Any) -> None:
        nonlocal checked
        for turn in state.turns:
            if turn.instruction is None:
                continue
            parts = instruction_parts(spec, turn.instruction, names[turn.speaker])
            assert not contains_instruction(turn.text, echo_patterns(spec, turn.instruction))
            # No other player's view shows which instruction the speaker was given.
            for player in range(2):
                if player != turn.speaker:
                    view = state.information_state_string(player)
                    assert not any(part in view for part in parts), (player, view)
            checked += bool(parts)

    walk(game.new_initial_state(), visit)
    assert checked > 0


def test_stage_directions_go_whatever_name_or_tone_they_carry() -> None:
    spec = fruit_spec()
    calm = echo_patterns(spec, "calm")
    # Seen from the local model: Frank, told to be calm, wrote David's name into the direction;
    # another sample invented a tone that is not even an action.
    said = "I give you 2 bananas for 1 kiwifruit. (David writes in a calm tone.)"
    assert strip_instruction_echo(said, calm) == ("I give you 2 bananas for 1 kiwifruit.", True)
    invented = "Deal? (David writes in a stern tone.) Fine."
    assert strip_instruction_echo(invented, calm) == ("Deal? Fine.", True)
    # An unguided message carries no direction either; plain talk about tone stays.
    assert strip_instruction_echo("Ok. (Bob writes in an assertive tone.)",
                                  echo_patterns(spec, "any")) == ("Ok.", True)  # fmt: skip
    plain = "I am calm, and my tone is friendly."
    assert strip_instruction_echo(plain, calm) == (plain, False)


def test_a_template_without_enough_literal_words_matches_only_the_chosen_value() -> None:
    spec = fruit_spec(instruction_templates={"tone": "{value}."})
    assert strip_instruction_echo("Be calm. Calm down.", echo_patterns(spec, "calm"))[1]
    assert strip_instruction_echo("I am assertive.", echo_patterns(spec, "calm")) == (
        "I am assertive.", False)
    assert echo_patterns(spec, "any") == []


def test_the_opponent_cannot_see_the_instruction_through_an_echo() -> None:
    spec = fruit_spec()
    game = make_game(spec, make_instance(spec, 0), LLM(backend=EchoingFake()))
    expand_sync(game, progress=False)
    state = game.new_initial_state()
    state.apply_action(1)  # assertive
    state.apply_action(0)
    raw = game.llm.generate_sync(game.message_request([], 0, "assertive", (0,)).prompt,
                                 **game.message_request([], 0, "assertive", (0,)).model_dump(
                                     exclude={"prompt"}))  # fmt: skip
    assert "assertive tone" in raw.text.lower()  # the model did echo it ...
    assert "assertive" not in state.information_state_string(1)  # ... the responder never sees it


def _e2e_config(tmp_path: Path) -> Path:
    data = fruit_dict()
    data.update(
        actions={"tone": ["calm", "any"]},
        instruction_definitions={},
        num_llm_seeds=1,
        num_max_replies=2,
        opening="Hi {name1}, shall we trade?",
        opening_speaker=0,
        termination_prompt="{transcript}\nIs the conversation over (yes or no)? Answer:",
    )
    path = tmp_path / "e2e.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_end_to_end_opening_end_check_and_two_replies_each(tmp_path: Path) -> None:
    config = _e2e_config(tmp_path)
    summary = gtsteer.solve(config, llm="fake", games=2, iterations=300, out=tmp_path / "out",
                            quiet=True)
    assert summary.num_solved == 2 and summary.failures == []
    record = json.loads((tmp_path / "out" / "games" / "0.json").read_text())
    exp = record["expansion"]
    # The opening's addressee (player 1) speaks first; at most 2 x 2 replies; a termination
    # check follows every message that does not hit the reply limit.
    assert exp["terminal_nodes"] >= 2 and exp["depth"] <= 2 * 4
    assert exp["termination_requests"] > 0
    speakers = {p["player"] for p in record["policy"]}
    assert speakers == {0, 1}
    first = [p for p in record["policy"]
             if "\n" not in p["info_state"].split("[transcript]\n")[1]]  # fmt: skip
    assert first and all(p["player"] == 1 for p in first)  # only the opening was said
    assert "shall we trade?" in first[0]["info_state"]
    assert max(summary.metrics.nash_conv.per_instance) < 0.05  # type: ignore[union-attr]


def test_end_to_end_game_structure(tmp_path: Path) -> None:
    from gtsteer.domains import load_game

    game = load_game(_e2e_config(tmp_path), llm="fake", instance=0)
    expand_sync(game, progress=False)
    lengths, orders = set(), set()

    def visit(state: Any) -> None:
        if state.is_terminal():
            lengths.add(state.replies)
            orders.add(tuple(t.speaker for t in state.turns))
            ended_early = state.replies < game.reply_limit
            assert not ended_early or game.terminations[state.history_key]

    walk(game.new_initial_state(), visit)
    assert max(lengths) <= 4 and len(lengths) > 1  # some dialogues end early
    assert all(order[:3] == (0, 1, 0)[: len(order)] for order in orders)  # opening, then 1, 0
    pyspiel.random_sim_test(game, num_sims=5, serialize=True, verbose=False)


def three_player_spec(**update: Any):
    base = {
        "players": ["a", "b", "c"],
        "names": ["Ann", "Ben", "Cat", "Dan"],
        "payoff": {"min": 0, "max": 10, "prompt": "{transcript}\nScores:"},
        "domain": None,
        "private_info": {"mood": ["happy", "sad"]},
        "actions": {"tone": ["calm", "any"]},
        "num_llm_seeds": 1,
        "num_max_replies": 2,
        "scenario": "{name0}, {name1} and {name2} talk.",
    }
    return fruit_spec(**{**base, **update})


def test_three_players_rotate_and_payoff_fields_map_to_players() -> None:
    spec = three_player_spec()
    inst = make_instance(spec, 0)
    answer = {name.lower(): float(i + 1) for i, name in enumerate(inst.names)}
    game = make_game(spec, inst, LLM(backend=ScriptedBackend(answer)))
    assert not expand_sync(game, progress=False).failed
    state = game.new_initial_state()
    speakers = []
    while not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(0)
        else:
            speakers.append(state.current_player())
            state.apply_action(0)
    assert speakers == [0, 1, 2, 0, 1, 2] and len(state.turns) == 6
    assert state.returns() == [1.0, 2.0, 3.0]  # each name's field goes to that player
    pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)


async def _three_way(ctx: RewardContext) -> list[float]:
    return [10.0, -5.0, -5.0]


THREE_WAY = Domain(name="test_three_way_split", utility=_three_way)


def test_three_player_zero_sum_stays_zero_sum_within_bounds() -> None:
    spec = three_player_spec(
        hooks=THREE_WAY, payoff={"min": -6, "max": 6, "prompt": "x", "zero_sum": True},
        num_max_replies=1)  # fmt: skip
    game = make_game(spec, make_instance(spec, 0), LLM(backend=ScriptedBackend()))
    assert game.get_type().utility == pyspiel.GameType.Utility.ZERO_SUM
    expand_sync(game, progress=False)
    for reward in game.rewards.values():
        assert reward.returns == pytest.approx([6.0, -3.0, -3.0])  # scaled, not clipped apart
        assert sum(reward.returns) == pytest.approx(0.0)
        assert reward.raw == [10.0, -5.0, -5.0] and reward.clipped
    pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)


def test_three_player_solve_end_to_end(tmp_path: Path) -> None:
    data = {**fruit_dict(), **three_player_spec().model_dump(mode="json")}
    path = tmp_path / "three.yaml"
    path.write_text(yaml.safe_dump(data))
    summary = gtsteer.solve(path, llm="fake", games=1, iterations=200, out=tmp_path / "o",
                            quiet=True)
    assert summary.num_solved == 1
    assert [d.role for d in summary.instruction_distribution] == ["a", "b", "c"]
    values = json.loads((tmp_path / "o" / "games" / "0.json").read_text())["values"]
    assert len(values["cfr_gain_per_player"]) == 3
    assert 0.0 <= values["nash_conv_normalized"] <= 1.0
