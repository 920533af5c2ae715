"""A new domain is one `Domain(...)` plus a YAML file (tests/data/coin_split.yaml), and the
public checks of `gtsteer.checks` run on it as they run on every shipped config."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pydantic import Field

from gtsteer.binding import (
    ConfigError,
    Domain,
    DomainParams,
    RewardContext,
    make_game,
    make_instance,
)
from gtsteer.checks import (
    ConformanceError,
    check_spec,
    determinism_check,
    isolation_check,
    pyspiel_api_check,
    tree_digest,
)
from gtsteer.domains import load_game, load_spec, register_domain, spec_from_dict

COINS = Path(__file__).parents[1] / "data" / "coin_split.yaml"
COIN_KEY = "coins"


class CoinParams(DomainParams):
    max_coins: int = Field(3, ge=1)


def coins_of(info: dict[str, str]) -> int:
    return int(info[COIN_KEY])


def deal_coins(spec, rng: random.Random, player: int, names: list[str]) -> dict[str, str]:
    return {COIN_KEY: str(rng.randint(1, CoinParams.of(spec).max_coins))}


async def coin_utility(ctx: RewardContext) -> list[float]:
    coins = [coins_of(info) for info in ctx.instance.private_info]
    for p in range(2):
        move = ctx.instructions(p)[0]
        if move == "generous" and coins[p] > 0:
            coins[p], coins[1 - p] = coins[p] - 1, coins[1 - p] + 1
        elif move == "greedy" and coins[1 - p] > 0:
            coins[p], coins[1 - p] = coins[p] + 1, coins[1 - p] - 1
    return [float(c) for c in coins]


def two_players(spec) -> None:
    if spec.num_players != 2:
        raise ValueError(f"field `players`: a purse is split by 2, got {spec.num_players}")


COIN_SPLIT = register_domain(Domain(
    name="test_coin_split", params=CoinParams, private_info=deal_coins, utility=coin_utility,
    bounds=lambda spec, inst: (0.0, float(sum(coins_of(i) for i in inst.private_info))),
    validate=two_players,
))


def coin_game():
    """The factory `determinism_check` calls in fresh processes."""
    return load_game(COINS, llm="fake", instance=1, seed=5)


def hash_dependent_game():
    """A domain that leaks `hash()` (PYTHONHASHSEED) into its private information."""
    spec = load_spec(COINS).model_copy(update={"domain": "test_coin_split_by_hash"})
    leaky = Domain(name="test_coin_split_by_hash", params=CoinParams, utility=coin_utility,
                   private_info=lambda s, rng, p, names: {COIN_KEY: str(hash(names[p]) % 4)})
    spec = spec.with_domain(leaky)
    return make_game(spec, make_instance(spec, 0), "fake")


def test_the_yaml_names_the_domain_and_its_params_are_typed() -> None:
    spec = load_spec(COINS)
    assert spec.hooks is COIN_SPLIT and CoinParams.of(spec).max_coins == 4
    coins = [coins_of(info) for info in make_instance(spec, 0).private_info]
    assert all(1 <= c <= 4 for c in coins)


@pytest.mark.parametrize(("params", "message"), [
    ({"max_coins": 0}, r"coin\.yaml: field `params\.max_coins`: Input should be greater"),
    ({"max_coin": 4}, r"field `params\.max_coin`: unknown field"),  # a typo, not a default
])
def test_params_errors_name_the_field(params: dict, message: str) -> None:
    data = {**load_spec(COINS).model_dump(), "params": params}
    with pytest.raises(ConfigError, match=message):
        spec_from_dict(data, "coin.yaml")


def test_the_domain_validator_runs_at_load() -> None:
    data = load_spec(COINS).model_dump()
    data |= {"players": ["a", "b", "c"]}
    with pytest.raises(ConfigError, match="field `players`: a purse is split by 2, got 3"):
        spec_from_dict(data, "coin.yaml")


def test_the_public_checks_pass_on_the_new_domain() -> None:
    report = check_spec(load_spec(COINS), "coin_split")
    assert report.reduced == [] and report.warnings == []
    # One message each, 3 instructions x 2 samples per message: histories 1 + 3 + 6 + 18 + 36;
    # views: the first speaker's empty one, then the second's 6 (instruction, sample) messages.
    assert report.histories == 64 and report.info_states == 1 + 6
    game = coin_game()
    api = pyspiel_api_check(game, "coin_split")
    assert api.cfr_backend.startswith("open_spiel C++") and api.nash_conv >= 0
    assert isolation_check(game, "coin_split") == 1 + 6


def test_determinism_across_processes_and_a_leak_it_catches() -> None:
    digest = determinism_check(f"{__name__}:coin_game", "coin_split")
    assert digest == tree_digest(coin_game())
    with pytest.raises(ConformanceError, match="determinism.*digests differ"):
        determinism_check(f"{__name__}:hash_dependent_game", "leaky", hash_seeds=("1", "2", "3"))
