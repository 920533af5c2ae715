"""gtsteer.checks: the conformance checks every gtsteer game passes (PettingZoo's
`pettingzoo/test/`, for pyspiel games). Domain authors call the functions CI calls:

    from gtsteer.checks import check_spec
    from gtsteer.domains import load_spec
    check_spec(load_spec("my_domain.yaml"))      # raises ConformanceError naming the check

One check per module, generic over the game where the property is:
- `pyspiel_api_check(game)`: OpenSpiel's `random_sim_test` with serialization, one string per
  history, C++ CFR+ on the cached tree and a finite NashConv (any pyspiel game: the dialogue
  games and the Werewolf playstyle game);
- `isolation_check(game)`: a player's view holds its own private info and nobody else's, and
  no instruction reaches anyone but its speaker (dialogue games);
- `determinism_check(factory)`: the same game, history by history, in processes with different
  hash seeds (any game a `module:function` builds);
- `echo_rate_warnings(game)`: the warning tier, soft properties of a model rather than API
  violations (a model that echoes most instructions is poorly steerable, not broken);
- `check_game` / `check_spec`: all of the above for one dialogue game or config;
- `playthrough` / `replay`: OpenSpiel-style recorded games that replay their own actions
  (`dialogue_playthrough` for a config's game; `gtsteer check CONFIG --record FILE`).
"""

from gtsteer.checks.determinism import determinism_check, tree_digest
from gtsteer.checks.dialogue import (
    MAX_LEAVES,
    ConformanceReport,
    check_game,
    check_spec,
    leaves_bound,
    reduced_spec,
)
from gtsteer.checks.errors import CheckWarning, ConformanceError
from gtsteer.checks.isolation import isolation_check
from gtsteer.checks.playthrough import (
    Playthrough,
    dialogue_playthrough,
    playthrough,
    read_playthrough,
    replay,
)
from gtsteer.checks.pyspiel_api import ApiReport, pyspiel_api_check, walk
from gtsteer.checks.soft import ECHO_RATE_LIMIT, echo_rate_warnings

__all__ = [
    "ECHO_RATE_LIMIT",
    "MAX_LEAVES",
    "ApiReport",
    "CheckWarning",
    "ConformanceError",
    "ConformanceReport",
    "Playthrough",
    "check_game",
    "check_spec",
    "determinism_check",
    "dialogue_playthrough",
    "echo_rate_warnings",
    "isolation_check",
    "leaves_bound",
    "playthrough",
    "pyspiel_api_check",
    "read_playthrough",
    "reduced_spec",
    "replay",
    "tree_digest",
    "walk",
]
