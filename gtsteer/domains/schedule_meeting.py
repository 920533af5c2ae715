"""Meeting scheduling with an exact utility (arXiv 2402.01704, Section 3).

Each player has private out-of-office days and a preference value for every day. The reward
LLM only reads *whether a day was agreed and which*; each player's payoff is then that day's
preference, and 0 to both without agreement or when either player is out of office that day.
"""

from __future__ import annotations

import random
import re
from typing import Literal

from pydantic import Field, field_validator

from gtsteer.binding.domain import DomainParams
from gtsteer.binding.domain_checks import DomainCheckError
from gtsteer.binding.instances import Instance, stable_int
from gtsteer.binding.reward import RewardContext
from gtsteer.binding.spec import ANY, DomainSpec, check_reward_fields
from gtsteer.domains.agreement import agreed_label
from gtsteer.domains.fruit_trade import parse_counts, render_counts

DOMAIN = "schedule_meeting"
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
OUT_OF_OFFICE, PREFERENCES = "out_of_office", "day_preferences"
NO_DAY = "none"
#: The reply instructions of a meeting with a second exchange (configs/
#: schedule_meeting_opposed.yaml), which the reading greedy baseline chooses from.
ACCEPT, COUNTER = "accepts the proposed day", "proposes its own best free day"
TAKE = "accepts the counter-proposal"
#: The reading greedy responder accepts a free day worth at least its best free day's minus
#: this (lab/studies/tension.py's `READING_K`).
READING_K = 2
#: `preferences: opposed`: the responder's value is low + high - the proposer's + [-N, N].
OPPOSED_NOISE = 2
#: Which day, once the reward prompt has said that both accepted one (`params.day_prompt`).
DAY_PROMPT = """{players} try to agree on a meeting day.
{transcript}

Which day did both {players} accept?
Answer:"""


class MeetingParams(DomainParams):
    """`params` of a meeting config (the cross-field checks are in `check_meeting`)."""

    days: list[str] = Field(default_factory=lambda: list(DAYS))
    #: Each day's preference is drawn from [low, high].
    value_range: tuple[int, int] = (1, 10)
    #: How many days each player is away: [low, high].
    out_of_office: tuple[int, int] = (1, 2)
    #: `independent`: each player's values drawn alone; `opposed`: the other players' values
    #: run against the first mover's (low + high - its value, plus an integer in [-2, 2],
    #: clipped), so the two tend to like different days (docs/TENSION.md).
    preferences: Literal["independent", "opposed"] = "independent"
    #: Which day, once both accepted one (asked over the named days).
    day_prompt: str = DAY_PROMPT

    @field_validator("days")
    @classmethod
    def _days(cls, v: list[str]) -> list[str]:
        if not v or len(set(v)) != len(v):
            raise ValueError(f"expected distinct day names, got {v!r}")
        if ANY in v or NO_DAY in v:
            raise ValueError(f'"{ANY}" and "{NO_DAY}" are not days')
        return v

    @field_validator("value_range")
    @classmethod
    def _values(cls, v: tuple[int, int]) -> tuple[int, int]:
        if not 0 <= v[0] <= v[1]:
            raise ValueError(f"need 0 <= low <= high, got [{v[0]}, {v[1]}]")
        return v

    @field_validator("day_prompt")
    @classmethod
    def _day_prompt(cls, v: str) -> str:
        return check_reward_fields(v)


def day_prompt(spec: DomainSpec) -> str:
    return MeetingParams.of(spec).day_prompt


def days_of(spec: DomainSpec) -> list[str]:
    return MeetingParams.of(spec).days


def render_days(days: list[str]) -> str:
    return ", ".join(days) if days else NO_DAY


def parse_days(text: str) -> list[str]:
    """Inverse of `render_days` ("Saturday, Sunday" -> [...]; "none" -> [])."""
    return [d.strip() for d in text.split(",") if d.strip() and d.strip() != NO_DAY]


def meeting_private_info(
    spec: DomainSpec, rng: random.Random, player: int, names: list[str]
) -> dict[str, str]:
    """Some out-of-office days (a count in `params.out_of_office`) and a value for every day."""
    params = MeetingParams.of(spec)
    days = params.days
    lo, hi = params.value_range
    k_lo, k_hi = params.out_of_office
    away = set(rng.sample(days, rng.randint(k_lo, k_hi)))
    values = {d: rng.randint(lo, hi) for d in days}
    return {OUT_OF_OFFICE: render_days([d for d in days if d in away]),
            PREFERENCES: render_counts(values)}


def _first_mover(spec: DomainSpec) -> int:
    return 0 if spec.opening is None else (spec.opening_speaker + 1) % spec.num_players


def meeting_joint_private_info(
    spec: DomainSpec, rng: random.Random, names: list[str]
) -> list[dict[str, str]]:
    """The first mover's notes (`meeting_private_info`), then every other player's drawn
    given them (`notes_given`); with independent preferences, each player's alone, in the
    order and with the draws the per-player hook made."""
    first = _first_mover(spec)
    mine = meeting_private_info(spec, rng, first, names)
    others = {p: notes_given(spec, rng, mine, p, names)
              for p in range(spec.num_players) if p != first}
    return [mine if p == first else others[p] for p in range(spec.num_players)]


def notes_given(spec: DomainSpec, rng: random.Random, first: dict[str, str], player: int,
                names: list[str]) -> dict[str, str]:
    """`player`'s notes given the first mover's: its own draw, whose values `preferences:
    opposed` replaces by low + high - the first mover's plus noise, clipped. Draws as
    lab/studies/tension.py's `opposed` does (a test keeps them equal)."""
    params = MeetingParams.of(spec)
    own = meeting_private_info(spec, rng, player, names)
    if params.preferences == "independent":
        return own
    lo, hi = params.value_range
    theirs = parse_counts(first[PREFERENCES])
    values = {d: min(hi, max(lo, lo + hi - theirs[d] + rng.randint(-OPPOSED_NOISE,
                                                                   OPPOSED_NOISE)))
              for d in params.days}
    return {**own, PREFERENCES: render_counts(values)}


def meeting_deal(spec: DomainSpec, instance: Instance, j: int) -> list[dict[str, str]]:
    """Deal j of a dealt meeting: the first mover keeps its notes, every other player's are
    drawn given them. So the proposer's opening is solved against the responders it cannot
    tell apart; redrawing its notes too would give each deal a proposer of its own, who
    would then know the responder it faces."""
    rng = random.Random(stable_int("gtsteer-deal", spec.name, instance.seed, j))
    first = _first_mover(spec)
    mine = instance.private_info[first]
    return [dict(mine) if p == first else notes_given(spec, rng, mine, p, list(instance.names))
            for p in range(spec.num_players)]


def meeting_features(spec: DomainSpec, info: dict[str, str]) -> list[float]:
    """Per day: 1 if out of office, then the preference / top of the value range."""
    params = MeetingParams.of(spec)
    days = params.days
    top = params.value_range[1] or 1
    away, prefs = set(parse_days(info[OUT_OF_OFFICE])), parse_counts(info[PREFERENCES])
    return [float(d in away) for d in days] + [prefs.get(d, 0) / top for d in days]


def meeting_greedy(spec: DomainSpec, info: dict[str, str]) -> dict[str, str]:
    """The day a person would propose without a solver: the player's highest-valued day it is
    not away on (the earliest in `params.days` on a tie)."""
    days = days_of(spec)
    away, prefs = set(parse_days(info[OUT_OF_OFFICE])), parse_counts(info[PREFERENCES])
    free = [d for d in days if d not in away]
    return {"day": max(free, key=lambda d: (prefs.get(d, 0), -days.index(d)))}


def _proposed_day(days: list[str], text: str) -> str | None:
    """The day `text` names first (the proposal of "not Tuesday; Wednesday?" is Tuesday: a
    reading baseline reads the words, not the intent)."""
    found = [(m.start(), d) for d in days
             if (m := re.search(rf"\b{re.escape(d)}s?\b", text, re.IGNORECASE))]
    return min(found)[1] if found else None


def meeting_reply_greedy(spec: DomainSpec, info: dict[str, str], messages: list[str]
                         ) -> dict[str, str]:
    """The reading greedy baseline after the first message: a reply accepts the day the last
    message proposes when the player is free then and values it within `READING_K` of its
    own best free day, else counters with that best day (`ACCEPT`/`COUNTER`); a last
    message takes a counter-proposal of a day the player can attend (`TAKE`). Every key whose
    values hold these instructions is set, and `day` to the day accepted (the proposed one)
    or countered with (its best free day): in a game without reply instructions, the shipped
    meeting, a reply agrees by naming the day it was offered. The baseline keeps the keys the
    turn offers."""
    days = days_of(spec)
    away, prefs = set(parse_days(info[OUT_OF_OFFICE])), parse_counts(info[PREFERENCES])
    best = meeting_greedy(spec, info)["day"]
    day = _proposed_day(days, messages[-1]) if messages else None
    free = day is not None and day not in away
    accept = free and prefs.get(day or "", 0) >= prefs.get(best, 0) - READING_K
    out = {"day": day if accept and day is not None else best}
    for key, values in spec.actions.items():
        if ACCEPT in values and COUNTER in values:
            out[key] = ACCEPT if accept else COUNTER
        if TAKE in values:
            out[key] = TAKE if free else ANY
    return out


def check_meeting(spec: DomainSpec) -> None:
    """What `MeetingParams` cannot see alone: day actions, away-day counts, payoff bounds."""
    params = MeetingParams.of(spec)
    days = params.days
    day_actions = spec.actions.get("day")
    if day_actions is not None:
        grown = {v for k, v in spec.grown if k == "day"}  # PSRO's new instructions: free text
        unknown = [d for d in day_actions if d != ANY and d not in days and d not in grown]
        if unknown:
            raise DomainCheckError("actions.day", f"{unknown} are not in params.days {days}")
    hi = params.value_range[1]
    k_lo, k_hi = params.out_of_office
    if not 0 <= k_lo <= k_hi < len(days):
        raise DomainCheckError(
            "params.out_of_office", f"need 0 <= low <= high < {len(days)}, got [{k_lo}, {k_hi}]"
        )
    if spec.payoff.min > 0 or spec.payoff.max < hi:
        raise DomainCheckError(
            "payoff", f"bounds [{spec.payoff.min}, {spec.payoff.max}] must cover 0..{hi}"
        )


def check_meeting_instance(spec: DomainSpec, instance: Instance) -> None:
    """Private info the utility can read: known days, a value in range for every day."""
    params = MeetingParams.of(spec)
    days = params.days
    lo, hi = params.value_range
    for p, info in enumerate(instance.private_info):
        away = parse_days(info.get(OUT_OF_OFFICE, ""))
        if any(d not in days for d in away) or len(set(away)) >= len(days):
            raise DomainCheckError(
                f"private_info.{p}.{OUT_OF_OFFICE}", f"{away} must be some of {days}"
            )
        prefs = parse_counts(info.get(PREFERENCES, ""))
        if sorted(prefs) != sorted(days) or any(not lo <= v <= hi for v in prefs.values()):
            raise DomainCheckError(
                f"private_info.{p}.{PREFERENCES}", f"need a value in {lo}..{hi} for each of {days}"
            )


def meeting_values(
    agreed_day: str | None, away: list[list[str]], preferences: list[dict[str, int]]
) -> list[float]:
    """Each player's preference for the agreed day; 0 to every player with no day, or on a
    day any player is away: a meeting one side cannot attend does not take place, so the
    proposer has a reason to find a day the other can make (issue 57)."""
    if agreed_day is None or any(agreed_day in out for out in away):
        return [0.0] * len(away)
    return [float(prefs.get(agreed_day, 0)) for prefs in preferences]


def named_days(days: list[str], text: str) -> list[str]:
    """The days `text` names ("monday", "Mondays" count), in `days` order."""
    return [d for d in days if re.search(rf"\b{re.escape(d)}s?\b", text, re.IGNORECASE)]


async def meeting_utility(ctx: RewardContext) -> list[float]:
    """The reward LLM reads the transcript, code pays: no day can be agreed that no message
    names; otherwise one calibrated question, did both accept one day (the reward prompt,
    yes / no), and after a yes, if several days were named, which one (`params.day_prompt`,
    over the named days).

    Asked as choices rather than one JSON answer: with the JSON extraction SmolLM2 never reported
    an agreement on templated accepted proposals (0 of 20) and copied the day of the prompt's
    example ("Friday") into 111 of 256 game transcripts (docs/BENCHMARKS.md, reward section).
    The naming rule keeps a calibrated choice from paying some day for a dialogue that names
    none ("Here is a possible conversation:"). The two questions are `agreement.agreed_label`,
    which the offer domain asks over fruit trades."""
    named = named_days(days_of(ctx.spec), "\n".join(t.text for t in ctx.transcript))
    day = await agreed_label(ctx, named, day_prompt(ctx.spec))
    away = [parse_days(info[OUT_OF_OFFICE]) for info in ctx.instance.private_info]
    prefs = [parse_counts(info[PREFERENCES]) for info in ctx.instance.private_info]
    return meeting_values(day, away, prefs)
