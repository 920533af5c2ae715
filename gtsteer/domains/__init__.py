"""Domain code that YAML cannot say: exact utilities, judges, verdict tables, generators.

Each built-in domain is one `Domain` record below, registered by name; a config picks one with
`domain: <name>`. Load configs through this package (`load_spec`, `load_game`), which binds
the record to the spec; the binding then plays it without knowing any domain.
"""

from gtsteer.binding import Domain, RewardCases
from gtsteer.binding.loader import install_config_loader
from gtsteer.domains import (
    debate,
    fruit_offer,
    fruit_offer_cases,
    fruit_trade,
    fruit_trade_cases,
    schedule_meeting,
    schedule_meeting_cases,
    verdict,
)
from gtsteer.domains.load import bind, game_from_params, load_game, load_spec, spec_from_dict
from gtsteer.domains.registry import DOMAINS, get_domain, register_domain

FRUIT_TRADE = Domain(
    name="fruit_trade",
    params=fruit_trade.FruitParams,
    private_info=fruit_trade.fruit_private_info,
    utility=fruit_trade.fruit_trade_utility,
    bounds=fruit_trade.trade_bounds,
    validate=fruit_trade.check_fruit_spec,
    instance_check=fruit_trade.check_fruit_instance,
    features=fruit_trade.fruit_features,
    reward_cases=RewardCases(fruit_trade_cases.fruit_case, fruit_trade_cases.RULE.strip()),
)
FRUIT_OFFER = Domain(
    name=fruit_offer.DOMAIN,
    params=fruit_offer.OfferParams,
    private_info=fruit_trade.fruit_private_info,
    utility=fruit_offer.offer_utility,
    bounds=fruit_trade.trade_bounds,
    validate=fruit_offer.check_offer_spec,
    instance_check=fruit_trade.check_fruit_instance,
    features=fruit_trade.fruit_features,
    reward_cases=RewardCases(fruit_offer_cases.offer_case, fruit_offer_cases.RULE.strip(),
                             agreement=fruit_offer_cases.AGREEMENT),
    greedy=fruit_offer.offer_greedy,
    parse_message=fruit_offer.offer_message_value,
)
SCHEDULE_MEETING = Domain(
    name=schedule_meeting.DOMAIN,
    params=schedule_meeting.MeetingParams,
    joint_private_info=schedule_meeting.meeting_joint_private_info,
    deals=schedule_meeting.meeting_deal,
    utility=schedule_meeting.meeting_utility,
    validate=schedule_meeting.check_meeting,
    instance_check=schedule_meeting.check_meeting_instance,
    features=schedule_meeting.meeting_features,
    reward_cases=RewardCases(
        schedule_meeting_cases.meeting_case, schedule_meeting_cases.RULE.strip()
    ),
    greedy=schedule_meeting.meeting_greedy,
    reply_greedy=schedule_meeting.meeting_reply_greedy,
    # 2: a day either player is away pays both 0; 3: the greedy responder reads the proposal
    # (issue 57)
    version=3,
)
DEBATE = Domain(
    name=debate.DOMAIN,
    params=debate.DebateParams,
    joint_private_info=debate.debate_private_info,
    utility=debate.debate_utility,
    validate=debate.check_debate,
    instance_check=debate.check_debate_instance,
    features=debate.debate_features,
)
VERDICT_GAME = Domain(
    name=verdict.DOMAIN,
    params=verdict.VerdictParams,
    private_info=verdict.verdict_private_info,
    deals=verdict.verdict_deal,
    utility=verdict.verdict_utility,
    validate=verdict.check_verdict_game,
    instance_check=verdict.check_verdict_instance,
    features=verdict.verdict_features,
)
#: The domains this package ships (each played by a config in gtsteer/configs/).
BUILTIN = (FRUIT_TRADE, FRUIT_OFFER, SCHEDULE_MEETING, DEBATE, VERDICT_GAME)
for _domain in BUILTIN:
    register_domain(_domain)
# pyspiel.load_game("gtsteer_dialogue(config=...)") in a fresh process lands here.
install_config_loader(game_from_params)

__all__ = [
    "BUILTIN",
    "DEBATE",
    "DOMAINS",
    "FRUIT_OFFER",
    "FRUIT_TRADE",
    "SCHEDULE_MEETING",
    "VERDICT_GAME",
    "bind",
    "get_domain",
    "load_game",
    "load_spec",
    "register_domain",
    "spec_from_dict",
]
