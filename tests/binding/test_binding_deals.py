"""Dealt private information: a root chance node deals one of K draws, each player sees only
its own, and the solver can no longer use what a player does not know."""

from __future__ import annotations

import json
from pathlib import Path

import pyspiel
import pytest
from binding_support import fruit_spec, walk
from solve_helpers import GUESS_SECRET, ConstantBackend

import gtsteer
from gtsteer.binding import expand_sync, make_game, make_instance
from gtsteer.binding.instances import deal_instances
from gtsteer.domains import load_spec
from gtsteer.llm import LLM
from gtsteer.solvers import nash_conv, pool_deal_policies, solve_cfr

K = 8


def constant() -> LLM:
    return LLM(backend=ConstantBackend())


def secrets(game) -> list[str]:
    return [d.private_info[1]["secret"] for d in game.deals]


def guesser_policy(table: dict, game) -> dict[str, float]:
    """The guesser's first-move distribution (it has exactly one information state)."""
    keys = [k for k in table if k.startswith(f"[{game.instance.names[0]}, player 0]")]
    assert len(keys) == 1, keys
    labels = game.instructions(0)
    return {labels[a]: p for a, p in table[keys[0]]}


def test_deals_share_the_public_part_and_differ_in_private_info() -> None:
    spec = fruit_spec(num_deals=4)
    inst = make_instance(spec, 3, seed=5)
    deals = deal_instances(spec, inst)
    assert [d.deal for d in deals] == [0, 1, 2, 3] and deals[0] == inst
    for d in deals:
        assert (d.names, d.scenario, d.opening, d.seed, d.index) == (
            inst.names, inst.scenario, inst.opening, inst.seed, inst.index)
    assert len({json.dumps(d.private_info) for d in deals}) == 4
    assert deal_instances(spec, inst) == deals  # deterministic


def test_dealt_game_root_is_a_chance_node_over_deals() -> None:
    spec = fruit_spec(num_deals=3)
    game = make_game(spec, make_instance(spec, 0), "fake")
    root = game.new_initial_state()
    assert root.is_chance_node() and root.chance_outcomes() == [(j, 1 / 3) for j in range(3)]
    assert root.action_to_string(pyspiel.PlayerId.CHANCE, 2) == "deal 2"
    assert game.max_game_length() == 2 * 2 * 1 + 1
    child = root.child(1)
    own = game.deals[1].private_info
    info0 = child.information_state_string(0)
    assert own[0]["fruit_values"] in info0 and own[1]["fruit_values"] not in info0
    pyspiel.random_sim_test(game, num_sims=5, serialize=True, verbose=False)


def test_a_player_cannot_tell_deals_that_differ_only_in_the_others_info() -> None:
    game = make_game(load_spec(GUESS_SECRET).with_deals(K), _instance(), constant())
    assert set(secrets(game)) == {"low", "high"}
    infos = {game.new_initial_state().child(j).information_state_string(0) for j in range(K)}
    assert len(infos) == 1  # the guesser's view is the same in every deal
    keeper = {game.new_initial_state().child(j).child(0).child(0).information_state_string(1)
              for j in range(K)}  # fmt: skip
    assert len(keeper) == 2  # the keeper sees its own secret: low or high


def _instance():
    return make_instance(load_spec(GUESS_SECRET), 0, seed=0)


def test_dealt_equilibrium_differs_from_per_instance_policies() -> None:
    spec = load_spec(GUESS_SECRET).with_deals(K)
    dealt = make_game(spec, _instance(), constant())
    assert not expand_sync(dealt, progress=False).failed
    low = secrets(dealt).count("low") / K
    assert 0 < low < 1
    solved = solve_cfr(dealt, solver="cfr+", iterations=500)
    assert nash_conv(solved.game, solved.policy) < 1e-4
    # Not knowing the secret, bold is worth 3 x P(low) and safe 1: one of them for every deal.
    best = "bold" if 3 * low > 1 else "safe"
    assert guesser_policy(solved.policy, dealt)[best] == pytest.approx(1.0, abs=1e-3)

    # Each deal solved alone: bold exactly when that deal's secret is low.
    per_deal = []
    for deal in dealt.deals:
        alone = make_game(spec.with_deals(1), deal, constant())
        expand_sync(alone, progress=False)
        result = solve_cfr(alone, solver="cfr+", iterations=500)
        move = "bold" if deal.private_info[1]["secret"] == "low" else "safe"
        assert guesser_policy(result.policy, alone)[move] == pytest.approx(1.0, abs=1e-3)
        per_deal.append(result.policy)
    # Played where the guesser cannot see the secret, they mix bold with probability P(low)
    # and a best response gains max(3 low, 1) - (3 low^2 + (1 - low)).
    pooled = pool_deal_policies(solved.game, per_deal)
    assert guesser_policy(pooled, dealt)["bold"] == pytest.approx(low, abs=1e-3)
    gap = max(3 * low, 1.0) - (3 * low * low + (1 - low))
    assert nash_conv(solved.game, pooled) == pytest.approx(gap, abs=1e-3)
    assert gap > 0.1


def test_solve_reports_the_mode_and_deals(tmp_path: Path) -> None:
    per = gtsteer.solve(GUESS_SECRET, llm=constant(), games=1, iterations=100, out=tmp_path / "a",
                        quiet=True)
    assert (per.mode, per.num_deals) == ("per_instance", 1)
    dealt = gtsteer.solve(GUESS_SECRET, llm=constant(), games=2, iterations=100, deals=K,
                          out=tmp_path / "b", quiet=True)
    assert (dealt.mode, dealt.num_deals, dealt.num_solved) == ("dealt", K, 2)
    record = json.loads((tmp_path / "b" / "games" / "1.json").read_text())
    assert len(record["deals"]) == K and record["deals"][0] == record["instance"]["private_info"]
    assert dealt.metrics is not None and max(dealt.metrics.nash_conv.per_instance) < 1e-3


def test_deals_flag_is_validated_by_name(tmp_path: Path) -> None:
    from gtsteer.binding import ConfigError

    with pytest.raises(ConfigError, match="num_deals"):
        gtsteer.solve(GUESS_SECRET, llm=constant(), deals=0, out=tmp_path, quiet=True)


def test_every_deal_is_expanded_and_traversal_makes_no_call() -> None:
    spec = fruit_spec(num_deals=2, actions={"tone": ["calm", "any"]}, num_llm_seeds=1)
    game = make_game(spec, make_instance(spec, 0), "fake")
    report = expand_sync(game, progress=False)
    # Per deal: 2 first messages, 2 x 2 replies; 4 terminals.
    assert (report.message_requests, report.reward_requests) == (2 * 6, 2 * 4)
    before = game.llm.usage.requests
    walk(game.new_initial_state(), lambda s: s.returns() if s.is_terminal() else None)
    assert game.llm.usage.requests == before


def test_cli_deals_flag_reports_the_mode(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gtsteer.cli import app

    result = CliRunner().invoke(app, ["solve", str(GUESS_SECRET), "--llm", "fake", "--deals", "4",
                                      "-k", "50", "-o", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "mode: dealt: root chance deals 1 of 4" in " ".join(result.output.split())
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["mode"], summary["num_deals"]) == ("dealt", 4)
    bad = CliRunner().invoke(app, ["solve", str(GUESS_SECRET), "--llm", "fake", "--deals", "0"])
    assert bad.exit_code == 2 and "num_deals" in bad.output


def test_pooled_policy_mixes_deals_by_their_posterior_at_each_state() -> None:
    # Kuhn poker as a dealt game: the root deals player 0's card (J, Q, K). Deal J's policy
    # always passes with J and, for player 1 holding Q after a pass, bets; deal K's passes with
    # K 5% of the time and never bets. At player 1's "Q, pass" state, P(deal J | pass) =
    # 1 / 1.05. Before: the deals were mixed by their prior (bet 0.5).
    from gtsteer.solvers.cfr import PolicyTable

    kuhn = pyspiel.load_game("kuhn_poker")
    uniform: PolicyTable = {}
    walk(kuhn.new_initial_state(), lambda s: uniform.setdefault(
        s.information_state_string(), [(a, 1 / len(s.legal_actions())) for a in s.legal_actions()]
    ) if not (s.is_terminal() or s.is_chance_node()) else None)
    jack, queen, king = dict(uniform), dict(uniform), dict(uniform)
    p1_queen_after_pass = "1p"  # player 1's card (Q = 1), then player 0's pass
    assert p1_queen_after_pass in uniform
    jack["0"] = [(0, 1.0), (1, 0.0)]  # pass with J
    jack[p1_queen_after_pass] = [(0, 0.0), (1, 1.0)]  # bet
    king["2"] = [(0, 0.05), (1, 0.95)]
    king[p1_queen_after_pass] = [(0, 1.0), (1, 0.0)]
    pooled = dict(pool_deal_policies(kuhn, [jack, queen, king]))
    bet = dict(pooled[p1_queen_after_pass])[1]
    assert bet == pytest.approx(1 / 1.05)
    assert dict(pooled["0"])[0] == pytest.approx(1.0)  # only deal J reaches it
