"""A live dialogue decision as its speaker knows it: what a distilled policy is asked about.

`Dialogue` holds exactly what a player's information state holds in the game (the public
names, the speaker's own private information, the opening and the messages so far, and the
speaker's own earlier instructions) and nothing else. The dataset builder makes one per
information state (`gtsteer.imitation.views.dialogue_of`, stored in each record's
`metadata["dialogue"]`), and the `Advisor` reads one from a live conversation; both turn it into
the policy's input through the same function (`views.decision_input`), so live play shows a
policy exactly what it was trained on.

Plain pydantic, no pyspiel (so `gtsteer.imitation` stays importable without it).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Line(BaseModel):
    """One message: who said it (player index) and what. `instruction` is the instruction it
    was written under; only the deciding speaker's own messages need it (the policy reads its
    own past instructions), and any other speaker's is ignored (the speaker cannot know it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    speaker: int = Field(ge=0)
    text: str
    instruction: str | None = None


class Dialogue(BaseModel):
    """One decision of a dialogue: `speaker` is about to write the next message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Every player's name, in player order (public).
    names: list[str] = Field(min_length=2)
    #: The player who writes the next message (index into `names`).
    speaker: int = Field(ge=0)
    #: The speaker's own private information ("the private notes"), key -> value.
    private_info: dict[str, str] = Field(default_factory=dict)
    #: The config's scripted opening message, where the instance has one.
    opening: Line | None = None
    #: The messages sent so far, oldest first (the opening not included).
    messages: list[Line] = Field(default_factory=list)

    @model_validator(mode="after")
    def _known_speakers(self) -> Dialogue:
        n = len(self.names)
        if self.speaker >= n:
            raise ValueError(f"speaker: {self.speaker} is not a player index (0..{n - 1})")
        lines = ([("opening", self.opening)] if self.opening else []) + [
            (f"messages[{i}]", m) for i, m in enumerate(self.messages)]
        for where, line in lines:
            if line.speaker >= n:
                raise ValueError(f"{where}: speaker {line.speaker} is not a player index "
                                 f"(0..{n - 1})")
        for i, m in enumerate(self.messages):
            if m.speaker == self.speaker and m.instruction is None:
                raise ValueError(
                    f"messages[{i}]: {self.names[self.speaker]}'s own message names no "
                    "instruction; give the one it was written under ('any' if unguided), "
                    "since the policy reads its own past instructions")
        return self

    @property
    def name(self) -> str:
        return self.names[self.speaker]

    @property
    def own_instructions(self) -> list[str]:
        """The speaker's earlier instructions, oldest first."""
        return [m.instruction for m in self.messages
                if m.speaker == self.speaker and m.instruction is not None]

    @property
    def lines(self) -> list[Line]:
        """Every message in order, the opening first."""
        return ([self.opening] if self.opening else []) + list(self.messages)

    @property
    def next_speaker(self) -> int:
        """Whose turn it is by the game's order: after the opening's speaker (the first player
        without one), players take turns in index order."""
        first = 0 if self.opening is None else (self.opening.speaker + 1) % len(self.names)
        return (first + len(self.messages)) % len(self.names)
