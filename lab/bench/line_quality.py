"""How a game's public lines read: distinct, whole, in character (issue 24's per-model measures).

A game reads as a game when the bots say different things, finish their sentences and speak as
their characters. Each public line a bot spoke (introductions and discussion turns; vote reasons
and pack chat are not counted) is read for:

- **repeat**: the same words (case and spacing aside) as an earlier line of the game;
- **cut**: it ends mid-sentence; `at_limit` counts the calls behind the lines that ran into the
  token limit (the usual cause);
- **out of character**: narration about the speaker in the third person or a stage direction
  (`is_narration`, and `STAGE` for directions inside a line), talk about the game's machinery
  instead of the village (`META`: "in character", "as an AI", "my playstyle", "the camera", an
  assistant's refusal, the moderator's "Day 1 begins"), a roster (half its words or more are
  player names), or a sentence read out of the frame, the rules or the play guide every bot is
  given (matched as `werewolf.echoes` matches private text), or a werewolf announcing itself
  (`werewolf.echoes.WOLF_CLAIM`: a line stored before the filter knew a wording);
- **empty**: nothing left after cleaning (and echo stripping);
- **echoes**: sentences of the bot's private prompt stripped before the line was stored
  (`werewolf.echoes`), summed over the game;
- **resampled**: extra samples taken because a try came out empty, repeated an earlier line or
  ended mid-sentence (`werewolf.bots.LINE_RESAMPLES`). The counts above are of the lines kept,
  after that guard, so it lowers the repeat, empty and cut counts by construction;
- **first try**: the distinct, cut and empty counts of each line's first try instead
  (`Decision.first_try`, the try as the guard judged it), what the model says unguarded; a
  first try counts as a repeat of the lines kept before it, which it was judged against. None
  in a game stored before first tries were kept (its resampled lines' first tries are only raw
  calls, which the bot's cleaning and echo filter would have to be replayed to judge; counting
  just the known ones would count only the tries that passed).

The rules are surface patterns: they flag what a reader would notice at once, not every
unconvincing line; `examples` keeps the flagged lines so a reader can check them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, Field

from gtsteer.llm.speech import ends_sentence
from gtsteer.werewolf.bots import line_key
from gtsteer.werewolf.echoes import WOLF_CLAIM, EchoFilter, shared_prompt_texts
from gtsteer.werewolf.llmcalls import CallRecord
from gtsteer.werewolf.state import Decision, GameConfig

#: Talk about the game's machinery rather than the village.
META = re.compile(
    r"\b(?:(?:in|out of|stay in|break) character|as an ai\b|(?:an? |the )?(?:ai|language) model"
    r"|assistant|role-?play(?:ing)?|my (?:playstyle|instructions?|prompt|role is to)"
    r"|the (?:camera|audience|narrator|prompt|instructions?)"
    r"|introduces? (?:himself|herself|themselves|myself|yourself)"
    r"|(?:I'm|I am) sorry,? but I can(?:'t|not)|can(?:'t|not) assist with"
    r"|day \d+ begins)\b",
    re.IGNORECASE)
#: A line at least this share of whose words are player names reads out a roster, not speech.
ROSTER_SHARE = 0.5

#: A stage direction inside a line: "(glancing at Ben)", "(to the camera)", "(smiles)"; or a
#: line that opens with a parenthesis ("(The story is now starting, ...", SmolLM2).
STAGE = re.compile(r"\((?:to |[a-z]+ing\b|[a-z]+s\))|^\s*\(", re.IGNORECASE)

#: Examples kept per flag (the first ones of the game).
EXAMPLES = 3


def is_narration(message: str, speaker: str) -> bool:
    """Third person about the speaker ("Alice proposes Monday."), or a stage direction in
    asterisks or parentheses ("*smiles*", "(nods)"); "I'm Alice" is first person."""
    named = re.search(rf"\b{re.escape(speaker)}\b(?!\s*,)", message)
    introduced = re.search(rf"\b(?:I am|I'm|this is|it's)\s+{re.escape(speaker)}\b", message,
                           re.IGNORECASE)
    direction = re.search(r"\*[^*]+\*|^\s*\([^)]*\)", message)
    return bool((named and not introduced) or direction)


def is_roster(line: str, names: Iterable[str]) -> bool:
    words = re.findall(r"[A-Za-z']+", line)
    named = {n.lower() for n in names}
    return bool(words) and sum(w.lower() in named for w in words) >= ROSTER_SHARE * len(words)


def out_of_character(line: str, speaker: str, prompt: EchoFilter | None = None,
                     names: Iterable[str] = ()) -> bool:
    return (is_narration(line, speaker) or META.search(line) is not None
            or STAGE.search(line) is not None or is_roster(line, names)
            or (prompt is not None and prompt.strip(line)[1] > 0))


class LineReport(BaseModel):
    lines: int = 0
    distinct: int = 0
    cut: int = 0
    out_of_character: int = 0
    empty: int = 0
    echoes: int = 0
    #: Extra samples taken for lines that came out empty, repeated or cut (`Decision.resampled`).
    resampled: int = 0
    #: How many lines' first tries were fresh, cut or empty (the counts above are of the lines
    #: kept after the resample guard); None: not recorded (a game stored before they were).
    first_try_distinct: int | None = 0
    first_try_cut: int | None = 0
    first_try_empty: int | None = 0
    #: Speak calls that ran into the token limit (of `speak_calls`).
    at_limit: int = 0
    speak_calls: int = 0
    examples: dict[str, list[str]] = Field(default_factory=dict)

    def share(self, field: str) -> float | None:
        """`field` as a share of the lines (None: no lines, or the count is not recorded)."""
        count = getattr(self, field)
        return count / self.lines if self.lines and count is not None else None

    def keep(self, flag: str, author: str, text: str) -> None:
        kept = self.examples.setdefault(flag, [])
        if len(kept) < EXAMPLES:
            kept.append(f"{author}: {text}")


def read_lines(decisions: Iterable[Decision], calls: Iterable[CallRecord],
               token_limit: int, config: GameConfig | None = None,
               wolves: Iterable[str] = ()) -> LineReport:
    """The report of one game's public lines: its decisions in step order and its call records
    (`GameStore.steps` and `GameStore.calls`); `token_limit` is the speak calls' max_tokens;
    `config` (the game's) adds its rules and play guide to what a line must not read out;
    `wolves` (the werewolves' names) adds their claims to be one."""
    wolves = set(wolves)
    prompt = EchoFilter(shared_prompt_texts(config)) if config is not None else None
    speak_calls = [c for c in calls if c.purpose == "speak"]
    report = LineReport(speak_calls=len(speak_calls),
                        at_limit=sum(c.completion_tokens >= token_limit for c in speak_calls))
    seen: set[str] = set()
    first_tries: Counter[str] = Counter()  # flags of the first tries (`first_try_flags`)
    first_tries_recorded = True
    decisions = list(decisions)
    names = {d.actor for d in decisions if d.actor}
    for d in decisions:
        if d.kind != "speak" or d.actor is None:
            continue
        report.lines += 1
        report.echoes += d.echoes
        report.resampled += d.resampled
        first = d.text if d.resampled == 0 else d.first_try
        if first is None:
            first_tries_recorded = False
        else:  # before `seen` takes this line: judged against the earlier ones
            first_tries.update(first_try_flags(first.strip(), seen))
        text = d.text.strip()
        if is_empty(text):
            report.empty += 1
            report.keep("empty", d.actor, text)
            continue
        if line_key(text) in seen:
            report.keep("repeat", d.actor, text)
        else:
            report.distinct += 1
            seen.add(line_key(text))
        if not ends_sentence(text):
            report.cut += 1
            report.keep("cut", d.actor, text)
        if (out_of_character(text, d.actor, prompt, names)
                or (d.actor in wolves and WOLF_CLAIM.search(text) is not None)):
            report.out_of_character += 1
            report.keep("out_of_character", d.actor, text)
    for flag in ("distinct", "cut", "empty"):
        setattr(report, f"first_try_{flag}", first_tries[flag] if first_tries_recorded else None)
    return report


def is_empty(text: str) -> bool:
    return not text or text == "..."


def first_try_flags(text: str, seen: set[str]) -> list[str]:
    """A line's first try, counted as the kept lines are: "empty", else "distinct" when fresh
    (against the lines kept before it) and "cut" when it ends mid-sentence."""
    if is_empty(text):
        return ["empty"]
    return ["distinct"] * (line_key(text) not in seen) + ["cut"] * (not ends_sentence(text))
