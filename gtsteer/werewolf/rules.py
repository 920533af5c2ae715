"""Roles, teams, role assignment and the rule text every bot reads.

Two night tables (docs/WEREWOLF.md): the reference app's and a simple one. On a tied vote
nobody is eliminated by default (a documented deviation from the reference, which draws a tied
player: `ties="random"`).
"""

from __future__ import annotations

import hashlib
import json
import random
import textwrap
from collections.abc import Collection
from typing import Any

from gtsteer.werewolf.roles import ROLES, Role, night_roles

__all__ = ["Role", "ROLES"]  # Role lives in roles.py, with its table; re-exported here

MIN_PLAYERS, MAX_PLAYERS = 5, 12
#: A game's seed: the range the web lobby accepts, so a game played from the command line can
#: be set up there again; SQLite stores it (an INTEGER holds 64 bits, SEED + g included).
MIN_SEED, MAX_SEED = 0, 2**31 - 1
#: Speakers the router names after each round; the engine accepts 1 to MAX_SPEAKERS (one is
#: all a table with a single other living player can offer).
MIN_SPEAKERS, MAX_SPEAKERS = 2, 5


class WerewolfConfigError(ValueError):
    """A game setup that the rules cannot play (player count, wolf count, names)."""


def reads_evil(role: Role) -> bool:
    return ROLES[role].reads_evil


def default_wolves(n_players: int) -> int:
    return 1 if n_players <= 6 else 2 if n_players <= 9 else 3


def joins_by_default(role: Role, n_players: int) -> bool:
    return n_players >= (ROLES[role].joins_from or 0)


def max_wolves(n_players: int) -> int:
    return (n_players - 1) // 2


def check_players(n_players: int) -> None:
    if not MIN_PLAYERS <= n_players <= MAX_PLAYERS:
        raise WerewolfConfigError(
            f"players must be between {MIN_PLAYERS} and {MAX_PLAYERS} (got {n_players})"
        )


def validate_setup(n_players: int, n_wolves: int, optional: Collection[Role] = ()) -> None:
    """`optional`: the optional roles (`roles.optional_roles`) this setup deals."""
    check_players(n_players)
    if n_wolves < 1:
        raise WerewolfConfigError(f"wolves must be at least 1 (got {n_wolves})")
    if 2 * n_wolves >= n_players:
        raise WerewolfConfigError(
            f"wolves must be fewer than the other players, or the wolves win at once "
            f"(got {n_wolves} wolves among {n_players} players; at most {max_wolves(n_players)})"
        )
    specials = sum(1 for s in ROLES.values() if s.seats == "one" or s.role in optional)
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


def assign_roles(n_players: int, n_wolves: int, optional: Collection[Role],
                 seed: int) -> list[Role]:
    """Deal in table order (every seat left to the "rest" role), then shuffle from the seed."""
    counts = {"pack": n_wolves, "one": 1, "rest": 0}
    roles = [s.role for s in ROLES.values()
             for _ in range(counts.get(s.seats, int(s.role in optional)))]
    rest = next(s.role for s in ROLES.values() if s.seats == "rest")
    roles += [rest] * (n_players - len(roles))
    rng(seed, "roles").shuffle(roles)
    return roles


#: The rule text's line width (its sentences are joined from the role table, then wrapped).
WIDTH = 96
_DAY = """\
Werewolf rules. Teams: the village ({village}) and the werewolves. Day: players talk (the
discussion has a limited number of messages, about 3.5 per living player; the moderator tells you
how many are used), then vote one at a time for a living player other than themselves; the player
with the most votes is eliminated and their role revealed. {{ties}}"""
#: How each rule table joins the roles' night clauses: as sentences, or as one sentence.
_NIGHT_JOIN = {"reference": ". ", "simple": "; "}

_END = """\
The village wins when no werewolf is alive. The werewolves win when they are at least as many
as everyone else.
Judge only from play: votes, contradictions, role claims. A character's story never makes them
suspicious; the story only shapes how you talk."""

TIE_TEXT = {"none": "On a tie nobody is eliminated.",
            "random": "On a tie one of the tied players, drawn at random, is eliminated."}


def rules_text(rules: str = "reference", ties: str = "none") -> str:
    """The rule text every bot reads, for the game's rule table and tie rule."""
    village = ", ".join(s.rules_name or s.name for s in ROLES.values() if s.team == "village")
    day = textwrap.fill(" ".join(_DAY.format(village=village).split()), WIDTH)
    return day.format(ties=TIE_TEXT[ties]) + "\n" + _night_text(rules) + _END


def _night_text(rules: str) -> str:
    clauses = [s.night.rules[rules] for s in night_roles() if s.night]
    join = _NIGHT_JOIN[rules]
    if join == ". ":
        clauses = clauses[:1] + [c[0].upper() + c[1:] for c in clauses[1:]]
    return textwrap.fill("Night, in order: " + join.join(clauses) + ".", WIDTH) + "\n"


RULES_TEXT = rules_text()
