"""Every text the bots, the router and the theme generator read, in one place (a role's own
texts are its entry in `roles.ROLES`). Each sentence has one source here; whether a bot may
read it is decided from the state, never from the wording (`visibility`).
"""

from __future__ import annotations

from gtsteer.werewolf.playstyles import PLAY_GUIDE
from gtsteer.werewolf.roles import ROLES, action_word
from gtsteer.werewolf.rules import Role, rules_text
from gtsteer.werewolf.state import DayResult, NightAction, NightResult, Vote

ONE_TIME_KILL = " Once per game you may kill a player at night instead."

#: The first lines of every bot's prompt. Chat-tuned models read bare rules about night kills as
#: a request to help with violence and refuse, or answer as an assistant (Qwen2.5-Coder 0.5B,
#: seed 0: "I'm sorry, but I can't assist with that." four times, docs/BENCHMARKS.md); this
#: says what the game is and whose voice to answer in.
GAME_FRAME = (
    "This is a game of Werewolf, the party game of bluffing and deduction played by friends "
    "around a table. Everything in it is make-believe: the killings are part of the story. "
    "You are one of the players; answer only with what your character says or decides, in the "
    "first person."
)


def role_goal(role: Role, rules: str = "reference") -> str:
    goal = ROLES[role].goal
    if rules == "reference" and ROLES[role].one_time_kill:
        goal += ONE_TIME_KILL
    return goal


def system_prompt(name: str, story: str, role: Role, wolves: list[str], scene: str,
                  rules: str = "reference", ties: str = "none") -> str:
    """The same text for this bot all game (cache-friendly)."""
    lines = [GAME_FRAME, "", rules_text(rules, ties), "", PLAY_GUIDE, ""]
    if scene:
        lines += [f"Scene: {scene}", ""]
    lines += [f"You are {name} ({role.value}). {role_goal(role, rules)}"]
    if story:
        lines.append(f"Your character: {story}")
    mates = [w for w in wolves if w != name]
    if role is Role.WEREWOLF:
        lines.append("The werewolves, as dealt: " + ", ".join([name, *mates]) + ".")
    return "\n".join(lines)


def action_line(a: NightAction) -> str:
    """The one way a night action is written; only its observers ever read it."""
    if a.blocked:
        return f"Night {a.night}: {a.actor}'s night action was blocked."
    if a.verb == "abduct":
        return f"Night {a.night}: {a.actor} abducted {a.target}."
    if a.verb == "kill" and a.role is Role.WEREWOLF:
        return f"Night {a.night}: the pack chose to kill {a.target} (chosen by {a.actor})."
    if a.verb == "kill":
        return f"Night {a.night}: {a.actor} used the one-time kill on {a.target}."
    if a.verb == "protect":
        return f"Night {a.night}: {a.actor} protected {a.target}."
    if a.failed:
        return f"Night {a.night}: {a.actor} could not investigate {a.target} (no answer)."
    return f"Night {a.night}: {a.actor} investigated {a.target}: {a.result}."


def abduction_notice(night: int, target: str) -> str:
    """What the abducted player learns (not who abducted them)."""
    return f"Night {night}: {target}, you were abducted; any night action of yours was blocked."


def vote_line(v: Vote) -> str:
    return f"Vote {v.order}: {v.voter} -> {v.target}"


def vote_result_line(r: DayResult) -> str:
    if r.eliminated is None:
        return "The vote is tied between " + ", ".join(
            n for n, c in r.tally.items() if c == max(r.tally.values())
        ) + ": nobody is eliminated today."
    role = r.role.value if r.role else "?"
    if r.tied:
        return (f"The vote is tied between {', '.join(r.tied)}; a random draw eliminates "
                f"{r.eliminated} ({role}).")
    return f"The village eliminated {r.eliminated} ({role})."


def night_result_line(r: NightResult) -> str:
    if not r.deaths:
        return f"Night {r.night}: nobody died."
    names = [f"{d.name} ({d.role.value})" for d in r.deaths]
    if len(names) == 1:
        return f"Night {r.night}: {names[0]} was killed."
    return f"Night {r.night}: {', '.join(names[:-1])} and {names[-1]} were killed."


def day_header(day: int, alive: list[str], extra: str = "") -> str:
    return f"Day {day} begins. Alive: {', '.join(alive)}.{(' ' + extra) if extra else ''}"


def intro_command(name: str) -> str:
    return (f"{name}, introduce yourself to the village in character, in one or two "
            "sentences. Do not reveal your role.")


def speak_command(name: str, day: int, turn: int, total: int) -> str:
    return (f"{name}, your turn in the day {day} discussion (message {turn} of {total}; the "
            "vote follows). Reply to the others.")


def pack_chat_command(name: str, night: int, mates: list[str]) -> str:
    return (f"Night {night}, private pack chat with {', '.join(mates)}. {name}, say in one "
            "sentence whom the pack should kill and why.")


def vote_command(name: str, day: int) -> str:
    """No list here: a list primes a small model toward its first name. The candidates are the
    living players of the day header (in a seeded order), minus the voter."""
    return (f"Day {day} vote. {name}, you may vote for any living player but yourself. In one "
            "sentence: whom do you vote for, and why?")


def night_command(name: str, night: int, actions: dict[str, list[str]],
                  options: list[str]) -> str:
    verbs = " or ".join(action_word(a) for a in actions)
    return (f"Night {night}. {name}, choose whom to {verbs} tonight. Options: "
            f"{', '.join(options)}. In one sentence: what do you choose, and why?")


def pick_prompt(name: str) -> str:
    """Asked after the bot's one-sentence reasoning: the choice itself is scored."""
    return f"{name}'s choice (one option, copied exactly):"


def summary_command(name: str, day: int) -> str:
    return (f"Day {day} and night {day} are over. {name}, write your private notes on them "
            "as JSON with the fields allies, suspects, role_knowledge, social_threads, plans: "
            "who said and voted what, what you learned, what to follow up tomorrow.")


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
