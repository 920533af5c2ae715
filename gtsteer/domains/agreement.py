"""What both players agreed to, read by the reward LLM as calibrated choices.

A small model asked for the agreement as free JSON copies its prompt's example and misses
plain agreements (docs/BENCHMARKS.md, reward section), so a domain whose outcome is one of a
few things the dialogue *names* (a day, a fruit trade) reads it in two calibrated choices
(`RewardContext.choose_calibrated`):

1. nothing can be agreed that no message names: with no candidate, no question is asked;
2. did both accept the same one (the config's `payoff.prompt`, yes or no);
3. after a yes, if several were named, which one (the domain's own prompt, over the named
   candidates' labels).

The meeting domain names days (`schedule_meeting.meeting_utility`), the offer domain names
fruit trades (`fruit_offer.offer_utility`); both pass their candidates here as labels.
"""

from __future__ import annotations

from gtsteer.binding.reward import RewardContext

YES, NO = "yes", "no"


async def agreed_label(ctx: RewardContext, named: list[str], which_prompt: str) -> str | None:
    """The named candidate both players accepted, or None (none named, or the answer is no).

    `named`: the candidates' labels in the order the dialogue names them, without duplicates
    (the options of the `which_prompt` choice); a single candidate needs no second question."""
    if not named:
        return None
    if await ctx.choose_calibrated(ctx.spec.payoff.prompt, [YES, NO]) != YES:
        return None
    if len(named) == 1:
        return named[0]
    return await ctx.choose_calibrated(which_prompt, named)
