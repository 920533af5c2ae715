"""Roles, teams, role assignment and the rule text every bot reads.

Two night tables (docs/WEREWOLF.md): "reference" (the reference app: the abductee is immune and
dies with the maniac, no repeat abduction, one-time kills for doctor and detective, two pack
chat rounds with the last wolf picking) and "simple" (one pack round, the first free wolf picks,
no immunity). Tie rule: plurality; on a tie nobody is eliminated by default (a documented
deviation from the reference, which draws a tied player; `ties="random"` does that).
The maniac reads as evil to the detective but wins with the village, and counts with the
village in the wolves' parity check.
"""

from __future__ import annotations

import hashlib
import json
import random
from enum import Enum
from typing import Any


class Role(str, Enum):
    VILLAGER = "villager"
    WEREWOLF = "werewolf"
    DOCTOR = "doctor"
    DETECTIVE = "detective"
    MANIAC = "maniac"


ROLE_NAMES = tuple(r.value for r in Role)
MIN_PLAYERS, MAX_PLAYERS = 5, 12
#: A game's seed: the range the web lobby accepts, so a game played from the command line can
#: be set up there again; SQLite stores it (an INTEGER holds 64 bits, SEED + g included).
MIN_SEED, MAX_SEED = 0, 2**31 - 1
#: Speakers the router names after each round: at least MIN_SPEAKERS (when that many may
#: speak), at most MAX_SPEAKERS. The engine accepts 1 to MAX_SPEAKERS (one is all a table
#: with a single other living player can offer).
MIN_SPEAKERS, MAX_SPEAKERS = 2, 5


class WerewolfConfigError(ValueError):
    """A game setup that the rules cannot play (player count, wolf count, names)."""


def reads_evil(role: Role) -> bool:
    """What the detective learns: werewolves and the maniac read as evil."""
    return role in (Role.WEREWOLF, Role.MANIAC)


def default_wolves(n_players: int) -> int:
    return 1 if n_players <= 6 else 2 if n_players <= 9 else 3


def default_maniac(n_players: int) -> bool:
    """A maniac joins the cast from six players on."""
    return n_players >= 6


def max_wolves(n_players: int) -> int:
    """The most werewolves a game of `n_players` can start with (fewer than the others)."""
    return (n_players - 1) // 2


def check_players(n_players: int) -> None:
    if not MIN_PLAYERS <= n_players <= MAX_PLAYERS:
        raise WerewolfConfigError(
            f"players must be between {MIN_PLAYERS} and {MAX_PLAYERS} (got {n_players})"
        )


def validate_setup(n_players: int, n_wolves: int, maniac: bool) -> None:
    check_players(n_players)
    if n_wolves < 1:
        raise WerewolfConfigError(f"wolves must be at least 1 (got {n_wolves})")
    if 2 * n_wolves >= n_players:
        raise WerewolfConfigError(
            f"wolves must be fewer than the other players, or the wolves win at once "
            f"(got {n_wolves} wolves among {n_players} players; at most {max_wolves(n_players)})"
        )
    specials = 2 + int(maniac)
    if n_wolves + specials > n_players:
        raise WerewolfConfigError(
            f"{n_wolves} wolves + {specials} special roles do not fit {n_players} players"
        )


def derive_seed(*parts: Any) -> int:
    """A stable 31-bit seed from any JSON-able parts (never Python's salted hash())."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def rng(*parts: Any) -> random.Random:
    return random.Random(derive_seed(*parts))


def assign_roles(n_players: int, n_wolves: int, maniac: bool, seed: int) -> list[Role]:
    roles = [Role.WEREWOLF] * n_wolves + [Role.DOCTOR, Role.DETECTIVE]
    if maniac:
        roles.append(Role.MANIAC)
    roles += [Role.VILLAGER] * (n_players - len(roles))
    rng(seed, "roles").shuffle(roles)
    return roles


_DAY = """\
Werewolf rules. Teams: the village (villagers, doctor, detective, maniac) and the werewolves.
Day: players talk (the discussion has a limited number of messages, about 3.5 per living player;
the moderator tells you how many are used), then vote one at a time for a living player other
than themselves; the player with the most votes is eliminated and their role revealed. {ties}
"""

_NIGHT = {
    "reference": """\
Night, in order: the maniac abducts one player, never the same one two nights running; the
abductee's own night action is blocked, any action aimed at the abductee fails, and if the
maniac dies that night the abductee dies too. The werewolves talk privately for two rounds and
the last wolf to speak picks the victim (an abducted wolf talks but cannot pick). The doctor
protects one player (never the same one two nights in a row; a protected player survives every
attack), or once per game kills one instead. The detective investigates one player and learns
good or evil (werewolves and the maniac read evil), or once per game kills one instead.
""",
    "simple": """\
Night, in order: the maniac abducts one player, whose night action is blocked; the werewolves
talk privately once and the first free wolf picks the victim; the doctor protects one player
(never the same one two nights in a row) and a protected player survives the attack; the
detective investigates one player and learns good or evil (werewolves and the maniac read evil).
""",
}

_END = """\
The village wins when no werewolf is alive. The werewolves win when they are at least as many
as everyone else.
Judge only from play: votes, contradictions, role claims. A character's story never makes them
suspicious; the story only shapes how you talk."""

TIE_TEXT = {"none": "On a tie nobody is eliminated.",
            "random": "On a tie one of the tied players, drawn at random, is eliminated."}


def rules_text(rules: str = "reference", ties: str = "none") -> str:
    """The rule text every bot reads, for the game's rule table and tie rule."""
    return _DAY.format(ties=TIE_TEXT[ties]) + _NIGHT[rules] + _END


RULES_TEXT = rules_text()
