"""Strip a bot's private prompt text from its public lines before they are stored.

Small chat models read their prompt aloud ("...steer quietly away from your pack mates..."),
telling the table what only the bot should know. A sentence is an echo when at least half of
its words lie in runs of `RUN_WORDS` words shared, in order, with one of the bot's private texts
(role line and goal, pack, playstyle sentence, notes, command), or when it is one of their
sentences whole. Words are compared with person and number folded, so a text turned into the
first or third person still matches. The frame, rules and play guide every bot reads are no
secret, but a line reading them out is the prompt, not the character (SmolLM2, seed 0), so they
are stripped alike; the scene is not. A werewolf's first-person claim to be one is dropped in
any wording (no run catches every phrasing), and so is a sentence telling the speaker who it is
("You are Greta.", shorter than any run). Each decision records how many (`Decision.echoes`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gtsteer.werewolf.playstyles import PLAY_GUIDE
from gtsteer.werewolf.prompts import GAME_FRAME, role_goal
from gtsteer.werewolf.rules import Role, rules_text
from gtsteer.werewolf.state import GameConfig, GameState, SummaryNotes

#: Shortest shared run of words that counts (shorter runs are ordinary phrases).
RUN_WORDS = 5
#: A private text shorter than `RUN_WORDS` but of at least this many words is matched whole
#: (the role line "You are Ann (doctor)." is four).
SHORT_TEXT_WORDS = 3
#: Share of a sentence's words inside shared runs that makes it an echo.
ECHO_SHARE = 0.5

_FOLD = {
    **dict.fromkeys(("i", "you", "he", "she", "they", "we"), "PERSON"),
    **dict.fromkeys(("me", "him", "them", "us"), "PERSON"),
    **dict.fromkeys(("my", "your", "his", "her", "their", "our"), "POSS"),
    **dict.fromkeys(("mine", "yours", "hers", "theirs", "ours"), "POSS"),
    **dict.fromkeys(("myself", "yourself", "himself", "herself", "themselves"), "SELF"),
    **dict.fromkeys(("am", "are", "is"), "BE"),
    **dict.fromkeys(("a", "an"), "A"),
}
_SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+[\"')\]]*|$)")


def _words(text: str) -> list[str]:
    out = []
    for word in re.findall(r"[a-z0-9']+", text.lower()):
        word = word.strip("'")
        if not word:
            continue
        word = _FOLD.get(word, word)
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]  # "introduces" / "introduce", "mates" / "mate"
        out.append(word)
    return out


#: A first-person claim to be a wolf ("I am a werewolf", "I'm Alice, a werewolf", "as a wolf,
#: I", "we are the wolves"). A name in between is one word and its comma, so "I'm Alice, and a
#: werewolf is among us" is not a claim.
WOLF_CLAIM = re.compile(
    r"\b(?:I\s*(?:'m|am)\s+(?:\w+,\s*)?(?:a|the|one of the)\s+(?:were)?wol(?:f|ves)"
    r"|as\s+(?:a|the)\s+(?:were)?wolf,?\s+I\b"
    r"|we\s*(?:'re|are)\s+(?:the\s+)?(?:were)?wolves)\b",
    re.IGNORECASE)


class EchoFilter:
    """The private texts of one bot's decision, as runs of words to look for; `wolf` also drops
    a `WOLF_CLAIM`, `speaker` a sentence telling the bot who it is."""

    def __init__(self, private_texts: Iterable[str], wolf: bool = False,
                 speaker: str | None = None):
        self.wolf = wolf
        self.told_who = (re.compile(rf"^\W*you(?:\s+are|'re)\s+{re.escape(speaker)}\b",
                                    re.IGNORECASE) if speaker else None)
        private_texts = list(private_texts)
        self.runs: set[tuple[str, ...]] = set()
        for text in private_texts:
            words = _words(text)
            n = min(RUN_WORDS, len(words))
            if n < SHORT_TEXT_WORDS:
                continue
            for i in range(len(words) - n + 1):
                self.runs.add(tuple(words[i : i + n]))
        self.lengths = sorted({len(run) for run in self.runs})
        # For a short sentence read out whole ("Reply to the others." is shorter than a run).
        self.sentences = {tuple(words) for text in private_texts
                          for sentence in _SENTENCE.findall(text)
                          if len(words := _words(sentence)) >= SHORT_TEXT_WORDS}

    def is_echo(self, sentence: str) -> bool:
        if self.wolf and WOLF_CLAIM.search(sentence):
            return True
        if self.told_who is not None and self.told_who.search(sentence):
            return True
        words = _words(sentence)
        if tuple(words) in self.sentences:
            return True
        covered = [False] * len(words)
        for n in self.lengths:
            for i in range(len(words) - n + 1):
                if tuple(words[i : i + n]) in self.runs:
                    covered[i : i + n] = [True] * n
        return bool(words) and sum(covered) >= ECHO_SHARE * len(words)

    def strip(self, line: str) -> tuple[str, int]:
        """`line` without its echo sentences, and how many there were."""
        sentences = [s.strip() for s in _SENTENCE.findall(line) if s.strip()]
        kept = [s for s in sentences if not self.is_echo(s)]
        if len(kept) == len(sentences):
            return line, 0
        return " ".join(kept), len(sentences) - len(kept)


def notes_texts(notes: SummaryNotes) -> list[str]:
    return [v for v in notes.model_dump().values() if v]


def private_texts(state: GameState, bot: str, command: str, style: str) -> list[str]:
    """What this bot's prompt holds that the other players do not read: its role line and
    goal, its pack, its notes, the command it answers and its playstyle sentence."""
    me = state.player(bot)
    texts = [f"You are {bot} ({me.role.value}).", role_goal(me.role, state.config.rules),
             command, style]
    if me.role is Role.WEREWOLF:
        texts.append("The werewolves, as dealt: " + ", ".join(state.wolves()) + ".")
    for summary in state.summaries:
        if summary.bot == bot:
            texts += notes_texts(summary.notes)
    return [t for t in texts if t]


def shared_prompt_texts(config: GameConfig) -> list[str]:
    """What every bot's prompt says: the game's frame, its rules and the play guide."""
    return [GAME_FRAME, rules_text(config.rules, config.ties), PLAY_GUIDE]
