"""Werewolf with LLM bots: a pure state machine, per-bot context, a router, SQLite persistence.

    from gtsteer.werewolf.runner import GameRunner, create_game
    from gtsteer.werewolf.state import GameConfig
    from gtsteer.werewolf.store import GameStore
    store = GameStore("/tmp/ww.sqlite")
    state = create_game(store, GameConfig(n_players=7, rules="reference"), seed=1, model="fake")
    GameRunner(store).run(state)

The engine never knows how a playstyle policy was trained; it only asks a `PlaystyleChooser`.
Only steering imports beyond `gtsteer.llm` (DESIGN.md). The web app is `gtsteer.werewolf.web`.
"""

from gtsteer.werewolf.engine import IllegalDecision, legal_targets, new_game, pending, step
from gtsteer.werewolf.playstyles import (
    PLAYSTYLES,
    AssignedPlaystyle,
    InfoState,
    PlaystyleChooser,
)
from gtsteer.werewolf.rules import Role, WerewolfConfigError
from gtsteer.werewolf.state import Decision, GameConfig, GameState, Pending, Player

__all__ = [
    "PLAYSTYLES",
    "AssignedPlaystyle",
    "Decision",
    "GameConfig",
    "GameState",
    "IllegalDecision",
    "InfoState",
    "Pending",
    "Player",
    "PlaystyleChooser",
    "Role",
    "WerewolfConfigError",
    "legal_targets",
    "new_game",
    "pending",
    "step",
]
