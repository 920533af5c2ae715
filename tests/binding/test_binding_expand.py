"""Expansion: one request per LLM node, then traversals and reruns make zero new calls;
clipping is counted; a reward that cannot be obtained fails the instance, not the run."""

from __future__ import annotations

from dataclasses import replace

import pyspiel
import pytest
from binding_support import FRUIT, fruit_spec, scripted_game, walk

from gtsteer.binding import (
    RewardContext,
    expand,
    expand_sync,
    make_game,
    make_instance,
    progress,
)
from gtsteer.binding.progress import GatherBar
from gtsteer.domains import FRUIT_TRADE, load_game
from gtsteer.llm import LLM, run_sync
from gtsteer.testing import ScriptedBackend


def test_fruit_expansion_counts_and_zero_new_calls_afterwards() -> None:
    game = load_game(FRUIT, llm="fake", instance=0)
    report = expand_sync(game, progress=False)
    # 4 instructions x 2 samples per player, 1 reply each.
    assert (report.decision_nodes, report.chance_nodes, report.terminal_nodes) == (9, 36, 64)
    assert (report.message_requests, report.reward_requests) == (8 + 64, 64)
    assert report.new_calls == report.llm_requests == 136
    assert not report.failed and report.reason is None

    before = game.llm.usage
    returns: list[list[float]] = []

    def visit(state: pyspiel.State) -> None:
        if state.is_terminal():
            returns.append(state.returns())
        elif not state.is_chance_node():
            state.information_state_string()

    walk(game.new_initial_state(), visit)
    assert len(returns) == 64
    after = game.llm.usage
    assert after.new_calls == before.new_calls
    assert after.requests == before.requests  # answered from the game's memo, not even the cache

    rerun = expand_sync(game, progress=False)
    assert rerun.new_calls == 0 and rerun.llm_requests == 0


def test_restarted_expansion_reuses_every_cached_call() -> None:
    first = load_game(FRUIT, llm="fake", instance=1)
    expand_sync(first, progress=False)
    fresh = load_game(FRUIT, llm="fake", instance=1)  # a new process would look like this
    report = expand_sync(fresh, progress=True)
    assert report.new_calls == 0 and report.cache_hits == report.llm_requests == 136
    assert fresh.rewards == first.rewards and fresh.messages == first.messages


def test_solver_traversal_on_cached_tree_makes_no_call() -> None:
    game = load_game(FRUIT, llm="fake", instance=0)
    expand_sync(game, progress=False)
    before = game.llm.usage
    tree = pyspiel.convert_to_cached_tree(game)
    solver = pyspiel.CFRSolver(tree)
    for _ in range(20):
        solver.evaluate_and_update_policy()
    assert game.llm.usage.requests == before.requests


def test_expand_inside_a_running_event_loop() -> None:
    game = load_game(FRUIT, llm="fake", instance=0)

    async def main() -> int:
        report = await expand(game, progress=False)
        return report.terminal_nodes

    assert run_sync(main()) == 64


async def _out_of_bounds(ctx: RewardContext) -> list[float]:
    # Payoff from the instructions: "assertive" by the first speaker is off the scale.
    first = ctx.instructions(0)[0]
    return [100.0, -100.0] if first == "assertive" else [1.0, -1.0]


OUT_OF_BOUNDS = replace(FRUIT_TRADE, name="test_out_of_bounds", utility=_out_of_bounds, bounds=None)


def test_rewards_are_clipped_and_counted() -> None:
    payoff = {**fruit_spec().payoff.model_dump(), "min": -20, "max": 20}
    spec = fruit_spec(OUT_OF_BOUNDS, payoff=payoff)
    game = make_game(spec, make_instance(spec, 0), "fake")
    report = expand_sync(game, progress=False)
    assert report.clipped_rewards == 16  # 1 assertive opening x 2 samples x 4 replies x 2 samples
    assert game.clipped_rewards == 16
    state = game.new_initial_state()
    for a in [1, 0, 0, 0]:
        state.apply_action(a)
    assert state.returns() == [20.0, -20.0]
    assert game.rewards[state.history_key].raw == [100.0, -100.0]


def test_llm_payoffs_without_utility() -> None:
    spec = fruit_spec(FRUIT_TRADE.without_utility(),
                      payoff={"min": -5, "max": 5, "prompt": "{transcript}\nPayoffs:"})
    names = make_instance(spec, 0).names
    answer = {f"{names[0].lower()}": 3.5, f"{names[1].lower()}": 9.0}
    game = scripted_game(spec, ScriptedBackend(answer))
    report = expand_sync(game, progress=False)
    assert not report.failed
    assert report.clipped_rewards == 64
    assert {tuple(r.returns) for r in game.rewards.values()} == {(3.5, 5.0)}


def test_reward_failure_marks_the_instance_failed() -> None:
    backend = ScriptedBackend("this is not json")
    game = scripted_game(fruit_spec(), backend)
    report = expand_sync(game, progress=False)
    assert report.failed and report.failed_terminals == 64
    assert report.reason is not None and "FruitTrade" in report.reason
    assert game.failure == report.reason
    assert report.message_requests == 72  # the messages were done (and cached) first

    # A second instance with a working reward model still finishes.
    ok = scripted_game(fruit_spec(), ScriptedBackend(), index=1)
    assert not expand_sync(ok, progress=False).failed


def test_failed_calls_are_not_cached() -> None:
    spec = fruit_spec()
    bad = ScriptedBackend("not json")
    llm = LLM("scripted", backend=bad, structured_attempts=1, max_retries=0)
    game = make_game(spec, make_instance(spec, 0), llm)
    assert expand_sync(game, progress=False).failed
    good = ScriptedBackend()
    again = make_game(spec, make_instance(spec, 0), LLM("scripted", backend=good))
    report = expand_sync(again, progress=False)
    assert not report.failed
    # Only the rewards were redone. Scripted messages ignore the prompt, so the 64 terminals have
    # 4 distinct transcripts: identical extraction requests share one call (the rest are hits).
    assert good.calls == report.new_calls == 4
    assert report.cache_hits == 72 + 60


async def _lopsided(ctx: RewardContext) -> list[float]:
    return [30.0, 2.0]


LOPSIDED = replace(FRUIT_TRADE, name="test_lopsided", utility=_lopsided, bounds=None)


def test_zero_sum_payoffs_are_centred_and_declared() -> None:
    payoff = {**fruit_spec().payoff.model_dump(), "zero_sum": True}
    spec = fruit_spec(LOPSIDED, payoff=payoff)
    game = make_game(spec, make_instance(spec, 0), "fake")
    assert game.get_type().utility == pyspiel.GameType.Utility.ZERO_SUM
    expand_sync(game, progress=False)
    assert {tuple(r.returns) for r in game.rewards.values()} == {(14.0, -14.0)}
    pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)


async def _square(i: int) -> int:
    if i == 3:
        raise ValueError("three")
    return i * i


def test_gather_bar_keeps_order_across_chunks_and_returns_or_raises_errors(monkeypatch) -> None:
    monkeypatch.setattr(progress, "CHUNK", 2)  # 7 jobs: four chunks
    with GatherBar(enabled=False) as bar:
        got = run_sync(bar.gather("squares", [_square(i) for i in range(7)],
                                  return_exceptions=True))
        assert [g if isinstance(g, int) else str(g) for g in got] == [0, 1, 4, "three", 16, 25, 36]
        with pytest.raises(ValueError, match="three"):
            run_sync(bar.gather("squares", [_square(i) for i in range(7)]))
        assert run_sync(bar.gather("none", [])) == []
