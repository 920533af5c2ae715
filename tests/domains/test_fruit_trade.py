"""The exact fruit-trading utility on hand-written agreements."""

from __future__ import annotations

import random

import pytest
from binding_support import fruit_spec

from gtsteer.binding import Instance, RewardContext, Turn, compute_reward
from gtsteer.domains import FRUIT_TRADE
from gtsteer.domains.fruit_trade import (
    FRUITS,
    fruit_private_info,
    max_items,
    parse_counts,
    render_counts,
    trade_bounds,
    trade_model,
    trade_values,
)
from gtsteer.llm import LLM, StructuredOutputError, run_sync
from gtsteer.testing import ScriptedBackend

OWNED = [
    {"apple": 2, "banana": 0, "blueberry": 3, "kiwi": 1},
    {"apple": 0, "banana": 4, "blueberry": 0, "kiwi": 2},
]
VALUES = [
    {"apple": 5, "banana": 2, "blueberry": 1, "kiwi": 6},
    {"apple": 3, "banana": 1, "blueberry": 4, "kiwi": 2},
]


def test_simple_trade() -> None:
    # Ann gives 1 apple (worth 5 to her, 3 to Ben); Ben gives 2 bananas (1 each to him, 2 to Ann).
    gives = [{"apple": 1}, {"banana": 2}]
    assert trade_values(OWNED, VALUES, gives) == [2 * 2 - 5, 3 - 2 * 1]


def test_multi_fruit_trade() -> None:
    gives = [{"blueberry": 3}, {"kiwi": 1, "banana": 1}]
    assert trade_values(OWNED, VALUES, gives) == [6 + 2 - 3, 12 - 2 - 1]


def test_gift_is_a_trade() -> None:
    assert trade_values(OWNED, VALUES, [{"kiwi": 1}, {}]) == [-6.0, 2.0]


def test_no_deal() -> None:
    assert trade_values(OWNED, VALUES, None) == [0.0, 0.0]
    assert trade_values(OWNED, VALUES, [{}, {}]) == [0.0, 0.0]


def test_impossible_trade_counts_as_no_trade() -> None:
    assert trade_values(OWNED, VALUES, [{"banana": 1}, {"kiwi": 1}]) == [0.0, 0.0]  # Ann has none
    assert trade_values(OWNED, VALUES, [{"apple": 3}, {"kiwi": 1}]) == [0.0, 0.0]  # only 2 apples
    assert trade_values(OWNED, VALUES, [{"apple": 1}, {"kiwi": 3}]) == [0.0, 0.0]  # Ben has 2


def test_counts_round_trip_and_generation_is_seeded() -> None:
    assert parse_counts(render_counts(OWNED[0])) == OWNED[0]
    spec = fruit_spec()
    a = fruit_private_info(spec, random.Random(7), 0, ["A", "B"])
    b = fruit_private_info(spec, random.Random(7), 0, ["A", "B"])
    assert a == b
    owned, values = parse_counts(a["fruits_owned"]), parse_counts(a["fruit_values"])
    assert list(owned) == ["apple", "banana", "blueberry", "kiwi"] and sum(owned.values()) > 0
    assert all(1 <= v <= 8 for v in values.values())


def _context(answer: dict | str) -> RewardContext:
    spec = fruit_spec()
    instance = Instance(
        index=0,
        seed=1,
        names=["Ann", "Ben"],
        private_info=[
            {"fruits_owned": render_counts(o), "fruit_values": render_counts(v)}
            for o, v in zip(OWNED, VALUES, strict=True)
        ],
        scenario="Ann and Ben trade fruit.",
    )
    turns = [
        Turn(speaker=0, instruction="calm", text="I give you an apple for two bananas."),
        Turn(speaker=1, instruction="any", text="Deal."),
    ]
    llm = LLM("scripted", backend=ScriptedBackend(answer), structured_attempts=1, use_cache=False)
    return RewardContext(spec=spec, instance=instance, transcript=turns, llm=llm)


def test_utility_from_extracted_agreement() -> None:
    ctx = _context({"deal": True, "ann_gives": ["apple"], "ben_gives": ["banana", "banana"]})
    reward = run_sync(compute_reward(ctx))
    assert reward.returns == [-1.0, 1.0] and not reward.clipped
    assert ctx.instructions(0) == ["calm"] and ctx.instructions(1) == ["any"]


def test_utility_impossible_and_no_deal_extractions() -> None:
    impossible = _context({"deal": True, "ann_gives": ["banana"], "ben_gives": ["kiwi"]})
    assert run_sync(compute_reward(impossible)).returns == [0.0, 0.0]
    refused = _context({"deal": False, "ann_gives": ["apple"], "ben_gives": []})
    assert run_sync(compute_reward(refused)).returns == [0.0, 0.0]


def test_five_fruit_trade_is_extracted_whole() -> None:
    # Ann gives 2 apples + 3 blueberries (5 fruits, more than the old cap of 4) for 2 kiwis.
    ann = ["apple"] * 2 + ["blueberry"] * 3
    ctx = _context({"deal": True, "ann_gives": ann, "ben_gives": ["kiwi"] * 2})
    reward = run_sync(compute_reward(ctx))
    # Ann: +2 kiwis x 6 - (2 x 5 + 3 x 1) = -1; Ben: 2 x 3 + 3 x 4 - 2 x 2 = 14.
    assert reward.raw == reward.returns == [-1.0, 14.0] and not reward.clipped


def test_schema_allows_a_full_basket_from_the_params() -> None:
    spec = fruit_spec()
    assert max_items(spec) == 3 * 4
    schema = trade_model(("Ann", "Ben"), tuple(FRUITS), max_items(spec)).model_json_schema()
    assert schema["properties"]["ann_gives"]["maxItems"] == 12
    bigger = fruit_spec(params={**spec.params, "max_count": 5})
    assert max_items(bigger) == 20


def test_maximal_trade_is_not_clipped() -> None:
    # Each gives the whole basket. Ann's basket is worth 19 to her and 20 to Ben; Ben's is
    # worth 8 to him and 20 to Ann.
    full = {"deal": True, "ann_gives": _basket(OWNED[0]), "ben_gives": _basket(OWNED[1])}
    ctx = _context(full)
    reward = run_sync(compute_reward(ctx))
    assert reward.raw == reward.returns == [20.0 - 19.0, 20.0 - 8.0] and not reward.clipped
    # The extremes: a player gives its whole basket away for nothing, or receives the other's.
    assert trade_bounds(ctx.spec, ctx.instance) == (-19.0, 20.0)
    gift = _context({"deal": True, "ann_gives": [], "ben_gives": _basket(OWNED[1])})
    assert run_sync(compute_reward(gift)).returns == [20.0, -8.0]
    loss = _context({"deal": True, "ann_gives": _basket(OWNED[0]), "ben_gives": []})
    reward = run_sync(compute_reward(loss))
    assert reward.returns == [-19.0, 20.0] and not reward.clipped


def _basket(owned: dict[str, int]) -> list[str]:
    return [fruit for fruit, n in owned.items() for _ in range(n)]


def test_llm_payoffs_out_of_range_are_still_clipped_and_counted() -> None:
    spec = fruit_spec(
        FRUIT_TRADE.without_utility(), payoff={"min": -5, "max": 5, "prompt": "{transcript}"}
    )
    ctx = _context({"ann": 9.0, "ben": -1.0})
    ctx = ctx.model_copy(update={"spec": spec})
    reward = run_sync(compute_reward(ctx))
    assert reward.raw == [9.0, -1.0] and reward.returns == [5.0, -1.0] and reward.clipped


def test_extraction_rejects_unknown_fruit() -> None:
    ctx = _context({"deal": True, "ann_gives": ["mango"], "ben_gives": []})
    with pytest.raises(StructuredOutputError):
        run_sync(compute_reward(ctx))


def test_trade_schema_is_compact() -> None:
    schema = trade_model(("Ann", "Ben"), ("apple", "kiwi"), 6).model_json_schema()
    assert list(schema["properties"]) == ["deal", "ann_gives", "ben_gives"]
    assert schema["properties"]["ann_gives"]["items"]["enum"] == ["apple", "kiwi"]


def test_players_whose_names_collide_as_fields_keep_separate_trade_lists() -> None:
    from gtsteer.binding.reward import player_keys
    from gtsteer.domains.fruit_trade import gives_from, trade_model

    assert player_keys(["Ann", "ann"]) == ["ann", "ann_1"]
    model = trade_model(("Ann", "ann"), ("apple", "kiwi"), 6)
    trade = model(deal=True, ann_gives=["apple"], ann_1_gives=["kiwi", "kiwi"])
    assert gives_from(trade, ["Ann", "ann"]) == [{"apple": 1}, {"kiwi": 2}]


def test_fruit_params_are_typed_a_typo_fails_and_defaults_are_the_models() -> None:
    # Untyped params took a typo silently and fell back to defaults spelled in four places.
    from binding_support import fruit_dict

    from gtsteer.binding import ConfigError
    from gtsteer.domains import spec_from_dict
    from gtsteer.domains.fruit_trade import FruitParams, fruits_of, max_count_of

    data = fruit_dict()
    data["params"] = {"max_cont": 2}
    with pytest.raises(ConfigError, match=r"fruit\.yaml: field `params\.max_cont`: unknown field"):
        spec_from_dict(data, "fruit.yaml")
    data["params"] = {}
    spec = spec_from_dict(data, "fruit.yaml")
    assert fruits_of(spec) == FruitParams().fruits == ["apple", "banana", "blueberry", "kiwi"]
    assert max_count_of(spec) == FruitParams().max_count == 3
