"""`num_llm_seeds` per depth (issue 57, item 5): `[8, 2]` samples the opening message 8 times
and every later message twice; an int means what it always meant."""

from __future__ import annotations

import pytest
from binding_support import message_seeds
from domain_support import config_dict

from gtsteer.binding import ConfigError, expand_sync, generate_instances, make_game
from gtsteer.binding.tree_size import tree_size
from gtsteer.domains import spec_from_dict
from gtsteer.llm import LLM

MEETING = "schedule_meeting_dow"


def meeting(seeds, **changes):
    return spec_from_dict({**config_dict(MEETING), "num_llm_seeds": seeds, **changes}, "m.yaml")


def game_of(spec, offset: int = 0):
    instance = generate_instances(spec, 1, 0)[0]
    return make_game(spec, instance, LLM("fake"), sample_offset=offset)


def test_the_opening_message_has_the_first_count_and_replies_the_last() -> None:
    spec = meeting([8, 2], num_max_replies=2)
    assert [spec.samples_at(d) for d in range(5)] == [8, 2, 2, 2, 2]
    state = game_of(spec).new_initial_state()
    counts = []
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            counts.append(len(outcomes))
            assert sum(p for _, p in outcomes) == pytest.approx(1.0)
            state.apply_action(outcomes[-1][0])
        else:
            state.apply_action(0)
    assert counts == [8, 2, 2, 2]


def test_tree_size_and_cost_multiply_each_depths_samples() -> None:
    # 8 instructions; depth 0: 8 x 8 messages, depth 1: 64 histories x 8 x 2
    size = tree_size(meeting([8, 2]))
    assert size.message_calls == 8 * 8 + 64 * 8 * 2
    assert size.terminal_nodes == size.reward_calls == 8 * 8 * 8 * 2
    assert size.decision_nodes == 1 + 64 and size.chance_nodes == 8 + 64 * 8
    flat = tree_size(meeting(2))
    assert flat.message_calls == 16 + 16 * 16 and flat.terminal_nodes == 16 ** 2


def test_an_int_is_the_same_tree_and_the_same_requests_as_before() -> None:
    flat, listed = game_of(meeting(2)), game_of(meeting([2, 2]))
    for game in (flat, listed):
        assert not expand_sync(game, progress=False).failed
    assert flat.messages == listed.messages  # same histories, same texts
    assert set(flat.rewards) == set(listed.rewards)
    assert message_seeds(flat) == message_seeds(listed)
    requests = {h: flat.message_request([], 0, "Monday", flat.sample_path(h))
                for h in flat.messages if len(h) == 2}
    assert requests == {h: listed.message_request([], 0, "Monday", listed.sample_path(h))
                        for h in listed.messages if len(h) == 2}
    assert flat.max_chance_outcomes() == 2 and game_of(meeting([8, 2])).max_chance_outcomes() == 8


def test_fresh_samples_are_disjoint_at_every_depth() -> None:
    spec = meeting([8, 2])
    solved, fresh = game_of(spec), game_of(spec, offset=spec.max_llm_seeds)
    assert spec.max_llm_seeds == 8
    assert not message_seeds(solved) & message_seeds(fresh)
    assert len(message_seeds(solved)) == 8 + 8 * 2


@pytest.mark.parametrize("seeds", [[], [0], [8, 65], "many"])
def test_bad_sample_counts_are_refused_by_field(seeds) -> None:
    with pytest.raises(ConfigError, match="num_llm_seeds"):
        meeting(seeds)
