"""Fruit trading steered by offers (trade_fruit_offer): the exact offer reading,
the parse classifier, the calibrated trade reader (`params.agreement: ask`), the greedy offer,
the reward cases and the config's load-time checks. The exact agreement reading, the config's
own: tests/domains/test_fruit_agreement.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from domain_support import FRUIT_INFO, FRUIT_OWNED, FRUIT_VALUES, config_dict, spec_of

from gtsteer.binding import ConfigError, DomainSpec, compute_reward
from gtsteer.binding.prompts import Turn
from gtsteer.binding.reward_cases import OUTCOMES, RewardCase
from gtsteer.domains import load_spec, spec_from_dict
from gtsteer.domains.fruit_offer import (
    menu,
    offer_greedy,
    offer_message_value,
    read_offers,
    trade_label,
)
from gtsteer.domains.fruit_trade import baskets, render_counts, trade_values
from gtsteer.evals.classifiers import NO_VALUE, ParseClassifier, make_classifier
from gtsteer.evals.prompts import DEFINED, PLAIN
from gtsteer.evals.validation import JudgeRefused
from gtsteer.llm import LLM, Backend, GenerationRequest, RawCompletion, run_sync
from gtsteer.runs import eval_reward, eval_steering
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_judge import load_labelled, validate_classifier
from gtsteer.runs.eval_reward import CONFIGURED, write_cases

ROOT = Path(__file__).resolve().parents[2]
OFFER = ROOT / "gtsteer" / "configs" / "trade_fruit_offer.yaml"
FRUITS = ("apple", "banana", "blueberry", "kiwi")


def texts(message: str) -> list[str]:
    return [o.text() for o in read_offers(message, FRUITS)]


# ---- reading offers -------------------------------------------------------------------------


@pytest.mark.parametrize("message", [
    "I will give you 1 apple for 2 bananas.",
    "Hi Bob! How about my apple for two of your bananas?",
    "Can I get 2 bananas for 1 apple?",
    "Would you like an apple for a couple of your bananas?",
    "I'll give you one apple if you give me two bananas.",
    "I need 2 bananas. I can give you 1 apple in return.",
    "Could you give me two bananas? You can have one apple.",
    "Why don't we trade a single apple for 2 banana?",
    "One apple from me, two bananas from you.",
    "I'd be happy to get 2 bananas in exchange for 1 apple.",
])
def test_the_same_offer_in_many_words(message: str) -> None:
    assert texts(message) == ["1 apple for 2 bananas"]


def test_the_reverse_trade_is_read_as_the_reverse() -> None:
    # The same fruits and counts in the other direction: the hard negative of every offer.
    assert texts("I will give you 2 bananas for 1 apple.") == ["2 bananas for 1 apple"]
    assert texts("Could I have one apple? I'll give you two bananas.") == ["2 bananas for 1 apple"]
    assert texts("Would you give me your apple for two of my bananas?") == [
        "2 bananas for 1 apple"]
    # A reply quoting the other's offer says it from the other side: Bob takes Alice's
    # "1 apple for 2 bananas" (he gives the bananas).
    assert texts("I accept your offer of 1 apple for 2 bananas.") == ["2 bananas for 1 apple"]
    assert texts("Sure, here's my offer: 1 apple for 2 bananas.") == ["1 apple for 2 bananas"]


def test_counter_offers_refusals_and_vague_amounts() -> None:
    # A counter-offer names other counts; the offer set aside or refused is not made.
    assert texts("Instead of 1 apple for 2 bananas, how about 1 apple for 1 banana?") == [
        "1 apple for 1 banana"]
    assert texts("No, I won't give you 2 bananas for your apple.") == []
    assert texts("No, I won\u2019t give you 2 bananas for your apple.") == []
    assert texts("I can't give you 1 apple for 2 bananas, but I'll swap 1 kiwi for 1 apple.") == [
        "1 kiwi for 1 apple"]
    assert texts("I'd like some bananas for my apples.") == []  # no counts: no exact offer
    assert texts("I have 2 apples and 3 kiwis.") == []  # a basket, not an offer
    assert texts("Pineapples for kiwis?") == []


def test_several_fruits_a_side_and_several_offers() -> None:
    assert texts("Let's swap: 1 kiwi and 1 apple for three blueberries.") == [
        "1 apple and 1 kiwi for 3 blueberries"]
    assert texts("I'd trade you three blueberries for a banana, or 1 kiwi for 2 blueberries.") == [
        "3 blueberries for 1 banana", "1 kiwi for 2 blueberries"]
    assert texts("1 apple for 2 bananas and 1 kiwi for 2 blueberries") == [
        "1 apple for 2 bananas", "1 kiwi for 2 blueberries"]
    assert texts("1 apple for 2 bananas and 1 kiwi") == ["1 apple for 2 bananas and 1 kiwi"]


# ---- the parse classifier -------------------------------------------------------------------


def test_a_message_maps_to_the_menu_offer_it_makes() -> None:
    spec = load_spec(OFFER)
    assert len(menu(spec)) == 8
    value = offer_message_value
    assert value(spec, "offer", "My kiwi for two of your blueberries?") == (
        "1 kiwi for 2 blueberries")
    assert value(spec, "offer", "Two of my blueberries for your kiwi?") == (
        "2 blueberries for 1 kiwi")
    # Off the menu (1-for-1 bananas), no offer, another key: nothing.
    assert value(spec, "offer", "How about 1 apple for 1 banana instead?") is None
    assert value(spec, "offer", "Hello Bob, nice day for it.") is None
    assert value(spec, "tone", "I will give you 1 apple for 2 bananas.") is None


def test_the_parse_judge_passes_the_labelled_offers_exactly() -> None:
    spec = load_spec(OFFER)
    found = validate_classifier(spec, make_classifier("parse"), load_labelled())
    assert [(v.variant, v.accuracy.correct, v.accuracy.n, v.passes) for v in found] == [
        (PLAIN, 48, 48, True), (DEFINED, 48, 48, True)]
    assert found[0].chance == pytest.approx(1 / 8)


def test_the_parse_judge_refuses_a_domain_without_a_parser() -> None:
    spec = load_spec(ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml")
    classify = ParseClassifier().classify(spec, "tone", [("Alice", "Calm down.")], PLAIN,
                                          None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="domain `fruit_trade` has none"):
        run_sync(classify)


def test_eval_steering_refuses_parse_for_a_domain_without_a_parser_before_any_call() -> None:
    writer = LLM("fake")
    with pytest.raises(JudgeRefused, match=r"--classifier-llm parse: .*domain `schedule_meeting`"):
        eval_steering.measure(
            ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml",
            RunContext.of(llm=writer, reader="parse", progress=False),
            eval_steering.SteeringOptions(samples=2))
    assert writer.usage.requests == 0


def test_eval_judge_skips_a_domain_without_a_parser_and_keeps_the_others(tmp_path: Path) -> None:
    from gtsteer.runs import eval_judge
    from gtsteer.runs.context import RunContext

    report = eval_judge.run([ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml", OFFER],
                            RunContext.of(out=tmp_path / "judge", progress=False),
                            eval_judge.JudgeOptions(judges=["parse"]))
    assert [(v.config, v.accuracy.correct) for v in report.validations] == [
        ("trade_fruit_offer", 48), ("trade_fruit_offer", 48)]
    assert any("trade_fruit_tone" in s and "parse" in s for s in report.skipped)
    assert (tmp_path / "judge" / "judge.json").exists()


class OfferWriter(Backend):
    """Writes the instructed offer in its own words, except "1 apple for 1 kiwi", which it
    turns around; unguided, it offers nothing."""

    kind = "offer-writer"
    INSTRUCTION = re.compile(r'\(\w+ says: "I will give you (.+?)\."\)')

    def __init__(self) -> None:
        super().__init__("offer-writer")

    async def complete(self, request: GenerationRequest, json_schema: dict | None = None):
        found = self.INSTRUCTION.search(request.as_text())
        if found is None:
            return RawCompletion(text="Hello! What fruit did you bring today?")
        give, get = found.group(1).split(" for ")
        if found.group(1) == "1 apple for 1 kiwi":
            give, get = get, give
        return RawCompletion(text=f"Hi there. Could you give me {get}? You can have {give}.")


def test_eval_steering_reads_the_offers_with_the_parse_judge() -> None:
    report = eval_steering.measure(
        OFFER, RunContext.of(llm=LLM(backend=OfferWriter()), reader="parse", progress=False),
        eval_steering.SteeringOptions(samples=2))
    assert report.classifier_model == "parse" and report.llm_modes == {}
    run = report.run(PLAIN)
    assert run is not None and not run.calibrated
    acc = {r.value: r.accuracy.correct for r in run.per_instruction}
    assert acc == {**dict.fromkeys(menu(load_spec(OFFER)), 2), "1 apple for 1 kiwi": 0}
    assert {r.base_rate for r in run.per_instruction} == {0.0}
    (conf,) = run.confusion
    turned = conf.rows.index("1 apple for 1 kiwi")
    assert conf.counts[turned][conf.columns.index("1 kiwi for 1 apple")] == 2
    assert conf.columns == [*menu(load_spec(OFFER)), NO_VALUE]
    assert [sum(row) for row in conf.counts] == [2] * len(conf.rows)  # every sample counted
    assert conf.counts[-1][-1] == 2  # unguided: every message read as (none)
    assert {s.predicted[PLAIN] for s in report.samples if s.instructed == "any"} == {NO_VALUE}


# ---- the trade reader of `params.agreement: ask` --------------------------------------------



class TradeReader(Backend):
    """Log-likelihoods with a small model's prior (it likes "yes" and the first trade whatever
    the transcript), plus a bonus for what the transcript says: "yes" after "Deal", "no" after
    "No", and the trade whose first giver's fruit the last message names."""

    kind = "trade-reader"

    def __init__(self) -> None:
        super().__init__("trade-reader")
        self.prompts: list[str] = []

    async def complete(self, request: GenerationRequest, json_schema: dict | None = None):
        raise AssertionError("the offer utility asks choices only")

    async def score_options(self, request: GenerationRequest, options: list[str]):
        text = request.as_text()
        self.prompts.append(text)
        said = text if "Ben:" in text else ""
        last = said.split("Ben:")[-1].split("\n")[0]
        scores = {}
        for i, option in enumerate(options):
            if option in ("yes", "no"):
                prior = 3.0 * (option == "yes")
                bonus = 2.0 * said.count({"yes": "Deal", "no": "No"}[option])
            else:
                prior = 5.0 * (i == 0)
                bonus = 4.0 * (option.split(" gives ")[1].split()[1] in last)
            scores[option] = prior + bonus
        return scores


def ask_spec() -> DomainSpec:
    """The offer config read by the reward LLM's questions (`params.agreement: ask`)."""
    params = {**config_dict("trade_fruit_offer")["params"], "agreement": "ask"}
    return spec_of("trade_fruit_offer", params=params)


def _pay(*messages: str) -> tuple[list[float], TradeReader]:
    from domain_support import context

    backend = TradeReader()
    ctx = context(ask_spec(), FRUIT_INFO, LLM("reader", backend=backend, use_cache=False))
    ctx = ctx.model_copy(update={"transcript": [
        Turn(speaker=i % 2, instruction=None, text=m) for i, m in enumerate(messages)]})
    return run_sync(compute_reward(ctx)).returns, backend


def test_an_accepted_offer_is_paid_exactly() -> None:
    # Ann gives 1 kiwi (6 to her, 2 to Ben) for 2 of Ben's... he has 1 blueberry: impossible.
    returns, backend = _pay("I will give you 1 kiwi for 2 blueberries.", "Deal!")
    assert returns == [0.0, 0.0] and len(backend.prompts) == 2  # asked, and no trade can happen
    # Ann gives 1 apple (5 to her, 3 to Ben) for 1 kiwi (6 to her, 2 to Ben).
    returns, backend = _pay("How about my apple for your kiwi?", "Deal, I accept.")
    assert returns == [6 - 5, 3 - 2]
    assert len(backend.prompts) == 2  # yes/no and its content-free twin; one trade, no which
    assert not any("Which trade" in p for p in backend.prompts)


def test_the_trade_taken_is_read_past_the_models_favourite() -> None:
    # Two trades named; raw scores favour the first (Ann's apple: 5 against 4), calibrated
    # ones the trade the reply names (Ann gives 3 blueberries, Ben a kiwi: 0 against 4).
    returns, backend = _pay("How about my apple for your kiwi?",
                            "Deal, but make it 3 of your blueberries for 1 kiwi.")
    assert len([p for p in backend.prompts if "Which trade" in p]) == 2  # and its N/A twin
    # Ann: kiwi 6 - 3 blueberries at 1; Ben: 3 blueberries at 4 - kiwi 2.
    paid = trade_values(FRUIT_OWNED, FRUIT_VALUES, [{"blueberry": 3}, {"kiwi": 1}])
    assert returns == paid == [3.0, 10.0]


def test_no_trade_without_agreement_or_without_an_offer() -> None:
    returns, backend = _pay("How about my apple for your kiwi?", "No, thanks.")
    assert returns == [0.0, 0.0] and not any("Which trade" in p for p in backend.prompts)
    returns, backend = _pay("Hello Ben, lovely fruit!", "Deal!")  # "yes" would win; not asked
    assert returns == [0.0, 0.0] and backend.prompts == []


def test_trade_labels_name_both_sides() -> None:
    assert trade_label(["Ann", "Ben"], ({"apple": 1}, {"banana": 2})) == (
        "Ann gives 1 apple and Ben gives 2 bananas")


# ---- the greedy offer -----------------------------------------------------------------------


def test_greedy_offers_the_best_trade_it_can_pay_for() -> None:
    spec = load_spec(OFFER)
    # Ann: kiwi 6, apple 5, banana 2, blueberry 1; she owns no banana. Best affordable by
    # value: 2 blueberries (2) for 1 kiwi (6) = +4; "1 blueberry for 1 banana" is +1, "2 bananas
    # for 1 apple" (+1) she cannot pay.
    assert offer_greedy(spec, FRUIT_INFO[0]) == {"offer": "2 blueberries for 1 kiwi"}
    # Ben: blueberry 4, apple 3, kiwi 2, banana 1: 2 bananas (2) for 1 apple (3) = +1 and
    # 1 banana for 1 blueberry = +3; 1 kiwi for 2 blueberries = +6 (he owns 2 kiwis).
    assert offer_greedy(spec, FRUIT_INFO[1]) == {"offer": "1 kiwi for 2 blueberries"}
    broke = {"fruits_owned": render_counts({"apple": 0, "banana": 0, "blueberry": 1, "kiwi": 0}),
             "fruit_values": FRUIT_INFO[0]["fruit_values"]}
    # Only "1 blueberry for 1 banana" is affordable: taken even though worth only +1.
    assert offer_greedy(spec, broke) == {"offer": "1 blueberry for 1 banana"}


# ---- reward cases ---------------------------------------------------------------------------


def test_offer_cases_pay_what_their_text_says() -> None:
    spec = load_spec(OFFER)
    cases = write_cases(spec, 6, seed=0)
    assert [c.outcome for c in cases] == [o for o in OUTCOMES for _ in range(6)]
    for case in cases:
        owned, values = baskets(case.instance)
        made = [read_offers(t.text, FRUITS) for t in case.transcript]
        assert len(made[0]) == 1 and made[0][0] in menu(spec).values()
        if case.outcome == "valid":
            offer = made[0][0]
            gives = [dict(offer.gives), dict(offer.gets)]
            assert case.facts == {"deal": True,
                                  "trade": trade_label(case.instance.names, (gives[0], gives[1]))}
            assert case.truth == trade_values(owned, values, gives)
            assert made[1] in ([], [offer.reversed()])  # "Deal" or the same trade said back
        else:
            assert case.truth == [0.0, 0.0] and case.facts == {"deal": False, "trade": "none"}
            if case.outcome == "incomplete":  # another menu offer, left unanswered
                assert len(made[1]) == 1 and made[1][0] not in (made[0][0],
                                                                made[0][0].reversed())
    assert any(c.truth != [0.0, 0.0] for c in cases if c.outcome == "valid")


class OfferOracle(Backend):
    """Answers the reader's two questions from each case's facts (found by its transcript);
    the free path's payoffs are 0."""

    kind = "offer-oracle"
    supports_grammar = True

    def __init__(self, cases: list[RewardCase]):
        super().__init__("offer-oracle")
        self.cases = cases
        self.asked = 0

    async def complete(self, request: GenerationRequest, json_schema: dict[str, Any] | None = None):
        assert json_schema is not None
        return RawCompletion(text=json.dumps(dict.fromkeys(json_schema["properties"], 0.0)))

    async def score_options(self, request: GenerationRequest, options: list[str]):
        prompt = request.as_text()
        self.asked += 1
        case = next((c for c in self.cases if all(t.text in prompt for t in c.transcript)), None)
        if case is None:
            return dict.fromkeys(options, 0.0)
        right = ("yes" if case.facts["deal"] else "no") if options == ["yes", "no"] \
            else case.facts["trade"]
        return {o: float(o == right) for o in options}


def test_eval_reward_reads_every_offer_case_by_the_asked_questions(tmp_path: Path) -> None:
    data = config_dict("trade_fruit_offer")
    data["params"]["agreement"] = "ask"
    config = tmp_path / "trade_fruit_offer.yaml"  # the same name: the same generated cases
    config.write_text(yaml.safe_dump(data))
    cases = write_cases(load_spec(config), 4, seed=0)
    backend = OfferOracle(cases)
    report = eval_reward.measure(
        config, RunContext.of(llm=LLM(backend=backend), progress=False),
        eval_reward.RewardOptions(cases=4))
    assert [c.predicted[CONFIGURED] for c in report.cases] == [c.truth for c in cases]
    assert report.error(CONFIGURED, "all").norm.mean == 0.0
    assert backend.asked  # the configured path asked the questions


# ---- the config -----------------------------------------------------------------------------


def _error(**change: Any) -> str:
    data = config_dict("trade_fruit_offer")
    data.update(change)
    data["instruction_definitions"] = {}
    with pytest.raises(ConfigError) as info:
        spec_from_dict(data, "offer.yaml")
    return str(info.value)


def test_offers_are_checked_at_load() -> None:
    menu_of = config_dict("trade_fruit_offer")["actions"]["offer"]
    assert "is not one offer" in _error(actions={"offer": ["1 mango for 2 bananas", "any"]})
    assert "is not one offer" in _error(actions={"offer": ["some apples for a kiwi", "any"]})
    assert "more than params.max_count" in _error(actions={"offer": ["4 apples for 1 kiwi", "any"]})
    again = _error(actions={"offer": [*menu_of[:-1], "one apple for two bananas", "any"]})
    assert "field `actions.offer`" in again and "'1 apple for 2 bananas' again" in again
    params = {**config_dict("trade_fruit_offer")["params"], "offer_prompt": "{transcript} {x}"}
    assert "params.offer_prompt" in _error(params=params)


def test_psro_may_add_a_free_text_offer() -> None:
    spec = load_spec(OFFER).with_added_instruction("offer", "whatever is fair")
    assert "whatever is fair" in spec.actions["offer"] and len(menu(spec)) == 8
