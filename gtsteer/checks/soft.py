"""The warning tier: soft properties of a model and a domain, warned about, never raised.

An echoed instruction is stripped from the message (the isolation check makes sure of it), so
a high echo rate breaks nothing; it says the model repeats its instructions instead of
following them, which a domain author wants to know before trusting a steering result. A
message prompt without `{instruction}` is valid too, but no instruction reaches the model: every
instruction then plays alike and the solver has nothing to steer.
"""

from __future__ import annotations

import warnings

from gtsteer.binding.game import DialogueGame
from gtsteer.binding.spec import DomainSpec, placeholders
from gtsteer.checks.errors import CheckWarning

#: Share of messages that echoed their instruction above which a check warns.
ECHO_RATE_LIMIT = 0.5


def echo_rate_warnings(
    game: DialogueGame, name: str = "<game>", limit: float = ECHO_RATE_LIMIT
) -> list[str]:
    """Warn (`CheckWarning`) when more than `limit` of the game's generated messages echoed
    their instruction; returns the warning texts (empty when none)."""
    messages, echoed = len(game.messages), len(game.echoes)
    if not messages or echoed / messages <= limit:
        return []
    text = (f"{name}: {echoed} of {messages} messages ({echoed / messages:.0%}) repeated their "
            f"instruction (stripped before anyone saw it); above {limit:.0%}, the model echoes "
            "more than it follows")
    warnings.warn(text, CheckWarning, stacklevel=2)
    return [text]


def instruction_warnings(spec: DomainSpec, name: str = "<config>") -> list[str]:
    """Warn (`CheckWarning`) when `message_prompt` never places `{instruction}`; returns the
    warning texts (empty when it does)."""
    if "instruction" in placeholders(spec.message_prompt):
        return []
    text = (f"{name}: message_prompt has no {{instruction}}: no instruction reaches the model,"
            " so every instruction plays alike (add {instruction} where the speaker is told)")
    warnings.warn(text, CheckWarning, stacklevel=2)
    return [text]
