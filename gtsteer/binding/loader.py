"""Building games: from a config path (`load_game`) or from objects (`make_game`).

Both register the game under one pyspiel short name whose parameters (config path, instance,
model, seed) are enough to rebuild it, so `pyspiel.load_game(str(game))` — which OpenSpiel's
serialization uses — returns an equivalent game in this or another process.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from gtsteer.binding.game import SHORT_NAME, DialogueGame, _game_type
from gtsteer.binding.instances import Instance, make_instance
from gtsteer.binding.pyspiel_registry import register_game
from gtsteer.binding.reward import check_domain
from gtsteer.binding.spec import DomainSpec, load_spec
from gtsteer.llm import LLM

#: Games built from in-memory specs, by key, so pyspiel.load_game(str(game)) finds them.
_LIVE: dict[str, tuple[DomainSpec, Instance, LLM]] = {}


def _llm(llm: str | LLM) -> LLM:
    """A model string gets its own client (own usage meter; the disk cache is shared).
    Pass one `LLM` to several games to meter them together."""
    return llm if isinstance(llm, LLM) else LLM(llm)


def _model_name(llm: LLM) -> str:
    return llm.model


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
    LLM samples (k = num_llm_seeds gives samples disjoint from the default game's)."""
    check_domain(spec)  # ConfigError before any LLM call
    client = _llm(llm)
    blob = json.dumps(
        [spec.model_dump(mode="json"), instance.model_dump(mode="json"), _model_name(client)],
        sort_keys=True,
    )
    key = hashlib.sha256(blob.encode()).hexdigest()[:16]
    _LIVE[key] = (spec, instance, client)
    params = {
        "config": config,
        "instance": instance.index,
        "llm": _model_name(client),
        "seed": seed,
        "num_games": 0,
        "deals": spec.num_deals,
        "key": key,
        "sample_offset": sample_offset,
    }
    return DialogueGame(spec, instance, client, params)


def load_game(
    config_path: str | Path,
    llm: str | LLM = "fake",
    instance: int = 0,
    *,
    num_games: int | None = None,
    seed: int = 0,
    num_deals: int | None = None,
    sample_offset: int = 0,
) -> DialogueGame:
    """Instance `instance` of the domain in `config_path` as a pyspiel game.

    The config is validated before anything else (`ConfigError` names the field); no LLM is
    called until a chance node or terminal is reached (or `expand` runs). `num_deals`
    overrides the config's (`--deals` on the command line).
    """
    spec = load_spec(config_path)
    if num_deals is not None:
        spec = spec.with_deals(num_deals)
    if instance < 0 or (num_games is not None and instance >= num_games):
        raise ValueError(f"instance {instance} is outside 0..{(num_games or 1) - 1}")
    inst = make_instance(spec, instance, seed)
    return make_game(spec, inst, llm, config=str(config_path), seed=seed,
                     sample_offset=sample_offset)


def _from_params(params: dict[str, Any]) -> DialogueGame:
    """pyspiel factory: rebuild a game from its parameters (used by deserialization)."""
    key = params.get("key", "")
    if key in _LIVE:
        spec, inst, client = _LIVE[key]
        return make_game(spec, inst, client, config=params.get("config", ""),
                         seed=params.get("seed", 0),
                         sample_offset=int(params.get("sample_offset", 0)))
    config = params.get("config", "")
    if not config:
        raise ValueError(f"{SHORT_NAME} needs `config` (a YAML path) or a live `key`")
    return load_game(
        config, llm=params.get("llm", "fake"), instance=int(params.get("instance", 0)),
        seed=int(params.get("seed", 0)), num_deals=int(params.get("deals", 0)) or None,
        sample_offset=int(params.get("sample_offset", 0)),
    )


register_game(_game_type(), _from_params)
