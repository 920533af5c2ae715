"""Debate: one topic and opposite stances per instance, the judge's +1/-1 verdict via choose."""

from __future__ import annotations

import pytest
from domain_support import config_dict, context, spec_of

from gtsteer.binding import ConfigError, compute_reward, generate_instances
from gtsteer.domains import spec_from_dict
from gtsteer.domains.debate import verdict_returns
from gtsteer.llm import LLM, run_sync
from gtsteer.testing import ScriptedBackend

INFO = [{"topic": "Zoos should be phased out.", "stance": "for"},
        {"topic": "Zoos should be phased out.", "stance": "against"}]


def test_instances_share_a_topic_and_take_opposite_sides() -> None:
    spec = spec_of("debate")
    topics, first_sides = set(), set()
    for inst in generate_instances(spec, 40, seed=0):
        a, b = inst.private_info
        assert a["topic"] == b["topic"] and a["topic"] in spec.params["topics"]
        assert {a["stance"], b["stance"]} == {"for", "against"}
        topics.add(a["topic"])
        first_sides.add(a["stance"])
    assert len(topics) > 10 and first_sides == {"for", "against"}


def test_instances_are_deterministic() -> None:
    spec = spec_of("debate")
    assert generate_instances(spec, 5, seed=3) == generate_instances(spec, 5, seed=3)
    assert generate_instances(spec, 5, seed=3) != generate_instances(spec, 5, seed=4)


@pytest.mark.parametrize(("winner", "expected"), [("Ann", [1.0, -1.0]), ("Ben", [-1.0, 1.0])])
def test_judge_verdict_is_zero_sum(winner: str, expected: list[float]) -> None:
    spec = spec_of("debate")
    # ScriptedBackend has no log-likelihoods, so choose() takes its constrained path
    llm = LLM("scripted", backend=ScriptedBackend({"choice": winner}), structured_attempts=1)
    reward = run_sync(compute_reward(context(spec, INFO, llm)))
    assert reward.returns == expected and sum(reward.returns) == 0.0


def test_judge_prompt_shows_both_stances() -> None:
    spec = spec_of("debate")
    llm = LLM("fake")
    prompt = context(spec, INFO, llm).prompt()
    assert "Ann's stance: for" in prompt and "Ben's stance: against" in prompt


def test_verdict_for_someone_else_is_an_error() -> None:
    with pytest.raises(ValueError, match="not one of"):
        verdict_returns(["Ann", "Ben"], "Cleo")


def _error(data: dict) -> str:
    with pytest.raises(ConfigError) as info:
        spec_from_dict(data, "debate.yaml")
    return str(info.value)


def test_one_topic_side_fails_at_load() -> None:
    data = config_dict("debate")
    data["params"]["sides"] = ["for"]
    message = _error(data)
    assert "debate.yaml" in message and "field `params.sides`" in message


def test_same_side_twice_fails_at_load() -> None:
    data = config_dict("debate")
    data["params"]["sides"] = ["for", "for"]
    assert "field `params.sides`" in _error(data)


def test_no_topics_fails_at_load() -> None:
    data = config_dict("debate")
    data["params"]["topics"] = []
    assert "field `params.topics`" in _error(data)


def test_non_zero_sum_payoff_fails_at_load() -> None:
    data = config_dict("debate")
    data["payoff"]["zero_sum"] = False
    assert "field `payoff`" in _error(data)


def test_private_features_encode_side_and_topic() -> None:
    from gtsteer.binding.features import private_features

    spec = spec_of("debate")
    feats = private_features(spec, {"topic": spec.params["topics"][2], "stance": "against"})
    assert feats[:2] == [0.0, 1.0] and feats[2:].index(1.0) == 2 and sum(feats) == 2.0
