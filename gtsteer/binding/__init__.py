"""gtsteer.binding: a dialogue domain as an OpenSpiel game.

    from gtsteer.binding import load_game, expand_sync
    game = load_game("configs/trade_fruit_tone.yaml", llm="fake", instance=0)
    report = expand_sync(game)          # every LLM call of the tree, concurrently, cached
    # any OpenSpiel algorithm now traverses `game` with cache hits only
"""

from gtsteer.binding.domain_checks import DomainCheckError, register_instance_check
from gtsteer.binding.expand import ExpansionReport, expand, expand_sync
from gtsteer.binding.game import SHORT_NAME, DialogueGame, DialogueObserver, DialogueState, Request
from gtsteer.binding.growth import grow_game
from gtsteer.binding.instances import (
    Instance,
    generate_instances,
    make_instance,
    register_deal_private_info,
    register_joint_private_info,
    register_private_info,
    stable_int,
)
from gtsteer.binding.judge import Judgement, ask_judge, judge_prompt
from gtsteer.binding.loader import load_game, make_game
from gtsteer.binding.prompts import Turn
from gtsteer.binding.reward import (
    Reward,
    RewardContext,
    TerminalRecord,
    check_domain,
    compute_reward,
    get_utility,
    payoff_model,
    register_utility,
)
from gtsteer.binding.spec import (
    ANY,
    ConfigError,
    DomainSpec,
    GenerationSettings,
    JudgeSpec,
    PayoffSpec,
    load_spec,
    spec_from_dict,
)

__all__ = [
    "ANY",
    "SHORT_NAME",
    "ConfigError",
    "DialogueGame",
    "DialogueObserver",
    "DialogueState",
    "DomainCheckError",
    "DomainSpec",
    "ExpansionReport",
    "GenerationSettings",
    "Instance",
    "JudgeSpec",
    "Judgement",
    "PayoffSpec",
    "Request",
    "Reward",
    "RewardContext",
    "TerminalRecord",
    "Turn",
    "ask_judge",
    "check_domain",
    "compute_reward",
    "expand",
    "expand_sync",
    "generate_instances",
    "get_utility",
    "grow_game",
    "judge_prompt",
    "load_game",
    "load_spec",
    "make_game",
    "make_instance",
    "payoff_model",
    "register_deal_private_info",
    "register_instance_check",
    "register_joint_private_info",
    "register_private_info",
    "register_utility",
    "spec_from_dict",
    "stable_int",
]
