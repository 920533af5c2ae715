"""gtsteer.binding: a dialogue domain as an OpenSpiel game.

    from gtsteer.binding import expand_sync
    from gtsteer.domains import load_game   # a config names its domain; gtsteer.domains binds it
    game = load_game("gtsteer/configs/trade_fruit_tone.yaml", llm="fake", instance=0)
    report = expand_sync(game)          # every LLM call of the tree, concurrently, cached
    # any OpenSpiel algorithm now traverses `game` with cache hits only
"""

from gtsteer.binding.domain import GENERIC, Domain, DomainParams, FreeParams, RewardCases
from gtsteer.binding.domain_checks import DomainCheckError
from gtsteer.binding.expand import ExpansionError, ExpansionReport, expand, expand_sync
from gtsteer.binding.game import SHORT_NAME, DialogueGame, DialogueObserver, DialogueState, Request
from gtsteer.binding.growth import grow_game
from gtsteer.binding.instances import (
    Instance,
    generate_instances,
    make_instance,
    stable_int,
)
from gtsteer.binding.judge import Judgement, ask_judge, judge_prompt
from gtsteer.binding.loader import make_game
from gtsteer.binding.prompts import Turn
from gtsteer.binding.reward import (
    Reward,
    RewardContext,
    TerminalRecord,
    compute_reward,
    payoff_bounds,
    payoff_model,
)
from gtsteer.binding.spec import (
    ANY,
    ConfigError,
    DomainSpec,
    GenerationSettings,
    JudgeSpec,
    PayoffSpec,
    parse_spec,
    read_spec,
)

__all__ = [
    "ANY",
    "GENERIC",
    "SHORT_NAME",
    "ConfigError",
    "DialogueGame",
    "DialogueObserver",
    "DialogueState",
    "Domain",
    "DomainCheckError",
    "DomainParams",
    "DomainSpec",
    "ExpansionError",
    "ExpansionReport",
    "FreeParams",
    "GenerationSettings",
    "Instance",
    "JudgeSpec",
    "Judgement",
    "PayoffSpec",
    "Request",
    "Reward",
    "RewardCases",
    "RewardContext",
    "TerminalRecord",
    "Turn",
    "ask_judge",
    "compute_reward",
    "expand",
    "expand_sync",
    "generate_instances",
    "grow_game",
    "judge_prompt",
    "make_game",
    "make_instance",
    "parse_spec",
    "payoff_bounds",
    "payoff_model",
    "read_spec",
    "stable_int",
]
