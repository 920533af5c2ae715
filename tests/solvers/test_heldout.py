"""Held-out CFR gain: the solved policy replayed on fresh LLM samples of the same positions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyspiel
import pytest
import yaml
from binding_support import message_seeds
from solve_helpers import MIXED_2X2, ConstantBackend
from typer.testing import CliRunner

import gtsteer
import gtsteer.solvers.heldout as heldout_module
from gtsteer.binding import Domain, expand_sync, generate_instances, make_game
from gtsteer.binding.instances import stable_int
from gtsteer.binding.prompts import Turn
from gtsteer.cli import app
from gtsteer.domains import load_game, load_spec, register_domain
from gtsteer.llm import LLM, Backend, LLMCallError
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage
from gtsteer.runs.solve_schema import SCHEMA_VERSION
from gtsteer.solvers import (
    Replayed,
    cfr_gain,
    expected_returns,
    fixed,
    solve_cfr,
    tabular,
    truncated,
    uniform,
)
from gtsteer.solvers.heldout import measure_heldout


class SeededBackend(Backend):
    """A message is a pseudo-random number of its prompt and seed: each instruction gets
    other samples, but none is better than another on average."""

    kind = "seeded"
    max_concurrency = 16
    supports_grammar = True

    def __init__(self, fail_seeds: frozenset[int] = frozenset()):
        super().__init__("seeded")
        self.fail_seeds = fail_seeds

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        if request.seed in self.fail_seeds:
            raise LLMCallError("model unavailable (injected)")
        number = stable_int("note", request.prompt, request.seed) % 1000
        return RawCompletion(text=f"My number is {number}.", usage=Usage(completion_tokens=5))


async def noise_utility(ctx: Any) -> list[float]:
    """Pays the proposer a hash of the two messages in [-3, 3]: instructions matter only
    through the samples they happen to draw."""
    value = float(stable_int("pay", [t.text for t in ctx.transcript]) % 7 - 3)
    return [value, -value]


def noise_spec(tmp_path: Path) -> Path:
    data = yaml.safe_load(MIXED_2X2.read_text())
    data["name"] = "noise"
    data["domain"] = "test_noise"
    path = tmp_path / "noise.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


async def mixed_utility(ctx: Any) -> list[float]:
    """Each player: 1 per `a`, 0.5 per `b` it played, plus transcript noise."""
    out = []
    for p in range(ctx.spec.num_players):
        value = sum({"a": 1.0, "b": 0.5}.get(i, 0.0) for i in ctx.instructions(p))
        value += (stable_int("pay", p, [t.text for t in ctx.transcript]) % 5 - 2) * 0.5
        out.append(max(-4.0, min(4.0, value)))
    return out


def secret(spec: Any, rng: Any, player: int, names: list[str]) -> dict[str, str]:
    return {"secret": rng.choice(["low", "high", "mid"])}


register_domain(Domain(name="test_noise", utility=noise_utility))
register_domain(Domain(name="test_heldout_mixed", utility=mixed_utility))
register_domain(Domain(name="test_heldout_secret", private_info=secret, utility=mixed_utility))


def shaped_spec(tmp_path: Path, players: int, replies: int, opening: bool, deals: int) -> Path:
    """A dialogue with a termination check (some dialogues end early) in the given shape."""
    data: dict[str, Any] = {
        "name": f"shape_{players}p_{replies}r_{int(opening)}o_{deals}d",
        "players": [f"p{i}" for i in range(players)],
        "names": ["Ada", "Ben", "Cy"][:players],
        "actions": {"move": ["a", "b", "any"]},
        "scenario": "{name0} and {name1} talk.",
        "message_prompt": "{scenario}\n{private_info}\n{transcript}\n{instruction}{name}:",
        "termination_prompt": "{transcript}\nIs the conversation over?",
        "num_llm_seeds": 2, "num_max_replies": replies,
        "domain": "test_heldout_mixed",
        "payoff": {"min": -4, "max": 4, "prompt": "{transcript}"},
    }
    if opening:
        data |= {"opening": "Hello {name0}.", "opening_speaker": players - 1}
    if deals > 1:
        data |= {"domain": "test_heldout_secret", "num_deals": deals}
    path = tmp_path / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_sample_offset_seeds_sample_i_as_sample_i_plus_k() -> None:
    solved = load_game(MIXED_2X2, llm="fake")
    fresh = load_game(MIXED_2X2, llm="fake", sample_offset=2)
    turns: list[Turn] = []
    seeds = [solved.message_request(turns, 0, "a", (i,)).seed for i in range(4)]
    assert len(set(seeds)) == 4
    assert [fresh.message_request(turns, 0, "a", (i,)).seed for i in range(2)] == seeds[2:]
    # along a path too: fresh path (0, 1) is solved path (2, 3)
    assert (fresh.message_request(turns, 1, "a", (0, 1)).seed
            == solved.message_request(turns, 1, "a", (2, 3)).seed)
    assert not message_seeds(solved) & message_seeds(fresh)
    # OpenSpiel's serialisation rebuilds the game from its parameters, offset included.
    again = pyspiel.load_game(str(fresh))
    assert again.sample_offset == 2
    assert again.message_request(turns, 0, "a", (0,)).seed == seeds[2]
    with pytest.raises(ValueError, match="sample_offset"):
        load_game(MIXED_2X2, llm="fake", sample_offset=-1)


def test_truncated_drops_rare_actions_and_renormalises() -> None:
    table = {"s": [(0, 0.5995), (1, 0.4), (2, 0.0005)], "t": [(0, 0.0004), (1, 0.9996)]}
    out = truncated(table, 1e-3)
    assert [a for a, _ in out["s"]] == [0, 1]
    assert [p for _, p in out["s"]] == pytest.approx([0.5995 / 0.9995, 0.4 / 0.9995])
    assert out["t"] == [(1, 1.0)]
    assert truncated(table, 0.0) == table
    with pytest.raises(ValueError, match="tolerance"):
        truncated(table, 1.0)


def test_replaying_a_policy_on_its_own_game_is_the_policy_itself() -> None:
    game = pyspiel.load_game("kuhn_poker")
    table = solve_cfr(game, solver="cfr+", iterations=200).policy
    replayed = Replayed(table, game, uniform())
    assert expected_returns(game, [replayed, replayed]) == pytest.approx(
        expected_returns(game, [tabular(table)] * 2))
    assert replayed.misses == set() and replayed.hits
    # A position the source lacks plays the fallback and is remembered.
    partial = {k: v for k, v in table.items() if not k.startswith("0")}
    gap = Replayed(partial, game, uniform())
    expected_returns(game, [gap, gap])
    assert gap.misses and gap.misses | gap.hits == replayed.hits


def test_a_missing_position_borrows_the_mean_policy_of_the_other_samples() -> None:
    game = pyspiel.load_game("kuhn_poker")
    table = solve_cfr(game, solver="cfr+", iterations=200).policy
    # Player 0 holding card 0 never got a policy (as if that branch ended earlier).
    partial = {k: v for k, v in table.items() if not k.startswith("0")}
    any_card = Replayed(partial, game, fixed([0, 0]), resample=lambda s: True)
    root = game.new_initial_state()
    state = root.child(0).child(1)  # cards 0 and 1 dealt, player 0 to act
    probs = dict(any_card(state))
    mean = {a: (dict(table["1"])[a] + dict(table["2"])[a]) / 2 for a in (0, 1)}
    assert probs == pytest.approx(mean)
    assert any_card.borrowed == {(0, 1)} and not any_card.misses
    # A chance node `resample` refuses is never swapped (a deal: the player's private info).
    own_card_kept = Replayed(partial, game, fixed([0, 0]),
                             resample=lambda s: len(s.history()) >= 1)
    assert own_card_kept(state) == [(0, 1.0)]  # the fallback
    assert own_card_kept.misses == {(0, 1)} and not own_card_kept.borrowed


def kuhn_hidden(state: pyspiel.State, action: int, player: int) -> list[int]:
    """Kuhn poker deals player 0's card, then player 1's: the other's card is hidden."""
    if len(state.history()) == player:
        return [action]
    return [a for a, _ in state.chance_outcomes()]


def test_mixing_over_what_the_information_state_already_hides_changes_nothing() -> None:
    game = pyspiel.load_game("kuhn_poker")
    table = solve_cfr(game, solver="cfr+", iterations=200).policy
    pooled = Replayed(table, game, uniform(), indistinct=kuhn_hidden)
    assert expected_returns(game, [pooled, pooled]) == pytest.approx(
        expected_returns(game, [tabular(table)] * 2))
    assert pooled.hits and not pooled.pooled and not pooled.misses
    # Mixing over a player's own card (which it sees) does change the policy played: with
    # player 1 holding card 1, player 0 plays the mean of its policies for cards 0 and 2.
    blind = Replayed(table, game, uniform(), indistinct=lambda s, a, p: kuhn_hidden(s, a, 1 - p))
    state = game.new_initial_state().child(0).child(1)  # player 0 holds the lowest card
    assert dict(blind(state)) == pytest.approx(
        {a: (dict(table["0"])[a] + dict(table["2"])[a]) / 2 for a in (0, 1)})
    assert dict(blind(state)) != pytest.approx(dict(table["0"]))
    assert blind.pooled == {(0, 1)}


TYPES = ["x", "y"]


def typed_info(spec: Any, rng: Any, player: int, names: list[str]) -> dict[str, str]:
    """Only the answerer (player 1) has private information: its type."""
    return {"type": rng.choice(TYPES)} if player == 1 else {"role": "asker"}


def typed_deal(spec: Any, first: Any, j: int) -> list[dict[str, str]]:
    private = [dict(info) for info in first.private_info]
    private[1]["type"] = TYPES[(TYPES.index(private[1]["type"]) + j) % len(TYPES)]
    return private


async def match_type(ctx: Any) -> list[float]:
    """The asker scores 1 when its last instruction names the answerer's hidden type."""
    said = ctx.instructions(0)
    wanted = {"x": "a", "y": "b"}[ctx.instance.private_info[1]["type"]]
    return [float(bool(said) and said[-1] == wanted), 0.0]


register_domain(Domain(name="test_heldout_typed", private_info=typed_info, deals=typed_deal,
                       utility=match_type))


def test_a_replayed_player_is_never_handed_a_hidden_deal(tmp_path: Path) -> None:
    """The answerer's words depend on its type, so in the solved tree they tell the asker
    which deal it is in, and CFR matches the type at the asker's second move. Replayed on
    fresh words, the asker cannot read the deal off the history: it mixes its policies over
    the deals it cannot tell apart, here worth half the in-sample gain."""
    data = yaml.safe_load(shaped_spec(tmp_path, 2, 2, False, 2).read_text())
    data |= {"name": "typed", "domain": "test_heldout_typed",
             "num_llm_seeds": 1, "termination_prompt": None,
             "payoff": {"min": 0, "max": 1, "prompt": "{transcript}"}}
    path = tmp_path / "typed.yaml"
    path.write_text(yaml.safe_dump(data))
    spec = load_spec(path)
    instance = generate_instances(spec, 1, 0)[0]
    llm = LLM(backend=SeededBackend())
    solved = make_game(spec, instance, llm)
    expand_sync(solved, progress=False)
    assert sorted(d.private_info[1]["type"] for d in solved.deals) == TYPES
    table = solve_cfr(solved, solver="cfr+", iterations=300).policy
    anys = fixed([solved.any_action(p) for p in range(2)])
    assert cfr_gain(solved, tabular(table), anys)[0] == pytest.approx(1.0, abs=0.01)

    held = measure_heldout(solved, table, make_game(spec, instance, llm, sample_offset=1),
                           progress=False)
    assert held.cfr_gain_per_player[0] == pytest.approx(0.5, abs=0.01)
    assert held.pooled > 0 and held.unmatched == 0
    # Looked up by the history alone (deal included), the replay would know the type.
    full = make_game(spec, instance, llm, sample_offset=1)
    expand_sync(full, progress=False)
    by_history = Replayed(truncated(table, 1e-3), solved, anys,
                          resample=lambda s: not s.is_deal_node())
    assert cfr_gain(full, by_history, anys)[0] == pytest.approx(1.0, abs=0.01)


def test_when_payoffs_depend_only_on_instructions_the_held_out_gain_is_the_same(
    tmp_path: Path,
) -> None:
    llm = LLM(backend=ConstantBackend())
    summary = gtsteer.solve(MIXED_2X2, llm=llm, games=2, iterations=3000, out=tmp_path,
                            heldout=True, quiet=True)
    assert summary.heldout and summary.heldout_instances == [0, 1]
    m = summary.metrics
    assert m is not None and m.cfr_gain_heldout is not None
    # Equal up to the truncated mass (< 1e-3 per decision) times the payoff range.
    assert m.cfr_gain_heldout.per_instance == pytest.approx(m.cfr_gain.per_instance, abs=6e-3)
    assert m.cfr_gain_heldout.mean == pytest.approx(2.0, abs=0.02)  # proposer +3, responder +1
    assert m.cfr_gain_heldout_normalized.mean == pytest.approx(2.0 / 6, abs=0.01)
    record = json.loads((tmp_path / "games" / "0.json").read_text())
    held = record["heldout"]
    assert held["sample_offset"] == 2 and held["unmatched"] == 0
    # The proposer's root decision and the responder's two positions after `any`.
    assert held["decisions"] == 3
    assert held["cfr_gain_per_player"] == pytest.approx([3.0, 1.0], abs=0.03)


def test_selection_on_sampling_noise_vanishes_on_fresh_samples(tmp_path: Path) -> None:
    """Instructions that change nothing but which samples are drawn: CFR picks the lucky
    ones, so the in-sample gain is positive; on fresh samples it is gone."""
    # The history replay (`cfr_gain_heldout`) only: the readers' columns, an MLP fitted per
    # instance, are tested in test_heldout_readers.py.
    summary = gtsteer.solve(noise_spec(tmp_path), llm=LLM(backend=SeededBackend()), games=30,
                            iterations=300, out=tmp_path / "out", heldout=True, quiet=True,
                            heldout_readers=())
    m = summary.metrics
    assert m is not None and m.cfr_gain_heldout is not None
    assert summary.heldout_instances == list(range(30))
    assert m.cfr_gain.ci_low is not None and m.cfr_gain.ci_low > 0.3
    low, high = m.cfr_gain_heldout.ci_low, m.cfr_gain_heldout.ci_high
    assert low is not None and high is not None and low < 0 < high
    assert m.cfr_gain.mean - m.cfr_gain_heldout.mean > 0.5


def test_expanding_only_the_needed_branches_gives_the_full_trees_value(tmp_path: Path) -> None:
    spec = load_spec(noise_spec(tmp_path))
    instance = generate_instances(spec, 1, 0)[0]
    llm = LLM(backend=SeededBackend())
    solved = make_game(spec, instance, llm)
    expand_sync(solved, progress=False)
    table = solve_cfr(solved, solver="cfr+", iterations=300).policy
    restricted = make_game(spec, instance, llm, sample_offset=2)
    held = measure_heldout(solved, table, restricted, progress=False)

    full = make_game(spec, instance, llm, sample_offset=2)
    expand_sync(full, progress=False)
    any_actions = [full.any_action(p) for p in range(2)]
    policy = Replayed(truncated(table, 1e-3), solved, fixed(any_actions))
    gains = cfr_gain(full, policy, fixed(any_actions))
    assert held.cfr_gain_per_player == pytest.approx(gains, abs=1e-12)
    assert len(restricted.messages) < len(full.messages)
    assert len(restricted.rewards) < len(full.rewards)
    with pytest.raises(ValueError, match="other samples"):
        measure_heldout(solved, table, solved, progress=False)


SHAPES = [(3, 2, True, 1), (2, 2, False, 2), (3, 1, True, 2)]


@pytest.mark.parametrize(("players", "replies", "opening", "deals"), SHAPES)
def test_every_game_shape_is_measured_from_its_expansion_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, players: int, replies: int, opening: bool,
    deals: int,
) -> None:
    """More players, several messages each, an opening turn, early ends, dealt private info:
    the restricted expansion holds every branch the measurement needs (no model call after
    it) and gives the value of the fully expanded fresh tree."""
    spec = load_spec(shaped_spec(tmp_path, players, replies, opening, deals))
    instance = generate_instances(spec, 1, 0)[0]
    llm = LLM("fake")
    solved = make_game(spec, instance, llm)
    expand_sync(solved, progress=False)
    table = solve_cfr(solved, solver="cfr+", iterations=300).policy
    calls_during_measurement: list[int] = []
    real_gain = heldout_module._replay_gain

    def counted_gain(game: Any, *args: Any) -> Any:
        before = game.llm.usage
        out = real_gain(game, *args)
        calls_during_measurement.append(game.llm.usage.since(before).requests)
        return out

    monkeypatch.setattr(heldout_module, "_replay_gain", counted_gain)
    restricted = make_game(spec, instance, llm, sample_offset=2)
    held = measure_heldout(solved, table, restricted, progress=False)
    assert calls_during_measurement == [0, 0]  # the fresh tree's replay, the solved tree's

    full = make_game(spec, instance, llm, sample_offset=2)
    expand_sync(full, progress=False)
    any_actions = [full.any_action(p) for p in range(players)]
    same = Replayed(truncated(table, 1e-3), solved, fixed(any_actions),
                    resample=lambda s: not s.is_deal_node(),
                    indistinct=heldout_module.same_private_info(solved))
    assert held.cfr_gain_per_player == pytest.approx(cfr_gain(full, same, fixed(any_actions)),
                                                     abs=1e-12)
    assert held.decisions == len(same.hits | same.borrowed | same.misses)
    assert (held.borrowed, held.unmatched) == (len(same.borrowed), len(same.misses))
    assert len(restricted.messages) < len(full.messages)


def test_missing_positions_borrow_other_samples_but_never_other_deals(tmp_path: Path) -> None:
    spec = load_spec(shaped_spec(tmp_path, 2, 2, False, 2))
    differs: list[bool] = []  # per instance that borrowed: whether other deals would differ
    for instance in generate_instances(spec, 4, 0):
        llm = LLM("fake")
        solved = make_game(spec, instance, llm)
        expand_sync(solved, progress=False)
        table = solve_cfr(solved, solver="cfr+", iterations=300).policy
        held = measure_heldout(solved, table, make_game(spec, instance, llm, sample_offset=2),
                               progress=False)
        full = make_game(spec, instance, llm, sample_offset=2)
        expand_sync(full, progress=False)
        anys = fixed([full.any_action(p) for p in range(2)])
        pooled = Replayed(truncated(table, 1e-3), solved, anys,
                          resample=lambda s: not s.is_deal_node(),
                          indistinct=heldout_module.same_private_info(solved))
        assert held.cfr_gain_per_player == pytest.approx(cfr_gain(full, pooled, anys), abs=1e-12)
        # Borrowing alone (deals looked up exactly), with and without other deals allowed.
        results, borrowed = {}, set()
        for name, resample in (("none", None), ("samples", lambda s: not s.is_deal_node()),
                               ("deals too", lambda s: True)):
            policy = Replayed(truncated(table, 1e-3), solved, anys, resample=resample)
            results[name] = cfr_gain(full, policy, anys)
            borrowed |= policy.borrowed if name == "samples" else set()
        if borrowed:
            # Borrowing changes what is played (against `any` at the missing positions) ...
            assert results["samples"] != pytest.approx(results["none"], abs=1e-9)
            # ... and other deals would change it again, where their policies differ there.
            differs.append(results["samples"] != pytest.approx(results["deals too"], abs=1e-9))
    assert differs and any(differs)


def test_a_failed_held_out_tree_keeps_the_solved_instance(tmp_path: Path) -> None:
    spec = load_spec(MIXED_2X2)
    instances = generate_instances(spec, 2, 0)
    # Instance 1's fresh samples (sample indices 2 and 3) cannot be generated.
    bad = frozenset(message_seeds(make_game(spec, instances[1], "fake",
                              sample_offset=spec.num_llm_seeds)))
    summary = gtsteer.solve(MIXED_2X2, llm=LLM(backend=SeededBackend(bad)), games=2, iterations=200,
                            out=tmp_path, heldout=True, quiet=True)
    assert summary.instances == [0, 1] and summary.failures == []
    assert summary.heldout_instances == [0]
    record = json.loads((tmp_path / "games" / "1.json").read_text())
    assert record["status"] == "solved" and record["heldout"] is None
    assert "model unavailable (injected)" in record["heldout_failure"]
    assert summary.metrics is not None and summary.metrics.cfr_gain_heldout.n == 1


def test_cli_heldout_prints_the_row_and_a_rerun_costs_nothing(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["solve", str(MIXED_2X2), "--llm", "fake", "--games", "2", "-k", "100", "--heldout",
            "--out", str(tmp_path)]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "cfr_gain_heldout" in first.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["schema_version"] == SCHEMA_VERSION == 7 and summary["heldout"] is True
    assert "clean estimate" in first.output and "nearest" in first.output
    held = summary["heldout_metrics"]
    assert set(held["replays"]) == {"history", "nearest", "distilled"}
    assert held["replays"]["history"]["cfr_gain"] == summary["metrics"]["cfr_gain_heldout"]
    again = runner.invoke(app, args)
    assert again.exit_code == 0
    rerun = json.loads((tmp_path / "summary.json").read_text())
    assert rerun["llm_calls"]["new_calls"] == 0
    rerun.pop("llm_calls"), summary.pop("llm_calls")
    assert rerun == summary
    assert "replayed decisions" in again.output
    plain = runner.invoke(app, args[:-4] + ["--out", str(tmp_path / "plain")])
    assert "cfr_gain_heldout" not in plain.output
