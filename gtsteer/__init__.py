"""gtsteer: steer language models with game-theoretic solvers.

    import gtsteer
    result = gtsteer.solve("schedule_meeting_dow", llm="fake", games=1)
    result.metrics.nash_conv.mean, result.folder, result.usage

`solve`, `psro`, `imitate` and `export` are the commands of the same names (`gtsteer.api`);
`LLM` is a model client, `Domain` a domain's code, `load_game` one instance as a pyspiel game.
"""

from __future__ import annotations

from typing import Any

# Registers the `gtsteer_dialogue` game type with pyspiel and the config loader that rebuilds
# its games, so `pyspiel.load_game("gtsteer_dialogue")` works after a bare `import gtsteer`
# (as OpenSpiel's and Gymnasium's games register at import). It loads the binding and the
# model layer, so the names below cost nothing more; the drivers load when a command runs.
import gtsteer.domains  # noqa: F401
from gtsteer._version import __version__
from gtsteer.api import export, imitate, psro, solve
from gtsteer.binding import Domain
from gtsteer.llm import LLM

__all__ = ["LLM", "Advisor", "Domain", "__version__", "export", "imitate", "load_game", "psro",
           "solve"]


def load_game(config_path: str, llm: Any = "fake", instance: int = 0, **kwargs: Any) -> Any:
    """Load one instance of a dialogue domain as a pyspiel game (see gtsteer.domains);
    `config_path` is a YAML path or a shipped config's name (`gtsteer configs`); `llm` as
    `gtsteer.solve` takes it (a model string, an `LLM` or a `Backend` object)."""
    from gtsteer.api import as_model
    from gtsteer.domains import load_game as _load_game

    return _load_game(config_path, llm=as_model(llm) or "fake", instance=instance, **kwargs)


def __getattr__(name: str) -> Any:
    # `gtsteer.Advisor` is resolved on first use (and then kept in the namespace, where pdoc
    # reads it): it reads dialogue configs (pyspiel), and a plain `import gtsteer` stays light.
    if name == "Advisor":
        from gtsteer.imitation.advisor import Advisor

        globals()[name] = Advisor
        return Advisor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
