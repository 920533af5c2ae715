"""Verdict games: the judge after every round, the stage limit, verdict tables, config errors."""

from __future__ import annotations

import pyspiel
import pytest
from binding_support import walk
from domain_support import KeywordJudge, config_dict, context, spec_of

from gtsteer.binding import (
    ConfigError,
    compute_reward,
    expand_sync,
    generate_instances,
    make_game,
    make_instance,
)
from gtsteer.binding.instances import deal_instances
from gtsteer.binding.judge import pick, probabilities
from gtsteer.domains import spec_from_dict
from gtsteer.domains.verdict import verdict_table
from gtsteer.llm import LLM, run_sync

# (type, verdict) -> [interrogator, suspect] per the paper's Table 1 (see the interrogation config)
INTERROGATION = {
    ("Guilty", "guilty"): [1.0, 0.0],
    ("Guilty", "not guilty"): [0.0, 1.0],
    ("Non-Guilty", "guilty"): [0.0, 0.0],
    ("Non-Guilty", "not guilty"): [1.0, 1.0],
}
TURING = {
    ("Machine", "machine"): [1.0, 0.0],
    ("Machine", "human"): [0.0, 1.0],
    ("Human", "machine"): [0.0, 0.0],
    ("Human", "human"): [1.0, 1.0],
}


@pytest.mark.parametrize(
    ("config", "table"), [("interrogation", INTERROGATION), ("turing_test", TURING)]
)
def test_typed_utilities_follow_the_table(config: str, table: dict) -> None:
    spec = spec_of(config)
    for (player_type, verdict), expected in table.items():
        info = [{"role": "interrogator"}, {"role": spec.players[1], "type": player_type}]
        reward = run_sync(compute_reward(context(spec, info, LLM("fake"), verdict=verdict)))
        assert reward.returns == expected, (player_type, verdict)


def test_court_is_zero_sum_by_verdict() -> None:
    spec = spec_of("court")
    info = [{"role": "prosecutor"}, {"role": "defence"}]
    for verdict, expected in {"guilty": [1.0, -1.0], "not guilty": [-1.0, 1.0]}.items():
        reward = run_sync(compute_reward(context(spec, info, LLM("fake"), verdict=verdict)))
        assert reward.returns == expected


def test_win_is_the_questioners_best_payoff() -> None:
    assert verdict_table(spec_of("court")).win_value() == 1.0
    table = verdict_table(spec_of("interrogation"))
    assert table.win_value() == 1.0 and table.target_verdict == "guilty"


def test_types_are_dealt_by_chance_and_stay_private() -> None:
    spec = spec_of("interrogation")
    types = [inst.private_info[1]["type"] for inst in generate_instances(spec, 40)]
    assert {"Guilty", "Non-Guilty"} == set(types) and 10 < types.count("Guilty") < 30
    instance = next(i for i in generate_instances(spec, 40) if i.private_info[1]["type"])
    game = make_game(spec, instance, LLM("fake"))
    state = game.new_initial_state()
    if state.is_chance_node():  # a dealt game (num_deals > 1): deal 0 is `instance` itself
        state.apply_action(0)
    secret = f"type: {instance.private_info[1]['type']}"
    assert secret in state.information_state_string(1)
    assert secret not in state.information_state_string(0)


@pytest.mark.parametrize("config", ["interrogation", "turing_test"])
def test_every_instance_deals_each_type_equally_often(config: str) -> None:
    """A uniform prior in every instance: drawing each deal's type left some instances with
    one type in every deal (nothing hidden) and others lopsided."""
    spec = spec_of(config)
    types = spec.params["types"]
    for instance in generate_instances(spec, 20):
        dealt = [d.private_info[1]["type"] for d in deal_instances(spec, instance)]
        assert dealt[0] == instance.private_info[1]["type"]  # deal 0 is the instance itself
        assert sorted(dealt) == sorted(types)
    for instance in generate_instances(spec.with_deals(4), 5):
        dealt = [d.private_info[1]["type"] for d in deal_instances(spec.with_deals(4), instance)]
        assert sorted(dealt) == sorted(types * 2)
        assert all(d.private_info[0] == instance.private_info[0]
                   for d in deal_instances(spec, instance))
    with pytest.raises(ConfigError, match="num_deals.*multiple of 2"):
        spec.with_deals(3)
    assert spec.with_deals(1).num_deals == 1  # one game per instance stays possible


# ---- the judge inside the game ---------------------------------------------------------------


def court_game(backend: KeywordJudge, **update):
    spec = spec_of("court", **update)
    llm = LLM("keyword", backend=backend, max_retries=0)
    return make_game(spec, make_instance(spec, 0), llm)


def play_first_actions(game, n_messages: int):
    state = game.new_initial_state()
    while not state.is_terminal() and state.replies < n_messages:
        state.apply_action(0)  # first instruction, then the first sample
    return state


def test_guilty_verdict_after_the_first_round_ends_the_game() -> None:
    backend = KeywordJudge(["Did you confess to the theft?"])
    state = play_first_actions(court_game(backend), 4)
    assert state.is_terminal() and state.replies == 2
    assert state.returns() == [1.0, -1.0]
    assert backend.judged == [["guilty", "not guilty", "continue"]]


def test_judge_is_asked_only_at_round_ends_and_must_decide_at_the_stage_limit() -> None:
    backend = KeywordJudge(["Where were you on Saturday?"])
    backend.score = lambda prompt, option: {"continue": 1.0, "not guilty": 0.5}.get(option, 0.0)
    state = play_first_actions(court_game(backend), 99)
    assert state.is_terminal() and state.replies == 4  # two rounds: the stage limit
    assert backend.judged == [["guilty", "not guilty", "continue"], ["guilty", "not guilty"]]
    assert state.returns() == [-1.0, 1.0]


def test_expansion_fills_every_verdict_so_traversal_makes_no_call() -> None:
    backend = KeywordJudge(["Did you confess?", "Where were you?"])
    game = court_game(backend, num_llm_seeds=2)
    report = expand_sync(game, progress=False)
    assert not report.failed and report.termination_requests > 0
    assert set(game.verdicts.values()) <= {"guilty", "not guilty", "continue"}
    calls = game.llm.usage.requests
    terminals = []
    walk(game.new_initial_state(), lambda s: terminals.append(s) if s.is_terminal() else None)
    assert game.llm.usage.requests == calls
    for state in terminals:  # the keyword judge convicts exactly when a question has "confess"
        confessed = any("confess" in t.text for t in state.turns if t.speaker == 0)
        assert state.returns() == ([1.0, -1.0] if confessed else [-1.0, 1.0])
        assert state.replies == 2  # this judge never continues


def test_verdict_games_pass_random_sim_and_cfr() -> None:
    from gtsteer.solvers import solve_cfr

    for name in ("court", "interrogation", "turing_test"):
        spec = spec_of(name)
        game = make_game(spec, make_instance(spec, 0), LLM("fake"))
        assert not expand_sync(game, progress=False).failed
        pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)
        result = solve_cfr(game, solver="cfr+", iterations=50)
        assert result.backend.startswith("open_spiel C++") and result.info_states > 1


def test_judge_temperature_samples_reproducibly() -> None:
    probs = probabilities({"guilty": 1.0, "not guilty": 0.0}, 1.0)
    assert probs["guilty"] == pytest.approx(0.7310585786)
    assert probabilities({"guilty": 1.0, "not guilty": 0.0}, 0.0) == {"guilty": 1.0,
                                                                      "not guilty": 0.0}
    draws = [pick(probs, seed) for seed in range(400)]
    assert draws == [pick(probs, seed) for seed in range(400)]
    assert 0.65 < draws.count("guilty") / 400 < 0.8


# ---- bad configs -------------------------------------------------------------------------------


def _error(data: dict) -> str:
    with pytest.raises(ConfigError) as info:
        spec_from_dict(data, "verdict.yaml")
    assert "verdict.yaml" in str(info.value)
    return str(info.value)


def test_judge_labels_that_do_not_match_the_table_fail_at_load() -> None:
    data = config_dict("interrogation")
    data["judge"]["verdicts"] = ["convicted", "acquitted"]
    message = _error(data)
    assert "field `params.utilities.Guilty`" in message and "judge.verdicts" in message
    data = config_dict("court")
    data["params"]["utilities"] = {"guilty": [1, -1], "innocent": [-1, 1]}
    assert "field `params.utilities`" in _error(data)


def test_table_rows_must_match_the_types() -> None:
    data = config_dict("turing_test")
    data["params"]["types"] = ["Human", "Robot"]
    assert "field `params.utilities`: rows" in _error(data)


def test_table_needs_one_payoff_per_player_within_bounds() -> None:
    data = config_dict("interrogation")
    data["params"]["utilities"]["Guilty"]["guilty"] = [1]
    assert "field `params.utilities.Guilty.guilty`" in _error(data)
    data = config_dict("interrogation")
    data["params"]["utilities"]["Guilty"]["guilty"] = [3, 0]
    assert "payoff bounds" in _error(data)


def test_target_verdict_must_be_a_verdict() -> None:
    data = config_dict("court")
    data["params"]["target_verdict"] = "hanged"
    assert "field `params.target_verdict`" in _error(data)


def test_verdict_game_without_judge_fails_at_load() -> None:
    data = config_dict("court")
    del data["judge"]
    assert "field `judge`" in _error(data)


def test_judge_labels_are_checked() -> None:
    data = config_dict("court")
    data["judge"]["continue_label"] = "guilty"
    assert "field `judge`" in _error(data)
    data = config_dict("court")
    data["judge"]["prompt"] = "{transcript} {evidence}"
    assert "field `judge.prompt`" in _error(data)
    data = config_dict("court")
    data["termination_prompt"] = "{transcript} Over?"
    assert "not both" in _error(data)


def test_private_features_show_only_the_own_type() -> None:
    from gtsteer.binding.features import private_features

    spec = spec_of("interrogation")
    assert private_features(spec, {"role": "suspect", "type": "Non-Guilty"}) == [0.0, 1.0]
    assert private_features(spec, {"role": "interrogator"}) == [0.0, 0.0]
    assert private_features(spec_of("court"), {"role": "prosecutor"}) == []


def test_sampling_judge_is_a_function_of_the_transcript() -> None:
    # a constant question and answer: every history has the same words, whatever the deal or
    # the instructions, so a sampling judge must give every one of them the same verdict
    backend = KeywordJudge(["Where were you?"], questioner_role="role: interrogator")
    backend.score = lambda prompt, option: -9.0 if option == "continue" else 0.0  # 50/50
    judge = {**config_dict("interrogation")["judge"], "temperature": 1.0}
    spec = spec_of("interrogation", judge=judge)
    game = make_game(spec, make_instance(spec, 0), LLM("keyword", backend=backend))
    assert game.dealt and not expand_sync(game, progress=False).failed
    first_round = {h: v for h, v in game.verdicts.items() if len(h) == 5}  # deal + 2 x (a, s)
    assert len(first_round) == 2 * 4 * 4 and len(set(first_round.values())) == 1
