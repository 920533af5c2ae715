"""Scenes and casts: a model writes one for `--theme`, else the built-in village is used."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from gtsteer.werewolf.llmcalls import CallRecord, LLMPool, call_structured
from gtsteer.werewolf.playstyles import PLAYSTYLE_NAMES
from gtsteer.werewolf.prompts import theme_prompt
from gtsteer.werewolf.rules import derive_seed, rng

BUILTIN_SCENE = (
    "Rain hammers the shutters of the Thornbury inn. The villagers gather by the fire, because "
    "last night something with claws came out of the woods."
)
BUILTIN_CAST: list[tuple[str, str, str]] = [
    ("Alice", "The innkeeper; brisk, practical, speaks in short orders.", "balanced"),
    ("Bram", "A blacksmith with a booming voice who loves a good argument.",
     "aggressive_provoker"),
    ("Clara", "The schoolteacher; patient, protective of anyone being picked on.",
     "protective_team_player"),
    ("Dmitri", "A traveling card sharp with a crooked grin and a story for everything.",
     "trickster"),
    ("Elin", "The miller's daughter, bored of tradition and quick to challenge it.",
     "rule_breaker"),
    ("Finn", "A shy shepherd who notices everything and says little.", "quiet_observer"),
    ("Greta", "The herbalist; warm, chatty, remembers every rumor.", "balanced"),
    ("Hugo", "A retired soldier, blunt and suspicious of smooth talkers.", "aggressive_provoker"),
    ("Ines", "The baker who feeds the whole street and hates to see a quarrel.",
     "protective_team_player"),
    ("Jonas", "A young poet who speaks in riddles when nervous.", "trickster"),
    ("Kaja", "The ferrywoman; dry humor, no patience for speeches.", "rule_breaker"),
    ("Lukas", "The village clerk; meticulous, keeps notes of who said what.", "quiet_observer"),
]


class CastMember(BaseModel):
    name: str = Field(min_length=1, max_length=40)
    story: str = Field(min_length=5, max_length=400)
    playstyle: Literal[PLAYSTYLE_NAMES]  # type: ignore[valid-type]


class ThemeCast(BaseModel):
    scene: str = Field(min_length=10, max_length=800)
    players: list[CastMember]

    @field_validator("players")
    @classmethod
    def _clean_names(cls, players: list[CastMember]) -> list[CastMember]:
        """Names become one capitalized word, a duplicate numbered (a repair, not a retry)."""
        seen: set[str] = set()
        for p in players:
            words = re.findall(r"[A-Za-z0-9]+", p.name)
            if not words:
                raise ValueError(f"player name {p.name!r} has no letters")
            base = words[0][:16].capitalize()
            if base.lower() == "moderator":
                base = "Mod"
            name, k = base, 2
            while name.lower() in seen:
                name, k = f"{base}{k}", k + 1
            seen.add(name.lower())
            p.name = name
        return players


def builtin_cast(n_players: int, seed: int) -> tuple[str, list[tuple[str, str, str]]]:
    cast = list(BUILTIN_CAST)
    rng(seed, "cast").shuffle(cast)
    chosen = sorted(cast[:n_players], key=lambda c: c[0])
    return BUILTIN_SCENE, chosen


def themed_cast(
    theme: str, n_players: int, seed: int, pool: LLMPool, model: str
) -> tuple[str, list[tuple[str, str, str]], CallRecord, bool]:
    """(scene, cast, call record, used_builtin). Falls back to the built-in cast on failure."""
    schema = _sized(n_players)
    prompt = theme_prompt(theme, n_players, list(PLAYSTYLE_NAMES))
    if pool.completion_style(model):
        prompt += "\nJSON:"
    value, rec = call_structured(pool, model, prompt, schema, bot="(theme)", purpose="theme",
                                 seed=derive_seed(seed, "theme", theme), max_tokens=900,
                                 temperature=0.8)
    if value is None:
        scene, cast = builtin_cast(n_players, seed)
        return scene, cast, rec, True
    cast = [(p.name, p.story, p.playstyle) for p in value.players]
    return value.scene, cast, rec, False


def _sized(n: int) -> type[ThemeCast]:
    """ThemeCast with exactly n players (so grammar-constrained models emit the right count)."""
    from pydantic import create_model

    return create_model(
        "ThemeCast", __base__=ThemeCast,
        players=(list[CastMember], Field(min_length=n, max_length=n)),
    )
