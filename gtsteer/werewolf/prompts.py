"""Every text the bots, the router and the theme generator read, in one place.

Conventions that the information-isolation audit relies on (tests/test_werewolf_isolation.py):
a role appears next to a name only as "Name (role)"; a night action appears only as
`action_line(action)`; pack chat lines start with "[pack]".
"""

from __future__ import annotations

from gtsteer.werewolf.rules import RULES_TEXT, Role
from gtsteer.werewolf.state import NightAction

ROLE_GOALS = {
    Role.VILLAGER: "You are a villager: find the werewolves and vote them out.",
    Role.WEREWOLF: "You are a werewolf: hide it, kill a villager each night with your pack, and "
    "steer the votes onto villagers. Never reveal the pack.",
    Role.DOCTOR: "You are the doctor: each night protect one player from the wolves (not the "
    "same player two nights in a row). Help the village find the wolves.",
    Role.DETECTIVE: "You are the detective: each night investigate one player and learn if they "
    "are good or evil. Use what you learn, carefully.",
    Role.MANIAC: "You are the maniac, on the village's side: each night abduct one player to "
    "block their night action. You read as evil to the detective.",
}

VERB_COMMANDS = {
    "abduct": "Night {night}: choose one player to abduct tonight (their night action is "
    "blocked).",
    "kill": "Night {night}: choose the player the pack kills tonight.",
    "protect": "Night {night}: choose one player to protect tonight.",
    "investigate": "Night {night}: choose one player to investigate tonight.",
}


def system_prompt(
    name: str, story: str, role: Role, pack: list[str], living: list[str], dead: list[str],
    scene: str,
) -> str:
    lines = [RULES_TEXT, ""]
    if scene:
        lines += [f"Scene: {scene}", ""]
    lines += [f"You are {name} ({role.value}). {ROLE_GOALS[role]}"]
    if story:
        lines.append(f"Your character: {story}")
    if pack:
        lines.append("Your pack: " + ", ".join(f"{w} (werewolf)" for w in pack) + ".")
    lines.append("Alive: " + ", ".join(living) + ".")
    if dead:
        lines.append("Dead: " + ", ".join(dead) + ".")
    return "\n".join(lines)


def action_line(a: NightAction) -> str:
    """The one way a night action is written; only its observers ever read it."""
    if a.blocked:
        return f"Night {a.night}: {a.actor} was abducted; {a.actor}'s night action was blocked."
    if a.verb == "abduct":
        return f"Night {a.night}: {a.actor} abducted {a.target}."
    if a.verb == "kill":
        return f"Night {a.night}: the pack chose to kill {a.target} (chosen by {a.actor})."
    if a.verb == "protect":
        return f"Night {a.night}: {a.actor} protected {a.target}."
    return f"Night {a.night}: {a.actor} investigated {a.target}: {a.result}."


def abduction_notice(night: int, target: str) -> str:
    """What the abducted player learns (not who abducted them)."""
    return f"Night {night}: {target}, you were abducted; any night action of yours was blocked."


def speak_command(name: str, phase: str, day: int) -> str:
    if phase == "intro":
        return (f"{name}, introduce yourself to the village in character, in one or two "
                "sentences. Do not reveal your role.")
    return f"{name}, it is your turn in the day {day} discussion. Reply to the others."


def pack_chat_command(name: str, night: int, mates: list[str], lines: list[str]) -> str:
    chat = "\n".join(lines) if lines else "(nobody has spoken yet)"
    return (f"Night {night}, private pack chat with {', '.join(mates)}. Tonight so far:\n"
            f"{chat}\n{name}, say in one sentence whom the pack should kill and why.")


def vote_command(name: str, day: int, votes_so_far: list[str], legal: list[str]) -> str:
    cast = "\n".join(votes_so_far) if votes_so_far else "(no votes yet)"
    return (f"Day {day} vote. Votes so far, in order:\n{cast}\n{name}, vote for exactly one of: "
            f"{', '.join(legal)}. You cannot vote for yourself or the dead. Answer with JSON "
            'whose "target" is one name copied exactly from the list.')


def night_command(name: str, verb: str, night: int, legal: list[str], extra: str = "") -> str:
    head = VERB_COMMANDS[verb].format(night=night)
    tail = f"{extra}\n" if extra else ""
    return (f"{tail}{head} {name}, pick exactly one of: {', '.join(legal)}. Answer with JSON "
            'whose "target" is one name copied exactly from the list.')


def summary_command(name: str, day: int) -> str:
    return (f"Day {day} begins. {name}, update your private notes on the game so far, as JSON "
            "with short fields: allies, suspects, role_knowledge, social_threads, plans. Use "
            "only the records and the chat.")


ROUTER_SYSTEM = (
    "You moderate a Werewolf day discussion. Pick who speaks next: players addressed or accused "
    "in the last messages, and players who have barely spoken (marked NEEDS TURN)."
)


def router_prompt(living: list[str], counts: dict[str, int], chat: list[str],
                  legal: list[str], quiet: list[str]) -> str:
    roster = ", ".join(
        f"{n} ({counts.get(n, 0)} msgs{', NEEDS TURN' if n in quiet else ''})" for n in living
    )
    recent = "\n".join(chat[-8:]) if chat else "(the day has just begun)"
    return (f"{ROUTER_SYSTEM}\nPlayers: {roster}\nRecent chat:\n{recent}\nPick 2 to 5 speakers "
            f"from: {', '.join(legal)}; include at least one NEEDS TURN player. Answer with "
            'JSON whose "speakers" is a list of those names.')


def theme_prompt(theme: str, n_players: int, playstyles: list[str]) -> str:
    return (f"Create a cast for a game of Werewolf themed: {theme}.\nWrite a two-sentence scene "
            f"and exactly {n_players} characters, each with a unique one-word name, a "
            "one-sentence story about their personality and manner of speech, and a playstyle "
            f"from: {', '.join(playstyles)}. Answer with JSON: "
            '{"scene": ..., "players": [{"name": ..., "story": ..., "playstyle": ...}]}.')
