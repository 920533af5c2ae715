"""The pyspiel game: conformance, perfect recall, every instruction rendered, no duplicates."""

from __future__ import annotations

import pyspiel
import pytest
from binding_support import FRUIT, fruit_spec, scripted_game, walk

import gtsteer
from gtsteer.binding import ANY, DialogueGame, make_game, make_instance
from gtsteer.binding.prompts import message_prompt
from gtsteer.domains import load_game
from gtsteer.domains.fruit_trade import trade_bounds
from gtsteer.testing import ScriptedBackend


def fruit_game(**kw) -> DialogueGame:
    return load_game(FRUIT, llm="fake", instance=0, **kw)


def test_random_sim_test_with_serialization() -> None:
    game = fruit_game()
    pyspiel.random_sim_test(game, num_sims=10, serialize=True, verbose=False)


def test_game_string_rebuilds_the_same_game() -> None:
    game = fruit_game()
    again = pyspiel.load_game(str(game))
    assert isinstance(again, DialogueGame)
    assert again.instance == game.instance and again.spec == game.spec


def test_package_level_load_game() -> None:
    game = gtsteer.load_game(str(FRUIT), llm="fake", instance=2)
    assert isinstance(game, DialogueGame) and game.instance.index == 2


def test_game_shape() -> None:
    game = fruit_game()
    assert game.num_players() == 2
    assert game.num_distinct_actions() == 4
    assert game.max_chance_outcomes() == 2
    assert game.get_type().utility == pyspiel.GameType.Utility.GENERAL_SUM
    assert game.get_type().reward_model == pyspiel.GameType.RewardModel.TERMINAL
    # Bounds derived from this instance's baskets and values: no legal trade can leave them.
    assert (game.min_utility(), game.max_utility()) == trade_bounds(game.spec, game.instance)
    assert game.min_utility() < 0 < game.max_utility()
    assert game.instructions(0) == ["calm", "assertive", "submissive", "any"]
    assert game.any_action(1) == 3


def test_legal_actions_are_unique_instructions_without_recipient() -> None:
    state = fruit_game().new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            assert [a for a, _ in outcomes] == [0, 1]
            assert sum(p for _, p in outcomes) == pytest.approx(1.0)
            state.apply_action(1)
            continue
        names = [state.action_to_string(state.current_player(), a) for a in state.legal_actions()]
        assert names == ["calm", "assertive", "submissive", "any"]  # no recipient dimension
        assert len(set(names)) == len(names)
        state.apply_action(0)


def test_every_instruction_becomes_a_message_including_the_last() -> None:
    game = fruit_game()
    state = game.new_initial_state()
    for action in [1, 0, 2, 1]:  # assertive, sample 0, submissive, sample 1
        state.apply_action(action)
    assert state.is_terminal()
    spec = game.spec
    assert len(state.turns) == spec.num_max_replies * spec.num_players
    assert [(t.speaker, t.instruction) for t in state.turns] == [
        (0, "assertive"), (1, "submissive"),
    ]
    # The last instruction reached the prompt of the last message (and the message does not
    # repeat it).
    last = game.message_request(state.turns[:1], 1, "submissive", (0, 1))
    assert last.prompt.endswith(f"({game.instance.names[1]} writes in a submissive tone.)\n"
                                f"{game.instance.names[1]}:")  # fmt: skip
    assert "submissive" not in state.turns[-1].text.lower()


def test_longer_game_alternates_and_ends_after_max_replies() -> None:
    game = scripted_game(fruit_spec(num_max_replies=3), ScriptedBackend())
    state = game.new_initial_state()
    speakers = []
    while not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(0)
        else:
            speakers.append(state.current_player())
            state.apply_action(3)
    assert speakers == [0, 1, 0, 1, 0, 1]
    assert len(state.turns) == 6
    assert state.returns() == [0.0, 0.0]


def test_any_is_sent_as_no_instruction() -> None:
    spec = fruit_spec()
    inst = make_instance(spec, 0)
    guided = message_prompt(spec, inst, [], 0, "calm")
    unguided = message_prompt(spec, inst, [], 0, ANY)
    assert "calm tone" in guided
    assert "tone" not in unguided
    # No instruction line at all: the speaker tag follows the transcript header directly.
    assert unguided.split("\n")[-2:] == ["Conversation:", f"{inst.names[0]}:"]
    assert unguided.endswith(f"{inst.names[0]}:") and guided.endswith(f"{inst.names[0]}:")
    assert guided.replace(f"({inst.names[0]} writes in a calm tone.)\n", "") == unguided


def _play(game: DialogueGame, actions: list[int]) -> pyspiel.State:
    state = game.new_initial_state()
    for a in actions:
        state.apply_action(a)
    return state


def test_perfect_recall_own_instructions_are_in_the_information_state() -> None:
    # Messages ignore the prompt here, so the public transcripts of both histories are equal:
    # only player 0's own earlier instruction tells them apart.
    game = scripted_game(fruit_spec(num_max_replies=2), ScriptedBackend())
    a = _play(game, [0, 0, 3, 1])  # p0 calm, sample 0, p1 any, sample 1
    b = _play(game, [1, 0, 3, 1])  # p0 assertive, same samples
    assert a.current_player() == b.current_player() == 0
    assert [t.text for t in a.turns] == [t.text for t in b.turns]
    assert a.information_state_string(0) != b.information_state_string(0)
    assert "calm" in a.information_state_string(0)
    assert "assertive" in b.information_state_string(0)
    # Instructions are private: player 1 cannot tell the histories apart.
    assert a.information_state_string(1) == b.information_state_string(1)
    assert a.observation_string(0) == b.observation_string(0)
    # Private information: each player's infostate holds its own info only.
    own = game.instance.private_info
    assert own[0]["fruit_values"] in a.information_state_string(0)
    assert own[1]["fruit_values"] not in a.information_state_string(0)


def test_pending_instruction_is_private_to_its_speaker() -> None:
    game = scripted_game(fruit_spec(), ScriptedBackend())
    a, b = _play(game, [0]), _play(game, [1])
    assert a.is_chance_node()
    assert a.information_state_string(0) != b.information_state_string(0)
    assert a.information_state_string(1) == b.information_state_string(1)


def test_opening_message_and_first_mover() -> None:
    spec = fruit_spec(opening="Hi {name1}, want to trade?", opening_speaker=0)
    game = scripted_game(spec, ScriptedBackend())
    state = game.new_initial_state()
    assert state.current_player() == 1
    assert state.turns[0].text == f"Hi {game.instance.names[1]}, want to trade?"
    assert state.turns[0].instruction is None
    pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)


def test_three_player_game_with_llm_payoffs() -> None:
    spec = fruit_spec(
        players=["a", "b", "c"],
        payoff={"min": 0, "max": 10, "prompt": "{transcript}\nScores:"},
        domain=None,
        private_info={"mood": ["happy", "sad"]},
    )
    game = make_game(spec, make_instance(spec, 0), "fake")
    assert game.num_players() == 3
    pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)


def test_termination_check_once_per_message_and_can_end_early() -> None:
    spec = fruit_spec(
        actions={"tone": ["calm", "any"]},
        num_llm_seeds=1,
        num_max_replies=3,
        termination_prompt="{transcript}\nHave they agreed on a trade (yes or no)? Answer:",
    )
    game = make_game(spec, make_instance(spec, 0), "fake")
    limit = spec.num_max_replies * spec.num_players
    lengths: set[int] = set()

    def visit(state: pyspiel.State) -> None:
        if state.is_terminal():
            lengths.add(len(state.turns))
            # A dialogue ends early exactly when its last message was judged final.
            assert len(state.turns) == limit or game.terminations[state.history_key]
        elif state.turns and not state.is_chance_node():
            assert not game.terminations[state.history_key]

    walk(game.new_initial_state(), visit)
    # One check per message, except messages that reach the length limit (the game ends anyway).
    checked = [h for h in game.messages if len(h) // 2 < limit]
    assert sorted(game.terminations) == sorted(checked)
    assert game.llm.usage.requests == len(game.messages) + len(game.terminations)
    assert min(lengths) < limit  # some dialogues end early


def test_multi_key_actions() -> None:
    spec = fruit_spec(
        actions={"tone": ["calm", "any"], "day": ["Monday", "any"]},
        instruction_templates={"tone": "(Use a {value} tone.)", "day": "(Propose {value}.)"},
    )
    game = make_game(spec, make_instance(spec, 0), "fake")
    assert game.instructions(0)[game.any_action(0)] == "tone=any|day=any"
    inst = game.instance
    prompt = message_prompt(spec, inst, [], 0, "tone=any|day=Monday")
    assert "(Propose Monday.)" in prompt and "tone" not in prompt
    pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)


def test_instance_out_of_range() -> None:
    with pytest.raises(ValueError, match="instance 5"):
        load_game(FRUIT, instance=5, num_games=3)


def test_clean_message_drops_a_leading_speaker_tag() -> None:
    from gtsteer.binding import Instance
    from gtsteer.binding.prompts import clean_message

    inst = Instance(index=0, seed=0, names=["Emma", "David"], private_info=[{}, {}],
                    scenario="")
    assert clean_message("Emma: I was at home.\nDavid: No.", inst) == "I was at home."
    assert clean_message("  David:  Where were you?", inst) == "Where were you?"
    assert clean_message("I told Emma: come.", inst) == "I told Emma: come."
    assert clean_message("\n\nEmma: x", inst) == "x"
