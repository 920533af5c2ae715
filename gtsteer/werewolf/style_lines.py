"""What a playstyle should do to a bot's line, as a listener hears it (not as the instruction
the bot is given): `READINGS`, plus `NEUTRAL` for a line with no particular style. The label set
`werewolf_playstyle` of `gtsteer eval judge` (gtsteer/data/werewolf_style_labelled.yaml).
"""

from __future__ import annotations

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
