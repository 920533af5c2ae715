"""What a playstyle should do to a bot's line, in words a reader (or a judge) can check.

`gtsteer werewolf styles` asks whether the six playstyles change what a bot says. Two kinds of
measure read a line:

- **a judge's reading**: which of `READINGS` the line reads as, the six playstyles described
  as a listener hears them (not as the instruction the bot is given: "names a suspect and
  demands answers", not "press hard"), plus `NEUTRAL`, a line with no particular style (what
  an unguided bot is expected to say). The judge is checked first on hand-written lines of
  each reading (gtsteer/data/werewolf_style_labelled.yaml);
- **proxies that need no judge**: the words of a line (`words`; a quiet observer should say
  less) and the other players it names (`named_players`; an aggressive provoker should name a
  suspect more often).

Plain functions of the text and the game's names: the driver that samples and judges lines is
`gtsteer.runs.werewolf_styles`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: The reading of a line with no particular style (no pressure, no defence, no trick).
NEUTRAL = "neutral"
#: The labelled set's entry and its key (`gtsteer.evals.prompts.LabelSpace`).
LABEL_SET = "werewolf_playstyle"
LABEL_KEY = "playstyle"

#: How a line in each style reads to a listener: the judge's `definitions` variant, in
#: `playstyles.PLAYSTYLE_NAMES` order, then `NEUTRAL` (tested).
READINGS: dict[str, str] = {
    "aggressive_provoker": "accuses someone by name, presses them and demands answers or a vote",
    "protective_team_player": "defends a player others are piling on and warns against a "
                              "rushed vote",
    "trickster": "hints at secret information, floats an odd theory or baits a reaction",
    "rule_breaker": "pushes against the usual way: demands role claims, a vote against the "
                    "flow or shaking things up",
    "quiet_observer": "says very little: one short, precise remark about a vote or a change "
                      "of story",
    "balanced": "weighs evidence on several sides, gives reasons and admits uncertainty",
    NEUTRAL: "a plain remark with no particular style: a greeting, a general call to find "
             "the wolves, no accusation or defence",
}

_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")


def words(line: str) -> int:
    """The words of a line (letters and digits; "don't" is one word)."""
    return len(_WORD.findall(line))


def named_players(line: str, names: Iterable[str]) -> list[str]:
    """The `names` the line says as whole words (any case), in the order of `names`."""
    return [n for n in names
            if re.search(rf"(?<![A-Za-z0-9]){re.escape(n)}(?![A-Za-z0-9])", line, re.IGNORECASE)]
