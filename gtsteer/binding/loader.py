"""Building games from objects (`make_game`); from a config path, `gtsteer.domains.load_game`.

Every game is registered under one pyspiel short name whose parameters (config path, instance,
model, seed) are enough to rebuild it, so `pyspiel.load_game(str(game))` — which OpenSpiel's
serialization uses — returns an equivalent game in this process (by its live key) or in
another (by its config path, through the config loader `gtsteer.domains` installs: binding
cannot resolve a config's domain itself, DESIGN.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from gtsteer.binding.game import SHORT_NAME, DialogueGame, _game_type
from gtsteer.binding.instances import Instance
from gtsteer.binding.pyspiel_registry import register_game
from gtsteer.binding.shipped import DEFAULT_CONFIG
from gtsteer.binding.spec import DomainSpec
from gtsteer.llm import LLM, as_llm

#: Games built in this process, by key, so pyspiel.load_game(str(game)) finds them.
_LIVE: dict[str, tuple[DomainSpec, Instance, LLM]] = {}
#: Rebuilds a game from its pyspiel parameters when its key is not live (another process):
#: `gtsteer.domains` installs one that loads the config and binds its domain.
ConfigLoader = Callable[[dict[str, Any]], DialogueGame]
_CONFIG_LOADER: list[ConfigLoader] = []


def install_config_loader(loader: ConfigLoader) -> None:
    """Let `pyspiel.load_game` rebuild games from a config path (see the module docstring)."""
    _CONFIG_LOADER[:] = [loader]


def make_game(
    spec: DomainSpec,
    instance: Instance,
    llm: str | LLM = "fake",
    *,
    config: str = "",
    seed: int = 0,
    sample_offset: int = 0,
) -> DialogueGame:
    """The game of `instance` under `spec`, answered by `llm` (a model string or an `LLM`).

    With `spec.num_deals` > 1 the game deals `instance`'s private information by chance.
    `sample_offset` k seeds every message's sample i as sample i + k: the same tree with other
    LLM samples (k = num_llm_seeds gives samples disjoint from the default game's).
    The spec's domain checks ran when it was bound (`DomainSpec.with_domain`); an unbound
    spec that names a domain fails here, before any LLM call."""
    domain = spec.hooks
    client = as_llm(llm)
    blob = json.dumps(
        [spec.model_dump(mode="json"), domain.fingerprint(), instance.model_dump(mode="json"),
         client.model],
        sort_keys=True,
    )
    key = hashlib.sha256(blob.encode()).hexdigest()[:16]
    _LIVE[key] = (spec, instance, client)
    params = {
        "config": config,
        "instance": instance.index,
        "llm": client.model,
        "seed": seed,
        "num_games": 0,
        "deals": spec.num_deals,
        "key": key,
        "sample_offset": sample_offset,
    }
    return DialogueGame(spec, instance, client, params)


def _from_params(params: dict[str, Any]) -> DialogueGame:
    """pyspiel factory: rebuild a game from its parameters (used by deserialization)."""
    key = params.get("key", "")
    if key in _LIVE:
        spec, inst, client = _LIVE[key]
        return make_game(spec, inst, client, config=params.get("config", ""),
                         seed=params.get("seed", 0),
                         sample_offset=int(params.get("sample_offset", 0)))
    # No config: the shipped default, so a bare pyspiel.load_game(SHORT_NAME) plays a game.
    params = {**params, "config": params.get("config") or DEFAULT_CONFIG}
    if not _CONFIG_LOADER:
        raise ValueError(f"{SHORT_NAME}(config=...) is rebuilt by gtsteer.domains, which binds "
                         "the config's domain: import gtsteer.domains first")
    return _CONFIG_LOADER[0](params)


register_game(_game_type(), _from_params)
