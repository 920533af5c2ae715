"""The offer config's exact agreement reading (`params.agreement: exact`,
`fruit_offer.read_agreement`, the yes/no words of `fruit_accept`): acceptance by each cue and
by the reverse offer, refusals, counter-offers, the last offer taken, a speaker's own offer,
the utility paid end to end without a model call, and `gtsteer eval reward` on the config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from domain_support import FRUIT_INFO, FRUIT_OWNED, FRUIT_VALUES, config_dict, context, spec_of
from typer.testing import CliRunner

from gtsteer.binding import ConfigError, compute_reward
from gtsteer.binding.prompts import Turn
from gtsteer.cli import app
from gtsteer.domains import load_spec
from gtsteer.domains.fruit_accept import says_no, says_yes
from gtsteer.domains.fruit_offer import ASK, EXACT, OfferParams, read_agreement
from gtsteer.domains.fruit_trade import trade_values
from gtsteer.llm import LLM, run_sync
from gtsteer.runs.eval_reward import CONFIGURED, write_cases

ROOT = Path(__file__).resolve().parents[2]
OFFER = ROOT / "gtsteer" / "configs" / "trade_fruit_offer.yaml"
FRUITS = ("apple", "banana", "blueberry", "kiwi")
#: Alice's offer in every two-message case below: she gives 1 apple, Bob 1 kiwi.
APPLE_FOR_KIWI = "How about my 1 apple for your 1 kiwi?"
APPLE_KIWI = ({"apple": 1}, {"kiwi": 1})


def turns(*messages: str | tuple[int, str]) -> list[Turn]:
    """Messages spoken in turn from player 0, or (speaker, text) where the speaker is given."""
    out = []
    for i, m in enumerate(messages):
        speaker, text = m if isinstance(m, tuple) else (i % 2, m)
        out.append(Turn(speaker=speaker, instruction=None, text=text))
    return out


def trade(*messages: str | tuple[int, str]) -> tuple[dict[str, int], dict[str, int]] | None:
    """Who gives what in the trade read as accepted (players in order), or None."""
    found = read_agreement(turns(*messages), FRUITS)
    return None if found is None else found.trade()


# ---- acceptance ------------------------------------------------------------------------------


@pytest.mark.parametrize("reply", [
    "Deal.", "Deal, I accept.", "I accept.", "I accept your offer.", "Agreed!", "I agree.",
    "Yes.", "Yes, that works for me. Deal!", "Sure!", "Sure, why not?", "Okay.", "OK",
    "Alright, let's do it.", "Sounds good.", "Sounds good to me!", "It's a deal.",
    "You've got a deal.", "I'll take it.", "Happy to!", "I'd be happy to.", "Works for me.",
    "That works for me, thanks!", "Of course.", "Absolutely, count me in.",
    "No problem, deal!", "Okay, can you hand it over now?", "I don't need bananas, but I accept.",
    "Sure\u2014happy to.", "Great!", "Perfect, Alice.", "Let's trade!", "I'm happy with that.",
    "I'm not sure about it, but okay.", "Sure, if you like.",
])
def test_each_cue_accepts_the_pending_offer(reply: str) -> None:
    assert says_yes(reply) and not says_no(reply)
    assert trade(APPLE_FOR_KIWI, reply) == APPLE_KIWI


@pytest.mark.parametrize("reply", [
    "I'll give you 1 kiwi for 1 apple.",  # the same trade from Bob's side
    "Agreed: I'll give you 1 kiwi for 1 apple.",
    "I accept your offer of 1 apple for 1 kiwi.",  # quoting her offer reads as its reverse
    "Could you give me your apple? You can have my kiwi.",
    "Great, one kiwi from me, one apple from you.",
])
def test_the_reverse_offer_accepts(reply: str) -> None:
    assert trade(APPLE_FOR_KIWI, reply) == APPLE_KIWI


def test_the_accepted_trade_is_paid_as_offered_whoever_accepts() -> None:
    # Bob proposes after an opening that offers nothing; Alice accepts: Bob gives the apple.
    assert trade("Hello Bob!", "I'll give you 1 apple for 2 bananas.", "Deal!") == (
        {"banana": 2}, {"apple": 1})
    found = read_agreement(turns("Hello Bob!", "I'll give you 1 apple for 2 bananas.", "Deal!"),
                           FRUITS)
    assert found is not None and (found.speaker, found.offer.text(), found.accepted_at) == (
        1, "1 apple for 2 bananas", 2)
    # Her offer quoted in her words, with a yes, is no other trade.
    assert trade("I'll give you 1 apple for 2 bananas.", "Deal: 1 apple for 2 bananas!") == (
        {"apple": 1}, {"banana": 2})


# ---- no acceptance ----------------------------------------------------------------------------


@pytest.mark.parametrize("reply", [
    "No.", "No, I reject that offer.", "No thanks, I'd rather keep my fruit.", "No deal.",
    "That's not a deal.", "Not a deal, sorry.", "I decline.", "I refuse.", "I'll pass.",
    "I can't accept that.", "I don't agree.", "I'm not sure.", "Nope, I won't.",
    "Yes, I'd rather keep my fruit.", "Okay, but I won't give you my kiwi.",
    "Sure. Actually, no.", "Deal! No wait, I changed my mind.",
    "Deal?", "Is it a deal?", "Are you sure, Alice?", "Hmm, let me think about it.", "",
    "Great to see you. What else do you have?",
    "No, I won't give you 1 kiwi for 1 apple.",  # the reverse offer, refused
])
def test_refusals_questions_and_silence_accept_nothing(reply: str) -> None:
    assert not says_yes(reply)
    assert trade(APPLE_FOR_KIWI, reply) is None


@pytest.mark.parametrize("reply", [
    "How about 1 kiwi for 2 bananas instead?",  # another trade
    "No. I'll give you 1 kiwi for 2 apples.",
    "Sure, I'll give you 1 kiwi for 2 apples.",  # a yes, but another count of the same fruit
    "Okay: 1 kiwi for 1 banana.",
    "Deal, but make it 2 of your apples for 1 kiwi.",
    "Deal! Also, would you give me 1 banana for 1 blueberry?",  # accept-then-propose by a yes
    # A condition or an addition naming a fruit: another trade, though no exact offer.
    "Sure, if you add a banana.", "Deal, and I want 2 bananas too.",
    "Sure, but only if you give me 2 kiwis.",
])
def test_a_counter_offer_is_no_acceptance(reply: str) -> None:
    assert trade(APPLE_FOR_KIWI, reply) is None


def test_a_speakers_own_offer_is_never_accepted_by_itself() -> None:
    assert trade((0, APPLE_FOR_KIWI), (0, "I'll give you 1 apple for 1 kiwi. Deal!")) is None
    assert trade(APPLE_FOR_KIWI, "Hmm.", "Deal, I accept!") is None  # Alice's yes to herself
    # Bob's counter-offer and then Bob's own yes: nothing; Alice's yes to it: his trade.
    counter = "No. I'll give you 1 kiwi for 2 blueberries."
    assert trade(APPLE_FOR_KIWI, counter, (1, "Deal?"), (1, "Deal!")) is None
    assert trade(APPLE_FOR_KIWI, counter, "Fine, deal.") == ({"blueberry": 2}, {"kiwi": 1})
    # A refusal before a change of mind leaves the offer pending.
    assert trade(APPLE_FOR_KIWI, "No.", "Please?", "Okay, deal.") == APPLE_KIWI


# ---- which offer ------------------------------------------------------------------------------


def test_the_last_offer_is_the_one_a_yes_takes() -> None:
    two = "I'll give you 1 apple for 2 bananas, or 1 kiwi for 2 blueberries."
    assert trade(two, "Deal.") == ({"kiwi": 1}, {"blueberry": 2})
    # Saying one alternative back takes that one.
    assert trade(two, "I'll give you 2 bananas for 1 apple.") == ({"apple": 1}, {"banana": 2})
    # Alice's second message replaces her first offer.
    assert trade((0, APPLE_FOR_KIWI), (0, "Actually, 1 apple for 2 bananas."), (1, "Deal.")) == (
        {"apple": 1}, {"banana": 2})
    assert trade((0, APPLE_FOR_KIWI), (0, "Actually, 1 apple for 2 bananas."),
                 (1, "I'll give you 1 kiwi for 1 apple.")) is None  # no longer on the table


def test_accepting_by_the_reverse_then_proposing_keeps_the_first_trade() -> None:
    both = "I'll give you 1 kiwi for 1 apple. Would you also give me 1 banana for 1 blueberry?"
    assert trade(APPLE_FOR_KIWI, both) == APPLE_KIWI
    # The new proposal is pending; when Alice takes it, the later agreement is paid.
    assert trade(APPLE_FOR_KIWI, both, "Sure!") == ({"banana": 1}, {"blueberry": 1})
    # A refusal after an agreement does not undo it.
    assert trade(APPLE_FOR_KIWI, "Deal.", "Hmm, no.") == APPLE_KIWI


# ---- the utility, end to end -------------------------------------------------------------------



def _pay(*messages: str) -> tuple[list[float], LLM]:
    llm = LLM("fake")
    ctx = context(load_spec(OFFER), FRUIT_INFO, llm)
    ctx = ctx.model_copy(update={"transcript": turns(*messages)})
    return run_sync(compute_reward(ctx)).returns, llm


@pytest.mark.parametrize("reply", ["Deal, I accept.", "Agreed: I'll give you 1 kiwi for 1 apple."])
def test_the_utility_pays_the_accepted_trade_without_asking(reply: str) -> None:
    returns, llm = _pay("How about my apple for your kiwi?", reply)
    # Ann gives 1 apple (5 to her, 3 to Ben) for 1 kiwi (6 to her, 2 to Ben).
    paid = trade_values(FRUIT_OWNED, FRUIT_VALUES, [{"apple": 1}, {"kiwi": 1}])
    assert returns == paid == [1.0, 1.0]
    assert llm.usage.requests == 0


def test_the_utility_pays_nothing_without_acceptance_or_for_an_impossible_trade() -> None:
    for reply in ("No deal.", "How about 1 kiwi for 2 bananas instead?"):
        returns, llm = _pay("How about my apple for your kiwi?", reply)
        assert returns == [0.0, 0.0] and llm.usage.requests == 0
    # Accepted, but Ben has 1 blueberry, not 2: the trade cannot happen.
    returns, llm = _pay("I will give you 1 kiwi for 2 blueberries.", "Deal!")
    assert returns == [0.0, 0.0] and llm.usage.requests == 0
    # Ann's 3 blueberries (1 each to her, 4 to Ben) for Ben's kiwi (6 to her, 2 to him).
    returns, _ = _pay("Would you give me your kiwi for 3 of my blueberries?", "Sure, deal!")
    assert returns == [3.0, 10.0]


# ---- the config's choice ------------------------------------------------------------------------


def test_the_config_reads_exactly_and_says_so() -> None:
    assert config_dict("trade_fruit_offer")["params"]["agreement"] == EXACT
    assert OfferParams.of(load_spec(OFFER)).agreement == EXACT
    params = {k: v for k, v in config_dict("trade_fruit_offer")["params"].items()
              if k != "agreement"}
    assert OfferParams.of(spec_of("trade_fruit_offer", params=params)).agreement == EXACT
    asked = spec_of("trade_fruit_offer", params={**params, "agreement": ASK})
    assert OfferParams.of(asked).agreement == ASK


@pytest.mark.parametrize("value", ["llm", "Exact", None, 1])
def test_an_unknown_reading_is_refused_by_name(value: object) -> None:
    params = {**config_dict("trade_fruit_offer")["params"], "agreement": value}
    with pytest.raises(ConfigError) as info:
        spec_of("trade_fruit_offer", params=params)
    message = str(info.value)
    assert "params.agreement" in message and "`exact`" in message and "`ask`" in message
    assert repr(value) in message


def test_the_reading_is_part_of_the_run_key() -> None:
    # A changed params block changes what a run key hashes (gtsteer.runs.solve.run_key).
    exact, asked = load_spec(OFFER), spec_of(
        "trade_fruit_offer",
        params={**config_dict("trade_fruit_offer")["params"], "agreement": ASK})
    assert exact.model_dump(mode="json") != asked.model_dump(mode="json")
    assert exact.hooks.fingerprint() == asked.hooks.fingerprint()


# ---- gtsteer eval reward ------------------------------------------------------------------------


def test_eval_reward_on_the_fake_model_reads_every_template_case(tmp_path: Path) -> None:
    out = tmp_path / "rw"
    result = CliRunner().invoke(app, ["eval", "reward", str(OFFER), "--llm", "fake",
                                      "--cases", "6", "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "reward.json").read_text())
    cases = write_cases(load_spec(OFFER), 6, seed=0)
    assert [c["transcript"].count("\n") for c in data["cases"]] == [1] * 18
    assert [c["predicted"][CONFIGURED] for c in data["cases"]] == [c.truth for c in cases]
    valid = [c for c in data["cases"] if c["outcome"] == "valid"]
    assert len(valid) == 6 and any(c["truth"] != [0.0, 0.0] for c in valid)
    configured = {e["outcome"]: e for e in data["errors"] if e["path"] == CONFIGURED}
    assert all(e["norm"]["mean"] == 0.0 and e["failures"] == 0 for e in configured.values())
    assert data["configured_path"] == (
        "extract-then-compute (utility `fruit_offer`, agreement read `exact`)")


def test_every_template_case_is_read_as_its_outcome() -> None:
    for case in write_cases(load_spec(OFFER), 30, seed=3):
        found = read_agreement(case.transcript, FRUITS)
        assert (found is not None) == case.facts["deal"], case.transcript
