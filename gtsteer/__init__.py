"""gtsteer: steer language models with game-theoretic solvers."""

from __future__ import annotations

from typing import Any

# Registers the `gtsteer_dialogue` game type with pyspiel and the config loader that rebuilds
# its games, so `pyspiel.load_game("gtsteer_dialogue")` works after a bare `import gtsteer`
# (as OpenSpiel's and Gymnasium's games register at import).
import gtsteer.domains  # noqa: F401
from gtsteer._version import __version__

__all__ = ["__version__", "load_game"]


def load_game(config_path: str, llm: Any = "fake", instance: int = 0, **kwargs: Any) -> Any:
    """Load one instance of a dialogue domain as a pyspiel game (see gtsteer.domains);
    `config_path` is a YAML path or a shipped config's name (`gtsteer configs`)."""
    from gtsteer.domains import load_game as _load_game

    return _load_game(config_path, llm=llm, instance=instance, **kwargs)


__all__ = ["Advisor", "load_game"]


def __getattr__(name: str) -> Any:
    # `gtsteer.Advisor` is resolved on first use: it reads dialogue configs (pyspiel), and a
    # plain `import gtsteer` stays light.
    if name == "Advisor":
        from gtsteer.imitation.advisor import Advisor

        return Advisor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
