"""The fruit game on the embedded local model (slow): real prompts, real grammar-constrained
trade extraction, and a rerun that is all cache hits. The tree is cut to 2 tones x 1 sample so
the test makes 10 model calls."""

from __future__ import annotations

import pyspiel
import pytest
from binding_support import fruit_spec

from gtsteer.binding import expand_sync, make_game, make_instance
from gtsteer.domains.fruit_trade import (
    baskets,
    fruits_of,
    gives_from,
    max_items,
    trade_model,
    trade_values,
)

pytestmark = pytest.mark.slow


def test_small_fruit_tree_on_the_local_model() -> None:
    spec = fruit_spec(actions={"tone": ["assertive", "any"]}, num_llm_seeds=1)
    game = make_game(spec, make_instance(spec, 0), "local")
    report = expand_sync(game, progress=False)
    assert not report.failed, report.reason
    assert (report.message_requests, report.reward_requests) == (2 + 4, 4)
    assert report.new_calls == 10
    for history, text in game.messages.items():
        assert text.strip() and "\n" not in text, history
        assert not any(f"{n}:" in text for n in game.instance.names)
    owned, values = baskets(game.instance)
    names = game.instance.names
    model = trade_model(tuple(names), tuple(fruits_of(spec)), max_items(spec))
    for history, reward in game.rewards.items():
        # The payoff is exactly the value change of the trade the model extracted (a cache hit
        # now), and a legal trade is never clipped by the instance's derived bounds.
        state = game.new_initial_state()
        for a in history:
            state.apply_action(a)
        extracted = game.llm.structured_sync(game.reward_context(history, state.turns).prompt(),
                                             model, seed=0, temperature=0.0,
                                             max_tokens=spec.payoff.max_tokens)  # fmt: skip
        assert extracted.cached
        assert reward.raw == trade_values(owned, values, gives_from(extracted.value, names))
        assert not reward.clipped and reward.returns == reward.raw

    again = make_game(spec, make_instance(spec, 0), "local")
    rerun = expand_sync(again, progress=False)
    assert rerun.new_calls == 0 and rerun.cache_hits == 10
    pyspiel.random_sim_test(again, num_sims=2, serialize=True, verbose=False)
