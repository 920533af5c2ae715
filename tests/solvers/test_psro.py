"""PSRO over instructions: known-payoff loop, growing action sets, bad proposer output."""

from __future__ import annotations

import numpy as np
import pytest
from binding_support import message_seeds
from psro_helpers import STRENGTH, STRENGTH_CONFIG, CountingBackend, ScriptedProposer, llm_for

from gtsteer.binding import (
    ConfigError,
    Domain,
    generate_instances,
    grow_game,
    make_game,
)
from gtsteer.domains import get_domain, load_spec, register_domain
from gtsteer.llm import LLM, LLMError
from gtsteer.solvers.psro import (
    PSROConfig,
    action_ids,
    build_metagame,
    filter_candidates,
    one_instruction_each,
    run_psro,
)

FRUIT = "gtsteer/configs/trade_fruit_tone.yaml"


def strength_games(n: int = 2) -> tuple[list, CountingBackend]:
    spec = load_spec(STRENGTH_CONFIG)
    backend = CountingBackend()
    llm = llm_for(backend)
    return [make_game(spec, inst, llm) for inst in generate_instances(spec, n)], backend


def test_psro_adds_the_true_best_response_for_both_players_then_stops():
    games, _ = strength_games()
    proposer = ScriptedProposer({
        "proposer": [["meek", "timid", "bold", "fierce"], ["bold", "Fierce!"]],
        "responder": [["fierce", "timid"], ["timid", "  BOLD "]],
    })
    result = run_psro(games, llm_for(proposer), PSROConfig(iterations=3, candidates=4))
    first, second = result.iterations[0], result.iterations[1]
    # both players were asked, each in both iterations
    assert [len(p) for p in proposer.prompts.values()] == [2, 2]
    # the strongest proposed stance is the true best response against any meta-strategy
    assert first.added == ["fierce", "fierce"]
    scores = {c.instruction: c.score for c in first.oracles[0].candidates}
    # exact scores: strength(own) - 0.5 * E[strength(other)] under the driver's meta-strategy
    # ... on the meta-strategy's support (RD's ~1e-6 projection floor is left out)
    other = {a: p for a, p in first.solutions["rd"].marginals[1].items() if p > 1e-4}
    expected_other = sum(p * {"calm": 0, "assertive": 1, "submissive": -1, "any": 0}[a]
                         for a, p in other.items()) / sum(other.values())
    assert scores["fierce"] == pytest.approx(3 - 0.5 * expected_other, abs=1e-9)
    assert scores["timid"] == pytest.approx(-1.5 - 0.5 * expected_other, abs=1e-9)
    assert first.oracles[0].dropped == {"duplicate": 1}  # "meek" is a synonym of submissive
    # nothing beats fierce in iteration 1: no new instruction, and the run stops there
    assert second.added == [None, None]
    assert second.oracles[0].reason and "improves" in second.oracles[0].reason
    assert second.oracles[0].dropped == {"duplicate": 1}  # "Fierce!" is fierce
    assert second.oracles[1].dropped == {}  # "  BOLD " is new for the responder, but weaker
    assert result.converged and len(result.iterations) == 2
    assert result.final_populations == [["calm", "assertive", "submissive", "any", "fierce"]] * 2
    # the meta-game's equilibrium moves to the new best response
    for concept in ("rd", "cce"):
        marg = second.solutions[concept].marginals
        assert marg[0]["fierce"] == pytest.approx(1.0, abs=2e-3), concept
    assert second.solutions["rd"].payoffs == pytest.approx([1.5, 1.5], abs=1e-2)
    # per-player tensors with the right labels and shape
    assert second.metagame.labels[0][-1] == "fierce"
    assert np.asarray(second.metagame.mean).shape == (2, 5, 5)
    assert second.metagame.ci_low is not None


def test_growing_the_action_set_keeps_old_ids_and_reuses_every_known_node():
    games, backend = strength_games(1)
    game = games[0]
    base = [list(game.spec.actions["stance"])] * 2
    build_metagame([game], base)
    old = game.instructions()
    grown = grow_game(game, "stance", "fierce")
    assert grown.instructions()[: len(old)] == old and grown.instructions()[-1] == "fierce"
    assert grown.spec.grown == [("stance", "fierce")]
    known = {"messages": set(grown.messages), "rewards": set(grown.rewards)}
    pops = [[*base[0], "fierce"], base[1]]
    calls_before = backend.calls
    _, work = build_metagame([grown], pops)
    # independent count: LLM nodes (message samples) of the profiles' histories not known before
    new_nodes = _new_message_nodes(grown, pops, known["messages"])
    assert new_nodes == 2 * 1  # fierce's message has 2 samples; the responder's replies below
    assert work.new_calls == backend.calls - calls_before
    # ... and the responder's replies under "fierce" (4 instructions x 2 samples x 2 branches)
    assert work.new_calls == _all_new_message_nodes(grown, pops, known["messages"])
    with pytest.raises(ConfigError, match="already"):
        grow_game(grown, "stance", "fierce")
    with pytest.raises(ConfigError, match="already"):
        grow_game(grown, "stance", "any")
    with pytest.raises(ConfigError, match="does not exist"):
        grow_game(grown, "tone", "x")


def _new_message_nodes(game, pops, known) -> int:
    """Message-sample histories of the first messages under new first instructions."""
    ids = action_ids(game, pops)
    root = game.new_initial_state()
    return sum(
        1
        for a in ids[root.current_player()]
        for outcome, _ in root.child(a).chance_outcomes()
        if (a, outcome) not in known
    )


def _all_new_message_nodes(game, pops, known) -> int:
    follow = one_instruction_each(game, action_ids(game, pops))
    count = 0

    def walk(state) -> None:
        nonlocal count
        if state.is_terminal():
            return
        if state.is_chance_node():
            for outcome, _ in state.chance_outcomes():
                count += (*state.history_key, outcome) not in known
                walk(state.child(outcome))
            return
        for a in follow(state):
            walk(state.child(a))

    walk(game.new_initial_state())
    return count


def test_fruit_iteration_new_calls_equal_new_llm_nodes():
    """With the fake model (messages and LLM-extracted rewards) and a separate proposer, each
    iteration's new game calls are exactly the nodes the game tables gained."""
    spec = load_spec(FRUIT)
    llm = LLM("fake")
    games = [make_game(spec, inst, llm) for inst in generate_instances(spec, 1)]
    proposer = ScriptedProposer({"proposer": [["sarcastic"]], "responder": [["cheerful"]]})
    new_calls: list[int] = []
    proposer_calls: list[int] = []

    def on_iteration(report) -> None:
        new_calls.append(report.llm.new_calls - report.llm.proposer_new_calls)
        proposer_calls.append(report.llm.proposer_new_calls)

    config = PSROConfig(iterations=1, candidates=1, stop_when_converged=False)
    result = run_psro(games, llm_for(proposer), config, on_iteration=on_iteration)
    added = result.iterations[0].added
    # iteration 0: the 4x4 profiles: 4 first messages x 2 samples, 4 x 4 replies x 2 x 2,
    # and one reward per terminal (4 x 2 x 4 x 2); plus the candidates' branches:
    # proposer "sarcastic" vs the responder's supported instructions (2 + 2*s1*2 messages, as
    # many rewards) and responder "cheerful" under the proposer's supported first messages.
    # (Candidates meet only opponent instructions in the meta-strategy's support.)
    support = [sum(p > config.support_tolerance for p in m.values())
               for m in result.iterations[0].solutions["rd"].marginals]
    base = 4 * 2 + 4 * 2 * 4 * 2 + 4 * 2 * 4 * 2
    candidates = ((2 + 2 * support[1] * 2 + 2 * support[1] * 2)
                  + (support[0] * 2 * 2 + support[0] * 2 * 2))
    assert new_calls[0] == base + candidates
    # iteration 1: an adopted candidate now meets the opponent instructions it was not scored
    # against (outside the support), and (sarcastic, cheerful) is new when both were adopted
    # (fake payoffs decide that); every branch costs its replies plus as many rewards
    missing = 0
    if added[0] == "sarcastic":
        missing += 2 * (4 - support[1]) * 2 * 2
    if added[1] == "cheerful":
        missing += (4 - support[0]) * 2 * 2 * 2
    if added == ["sarcastic", "cheerful"]:
        missing += 2 * 2 * 2
    assert new_calls[1] == missing
    assert proposer_calls == [2, 0]


def test_bad_proposer_output_is_dropped_and_counted():
    games, _ = strength_games(1)
    junk = ["calm", "CALM ", "", "   ", "x" * 2000, "any", "Any", "a|b", "fierce", "fierce"]
    proposer = ScriptedProposer({
        "proposer": [junk],
        "responder": ["this is not JSON at all"],
    })
    result = run_psro(games, llm_for(proposer), PSROConfig(iterations=1, candidates=8))
    p0, p1 = result.iterations[0].oracles
    assert p0.dropped == {"duplicate": 3, "empty": 2, "too_long": 1, "any": 2, "invalid": 1}
    assert [c.instruction for c in p0.candidates] == ["fierce"]
    assert p0.added == "fierce"
    assert p1.dropped == {"unparsable": 1}
    assert p1.added is None and p1.reason == "no valid candidate"
    assert p1.calls[0].raw == "this is not JSON at all"
    assert p0.calls[0].parsed == junk and "proposer" in p0.calls[0].prompt
    # the run went on: a final meta-game with the new instruction for player 0 only
    assert result.iterations[-1].populations[0][-1] == "fierce"
    assert "fierce" not in result.iterations[-1].populations[1]


def test_filter_is_case_whitespace_and_synonym_insensitive():
    out = filter_candidates(["Furious", "angrily", "Very  calm tone", "serene", "relaxed", 7],
                            ["angry", "calm"])
    assert out.valid == ["relaxed"]
    assert out.dropped == {"duplicate": 4, "not_text": 1}


@pytest.mark.parametrize("operator", ["shotgun", "better", "trajectory", "categorical"])
def test_every_operator_runs_on_the_fake_model_and_reruns_without_calls(operator):
    spec = load_spec(FRUIT)

    def once():
        llm = LLM("fake")
        games = [make_game(spec, inst, llm) for inst in generate_instances(spec, 2)]
        config = PSROConfig(iterations=1, candidates=2, operator=operator, meta_solver="cce")
        return run_psro(games, llm, config)

    first, second = once(), once()
    assert first.numbers() == second.numbers()
    assert sum(it.llm.new_calls for it in second.iterations) == 0
    assert all(len(it.oracles) == 2 for it in first.iterations[:-1])
    calls = first.iterations[0].oracles[0].calls
    assert calls and all(c.prompt and c.raw for c in calls)
    if operator == "trajectory":
        assert "payoff" in calls[0].prompt and "---" in calls[0].prompt
    if operator == "categorical":
        assert calls[0].purpose == "categories"


def test_bad_config_is_refused_by_field():
    with pytest.raises(ValueError):
        PSROConfig(candidates=0)
    with pytest.raises(ValueError):
        PSROConfig(operator="random")  # type: ignore[arg-type]


def test_psro_refuses_specs_it_cannot_grow():
    spec = load_spec(STRENGTH_CONFIG)
    two_keys = spec.model_copy(update={"actions": {"stance": ["calm", "any"],
                                                   "pace": ["slow", "any"]}})
    game = make_game(two_keys, generate_instances(spec, 1)[0], llm_for(CountingBackend()))
    with pytest.raises(ValueError, match="several"):
        run_psro([game], llm_for(CountingBackend()))
    games, _ = strength_games(1)
    with pytest.raises(ValueError, match="key"):
        run_psro(games, llm_for(CountingBackend()), PSROConfig(key="tone"))
    with pytest.raises(ValueError, match="at least one game"):
        run_psro([], llm_for(CountingBackend()))


def test_metagame_interval_is_the_per_entry_student_t_interval():
    from scipy import stats

    from gtsteer.solvers.psro import MetaGame

    per_instance = np.array([[[[1.0]], [[0.0]]], [[[3.0]], [[0.0]]], [[[5.0]], [[0.0]]]])
    mg = MetaGame(labels=[["a"], ["b"]], per_instance=per_instance, instances=[0, 1, 2])
    low, high = mg.interval()
    half = stats.t.ppf(0.975, 2) * 2.0 / np.sqrt(3)  # values 1, 3, 5: sd 2
    assert mg.mean[0, 0, 0] == 3.0
    assert (low[0, 0, 0], high[0, 0, 0]) == pytest.approx((3.0 - half, 3.0 + half))
    assert (low[1, 0, 0], high[1, 0, 0]) == (0.0, 0.0)
    assert MetaGame([["a"], ["b"]], per_instance[:1], [0]).interval() is None


def test_better_response_stops_at_the_first_candidate_that_beats_the_current_value():
    games, _ = strength_games(1)
    proposer = ScriptedProposer({
        "proposer": [["timid"], ["bold"], ["fierce"]],
        "responder": [["meek"]],  # a synonym of submissive, every time
    })
    result = run_psro(games, llm_for(proposer),
                      PSROConfig(iterations=1, candidates=3, operator="better"))
    p0, p1 = result.iterations[0].oracles
    assert p0.current_value == pytest.approx(0.5, abs=1e-2)  # both play assertive: 1 - 0.5
    assert [c.instruction for c in p0.candidates] == ["timid", "bold"]
    assert p0.added == "bold" and p0.tries == 2  # fierce was never asked for
    assert len(proposer.prompts["proposer"]) == 2
    assert p1.added is None and p1.tries == 3 and p1.dropped == {"duplicate": 3}
    assert p1.reason == "no valid candidate"


def test_categorical_proposes_a_category_then_instructions_inside_it():
    games, _ = strength_games(1)
    proposer = ScriptedProposer({
        "proposer": [["aggression", "stance"], ["bold", "fierce"],  # iteration 0
                     ["aggression", "humour"], ["timid"]],  # iteration 1
        "responder": [[""]],
    })
    result = run_psro(games, llm_for(proposer),
                      PSROConfig(iterations=2, candidates=2, operator="categorical"))
    p0 = result.iterations[0].oracles[0]
    assert [c.purpose for c in p0.calls] == ["categories", "instructions"]
    assert p0.calls[0].dropped == {"duplicate": 1}  # "stance" is the existing category
    assert p0.added == "fierce" and p0.added_category == "aggression"
    assert 'category "aggression"' in p0.calls[1].prompt
    # next iteration: the new category is ranked with its average score
    nxt = result.iterations[1].oracles[0].calls[0]
    assert "aggression: +" in nxt.prompt and nxt.dropped == {"duplicate": 1}
    assert result.iterations[0].oracles[1].reason == "no valid category"


def test_trajectory_prompt_ranks_instructions_and_dialogues_lowest_first():
    games, _ = strength_games(1)
    proposer = ScriptedProposer({"proposer": [["fierce"]], "responder": [["bold"]]})
    result = run_psro(games, llm_for(proposer),
                      PSROConfig(iterations=1, candidates=2, operator="trajectory"))
    prompt = result.iterations[0].oracles[0].calls[0].prompt
    ranked = [prompt.index(f"  {v}: ") for v in ("submissive", "any", "calm", "assertive")]
    assert ranked == sorted(ranked)  # scores -1.5, -0.5, -0.5, 0.5 against assertive
    shown = [prompt.index(f'--- stance "{v}", payoff') for v in ("submissive", "assertive")]
    assert shown == sorted(shown) and '"assertive", payoff +0.500' in prompt
    assert "Ada:" in prompt or "Ben:" in prompt or "Cy:" in prompt  # transcripts shown


@pytest.mark.parametrize("tolerance", [1e-4, 0.0])
def test_candidates_are_scored_only_against_the_meta_strategys_support(tolerance):
    """Every player's best response in the strength game is `assertive`, so RD puts all but its
    projection floor (~1e-6) there: with the default tolerance a candidate is played only
    against `assertive` (fewer calls, the same score up to the floor's mass); with 0 against
    all four instructions."""
    games, _ = strength_games(1)
    proposer = ScriptedProposer({"proposer": [["bold"]], "responder": [["bold"]]})
    new_calls: list[int] = []
    config = PSROConfig(iterations=1, candidates=1, stop_when_converged=False,
                        support_tolerance=tolerance)
    result = run_psro(games, llm_for(proposer), config,
                      on_iteration=lambda r: new_calls.append(r.llm.new_calls
                                                              - r.llm.proposer_new_calls))
    first = result.iterations[0]
    assert first.solutions["rd"].marginals[1]["assertive"] == pytest.approx(1.0, abs=1e-4)
    base = 4 * 2 + 4 * 2 * 4 * 2  # 4 first messages x 2 samples; 4 x 4 replies x 2 x 2
    support = 1 if tolerance else 4
    # proposer "bold": 2 first messages + 2 x support x 2 replies; responder "bold": replies
    # to the support's first messages (support x 2) x 2 samples
    assert new_calls[0] == base + (2 + 2 * support * 2) + support * 2 * 2
    oracle = first.oracles[0]
    # exact: strength(bold) - 0.5 * strength(assertive) = 2 - 0.5, up to the left-out mass
    assert oracle.candidates[0].score == pytest.approx(1.5, abs=1e-3)
    assert 0.0 < oracle.ignored_mass < 1e-3 if tolerance else oracle.ignored_mass == 0.0


def test_oracle_players_grow_only_the_named_players():
    games, _ = strength_games(1)
    proposer = ScriptedProposer({"proposer": [["fierce"]], "responder": [["fierce"]]})
    result = run_psro(games, llm_for(proposer),
                      PSROConfig(iterations=2, candidates=1, oracle_players=[0]))
    # asked in both iterations; the responder never
    assert [len(p) for p in proposer.prompts.values()] == [2, 0]
    assert result.iterations[0].added == ["fierce", None]
    assert [o.player for o in result.iterations[0].oracles] == [0]
    assert result.final_populations[1] == ["calm", "assertive", "submissive", "any"]
    assert result.final_populations[0][-1] == "fierce"
    with pytest.raises(ValueError, match=r"oracle_players: \[2\]"):
        run_psro(games, llm_for(proposer), PSROConfig(oracle_players=[2]))


# ---- issue 22: adoption decisions, labels, held-out check, categories ------------------------


async def _cooperative_strength(ctx) -> list[float]:
    own = [STRENGTH.get(ctx.instructions(p)[0], 0.0) for p in range(2)]
    return [own[0] + 0.5 * own[1], own[1] + 0.5 * own[0]]


async def _instance_strength(ctx) -> list[float]:
    own = [STRENGTH.get(ctx.instructions(p)[0], 0.0) for p in range(2)]
    bonus = 6.0 if "Ben" in ctx.instance.names else 0.0
    return [own[0] - 0.5 * own[1] + bonus, own[1] - 0.5 * own[0] + bonus]


register_domain(Domain(name="test_psro_cooperative_strength", utility=_cooperative_strength))
register_domain(Domain(name="test_psro_instance_strength", utility=_instance_strength))


def games_with(utility: str, n: int, backend=None) -> list:
    spec = load_spec(STRENGTH_CONFIG)
    spec = spec.model_copy(update={"domain": utility}).with_domain(get_domain(utility))
    llm = llm_for(backend or CountingBackend())
    return [make_game(spec, inst, llm) for inst in generate_instances(spec, n)]


def test_a_payoff_identical_copy_of_the_best_instruction_is_never_added():
    # `firm` pays exactly what `assertive` pays. RD leaves ~1e-6 on the other instructions,
    # below the support tolerance, so candidates are scored without them (they pay the
    # opponent less here). Before: the exact baseline was compared with the truncated score and
    # the clone won by 2e-6 (1000x the add threshold).
    proposer = ScriptedProposer({"proposer": [["firm"]], "responder": [[""]]})
    result = run_psro(games_with("test_psro_cooperative_strength", 1), llm_for(proposer),
                      PSROConfig(iterations=1, candidates=1))
    oracle = result.iterations[0].oracles[0]
    assert 0.0 < oracle.ignored_mass < 1e-4
    assert oracle.candidates[0].score == oracle.best_current == pytest.approx(1.5)
    assert oracle.added is None and result.iterations[0].added == [None, None]


class FailingOn(CountingBackend):
    """Message calls fail (after no retries) when the prompt holds every one of `words`."""

    def __init__(self, *words: str) -> None:
        super().__init__()
        self.words = words

    async def complete(self, request, json_schema=None):
        if all(w in request.as_text() for w in self.words):
            raise LLMError("scripted failure")
        return await super().complete(request, json_schema)


def test_an_instance_lost_while_scoring_a_candidate_leaves_its_baseline_too():
    # Instance 2 (Ben and Cy; +6 for everyone there) fails to expand "fierce". Before: fierce
    # was scored on instances 0-1 (2.5) against a baseline that still averaged in instance 2
    # (0.5 + 2 = 2.5), so the true best response was not added.
    games = games_with("test_psro_instance_strength", 3, FailingOn("fierce", "Ben"))
    proposer = ScriptedProposer({"proposer": [["fierce"]], "responder": [[""]]})
    result = run_psro(games, llm_for(proposer), PSROConfig(iterations=1, candidates=1))
    oracle = result.iterations[0].oracles[0]
    assert oracle.candidates[0].score == pytest.approx(2.5, abs=1e-4)
    assert oracle.best_current == pytest.approx(0.5, abs=1e-4)
    assert oracle.added == "fierce"
    assert result.iterations[1].metagame.instances == [0, 1]


def test_added_names_the_action_the_population_received():
    # The responder's "FIERCE" is the action "fierce" the proposer's oracle just added to the
    # game. Before: `added` said "FIERCE" while the population got "fierce".
    proposer = ScriptedProposer({"proposer": [["fierce"]], "responder": [["FIERCE"]]})
    result = run_psro(strength_games(1)[0], llm_for(proposer),
                      PSROConfig(iterations=1, candidates=1))
    first = result.iterations[0]
    assert first.added == ["fierce", "fierce"]
    assert first.oracles[1].proposed == "FIERCE" and first.oracles[0].proposed is None
    assert result.final_populations[1][-1] == "fierce"


async def _lucky(ctx) -> list[float]:
    """`charm` is worth nothing, except +4 for a speaker whose sampled message was lucky."""
    own = [STRENGTH.get(ctx.instructions(p)[0], 0.0) for p in range(2)]
    luck = [4.0 if ctx.instructions(p)[0] == "charm"
            and any(t.speaker == p and "lucky" in t.text for t in ctx.transcript) else 0.0
            for p in range(2)]
    return [own[0] - 0.5 * own[1] + luck[0], own[1] - 0.5 * own[0] + luck[1]]


register_domain(Domain(name="test_psro_lucky", utility=_lucky))


class LuckyOnSolvedSamples(CountingBackend):
    """Every message of the solved samples (sample index 0..S-1) is lucky; fresh ones are not."""

    def __init__(self, lucky_seeds: set[int]) -> None:
        super().__init__()
        self.lucky_seeds = lucky_seeds

    async def complete(self, request, json_schema=None):
        out = await super().complete(request, json_schema)
        if request.seed in self.lucky_seeds:
            out = out.model_copy(update={"text": "I feel lucky. " + out.text})
        return out


@pytest.mark.parametrize("gate", [False, True])
def test_heldout_check_rescores_the_adopted_instruction_on_fresh_samples(gate):
    spec = load_spec(STRENGTH_CONFIG)
    instance = generate_instances(spec, 1)[0]
    seeds = message_seeds(make_game(spec, instance, "fake"))
    games = games_with("test_psro_lucky", 1, LuckyOnSolvedSamples(seeds))
    proposer = ScriptedProposer({"proposer": [["charm"]], "responder": [[""]]})
    config = PSROConfig(iterations=1, candidates=1, heldout=True, heldout_gate=gate)
    result = run_psro(games, llm_for(proposer), config)
    oracle = result.iterations[0].oracles[0]
    # in-sample: 0 + 4 - 0.5 (the responder plays assertive) beats assertive's 0.5 ...
    assert oracle.candidates[0].score == pytest.approx(3.5, abs=1e-3)
    # ... on fresh samples charm is worth 0 - 0.5
    assert oracle.heldout is not None and not oracle.heldout.holds
    assert oracle.heldout.candidate == pytest.approx(-0.5, abs=1e-3)
    assert oracle.heldout.baseline == pytest.approx(0.5, abs=1e-3)
    assert (oracle.added is None) is gate
    assert ("charm" in result.final_populations[0]) is not gate
    if gate:
        assert "fresh samples" in oracle.reason
    with pytest.raises(ValueError, match="heldout"):
        PSROConfig(heldout_gate=True)


def test_categorical_values_must_fit_the_keys_sentence():
    # Before: the category prompt invited "a negotiation tactic" and its sentence-long values
    # were rendered through the stance template ("(Ada takes a offer a small concession first
    # stance.)").
    games, _ = strength_games(1)
    proposer = ScriptedProposer({
        "proposer": [["forceful stances"], ["bold", "offer a small concession first"]],
        "responder": [[""]],
    })
    result = run_psro(games, llm_for(proposer),
                      PSROConfig(iterations=1, candidates=2, operator="categorical"))
    p0 = result.iterations[0].oracles[0]
    assert p0.calls[1].dropped == {"does_not_fit": 1} and p0.calls[1].valid == ["bold"]
    assert [(c.instruction, c.rendered) for c in p0.candidates] == [
        ("bold", "(the speaker takes a bold stance.)")]
    assert "kinds of stance" in p0.calls[0].prompt and "<VALUE>" in p0.calls[0].prompt
    assert "negotiation tactic" not in p0.calls[0].prompt


def test_heldout_check_without_fresh_samples_never_passes_the_gate():
    # every fresh-sample message fails: no evidence, so the gate does not adopt (and says why)
    spec = load_spec(STRENGTH_CONFIG)
    instance = generate_instances(spec, 1)[0]
    solved = message_seeds(make_game(spec, instance, "fake"))

    class OnlySolvedSamples(CountingBackend):
        async def complete(self, request, json_schema=None):
            if request.seed not in solved:
                raise LLMError("no fresh samples today")
            return await super().complete(request, json_schema)

    games = games_with("test_psro_strength", 1, OnlySolvedSamples())
    proposer = ScriptedProposer({"proposer": [["fierce"]], "responder": [[""]]})
    result = run_psro(games, llm_for(proposer),
                      PSROConfig(iterations=1, candidates=1, heldout=True, heldout_gate=True))
    oracle = result.iterations[0].oracles[0]
    assert oracle.heldout is not None and oracle.heldout.error and not oracle.heldout.holds
    assert oracle.added is None and "not scored" in oracle.reason
    assert "fierce" not in result.final_populations[0]
    assert result.iterations[0].metagame.failures == {}  # the solved games are untouched
