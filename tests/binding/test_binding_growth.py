"""Growing an instruction set at run time keeps every earlier action id (PSRO's contract)."""

from __future__ import annotations

import pytest
from binding_support import fruit_spec

from gtsteer.binding import ConfigError


def test_single_key_growth_appends_one_action() -> None:
    spec = fruit_spec()
    grown = spec.with_added_instruction("tone", "  sarcastic ")
    assert grown.instructions() == [*spec.instructions(), "sarcastic"]
    assert grown.actions["tone"][-1] == "sarcastic" and grown.grown == [("tone", "sarcastic")]
    assert spec.instructions() == ["calm", "assertive", "submissive", "any"]  # unchanged


def test_multi_key_growth_never_renumbers_earlier_actions() -> None:
    spec = fruit_spec(actions={"tone": ["calm", "any"], "offer": ["fair", "any"]})
    old = spec.instructions()
    first = spec.with_added_instruction("tone", "angry")
    second = first.with_added_instruction("offer", "greedy")
    assert first.instructions()[: len(old)] == old
    assert second.instructions()[: len(first.instructions())] == first.instructions()
    # each grown value appends exactly the combinations it creates
    assert first.instructions()[len(old):] == ["tone=angry|offer=fair", "tone=angry|offer=any"]
    assert second.instructions()[len(first.instructions()):] == [
        "tone=calm|offer=greedy", "tone=any|offer=greedy", "tone=angry|offer=greedy",
    ]
    assert len(set(second.instructions())) == 3 * 3


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [("tone", "calm", "already"), ("tone", "any", "already"), ("tone", " ", "empty"),
     ("tone", "a|b", "empty or has"), ("mood", "x", "does not exist")],
)
def test_bad_growth_is_refused_by_value(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        fruit_spec().with_added_instruction(key, value)


def test_grown_entries_must_be_actions() -> None:
    with pytest.raises(ValueError, match="grown instruction"):
        fruit_spec(grown=[("tone", "sarcastic")])


def test_grown_verdict_game_keeps_every_node_table() -> None:
    # Before: grow_game copied messages, terminations and rewards only; a grown verdict game
    # lost `verdicts` (a terminal it already knew was then rewarded as if the judge had said
    # nothing) and `echoes`, and a fresh-sample game lost its sample offset.
    from domain_support import spec_of

    from gtsteer.binding import expand_sync, generate_instances, grow_game, make_game
    from gtsteer.llm import LLM

    spec = spec_of("court", num_llm_seeds=1, num_max_replies=1)
    game = make_game(spec, generate_instances(spec, 1)[0], LLM("fake"), sample_offset=1)
    assert not expand_sync(game).failed
    assert game.verdicts and game.rewards
    key = spec.action_keys[0]
    grown = grow_game(game, key, "sarcastic")
    assert grown.verdicts == game.verdicts
    assert grown.echoes == game.echoes and grown.messages == game.messages
    assert grown.sample_offset == 1
    judged = next(iter(game.verdicts))
    assert grown.reward_context(judged, []).verdict == game.verdicts[judged]
