"""A bot's public lines never read out its private prompt (role, pack, playstyle, notes,
command); the stripped sentences are counted per decision and per game."""

from __future__ import annotations

import pytest
from werewolf_helpers import table

from gtsteer.llm import LLM, Backend, RawCompletion
from gtsteer.werewolf.bots import bot_decision
from gtsteer.werewolf.echoes import EchoFilter, private_texts
from gtsteer.werewolf.engine import pending, step
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.playstyles import describe, reminder
from gtsteer.werewolf.prompts import intro_command
from gtsteer.werewolf.roles import ROLES
from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.state import Summary, SummaryNotes

WOLF_STYLE = reminder("protective_team_player", wolf=True)


class SaysBackend(Backend):
    """Answers every free-text request with one fixed line."""

    kind = "says"

    def __init__(self, line: str):
        super().__init__("says")
        self.line = line

    async def complete(self, request, json_schema=None) -> RawCompletion:
        return RawCompletion(text=self.line)


@pytest.mark.parametrize(("line", "kept", "echoes"), [
    # the wolf style, turned into the first person
    (("Hello, I am Ann the baker. I steer quietly away from my pack mates without ever "
     "defending them openly."), "Hello, I am Ann the baker.", 1),
    # the intro command, narrated
    ("Ann introduces herself to the village in character, in one or two sentences.", "", 1),
    # the role goal
    ("I hide it and kill a villager each night with my pack. Ben is odd.", "Ben is odd.", 1),
    # ordinary speech, with words of the private texts but no long run of them
    ("I think Ben is a wolf; he voted with the pack of accusers yesterday.",
     "I think Ben is a wolf; he voted with the pack of accusers yesterday.", 0),
    ("Let us vote carefully today. Who defended Cat?",
     "Let us vote carefully today. Who defended Cat?", 0),
])
def test_echo_sentences_are_dropped(line: str, kept: str, echoes: int) -> None:
    texts = [WOLF_STYLE, intro_command("Ann"), ROLES[Role.WEREWOLF].goal]
    assert EchoFilter(texts).strip(line) == (kept, echoes)


def test_private_texts_hold_role_pack_notes_command_and_style() -> None:
    state = table("WWDTMVV")
    state.summaries.append(Summary(day=1, bot="Ann", notes=SummaryNotes(
        suspects="Cat dodged the vote question twice")))
    texts = private_texts(state, "Ann", intro_command("Ann"), WOLF_STYLE)
    assert ROLES[Role.WEREWOLF].goal in texts and WOLF_STYLE in texts
    assert "The werewolves, as dealt: Ann, Ben." in texts
    assert "Cat dodged the vote question twice" in texts
    assert intro_command("Ann") in texts
    villager = private_texts(state, "Fay", intro_command("Fay"), "")
    assert not any("werewolves, as dealt" in t for t in villager)
    assert "Cat dodged the vote question twice" not in villager  # Ann's notes, not Fay's


def test_a_public_line_reading_out_the_playstyle_is_stored_without_it() -> None:
    state = table("WWDTMVV")
    state.players[0].playstyle = "protective_team_player"
    want = pending(state)
    assert want.kind == "speak" and want.actor == "Ann"
    line = f"Good morning, I bake bread. {describe('protective_team_player', wolf=True)}"
    pool = LLMPool(lambda model: LLM(model, backend=SaysBackend(line), use_cache=False))
    decision, _ = bot_decision(state, want, pool)
    assert decision.text == "Good morning, I bake bread."
    assert decision.echoes == 2  # the style's two sentences
    after = step(state, decision)
    assert [m.text for m in after.messages if m.author == "Ann"] == [decision.text]
    assert sum(d.echoes for d in [decision, decision]) == 4


def test_a_detective_reading_out_its_role_line_and_one_time_kill_is_stripped() -> None:
    # Seen in a SmolLM2 game (seed 0): "You are Ines (detective). Once per game you may kill a
    # player at night instead." -- the role line is 4 words, below the run length, and the
    # one-time kill sentence of the reference rules was missing from the private texts.
    state = table("WWDTMVV")
    assert state.config.rules == "reference" and state.player("Dan").role is Role.DETECTIVE
    texts = private_texts(state, "Dan", intro_command("Dan"), "")
    line = ("You are Dan (detective). Once per game you may kill a player at night instead. "
            "Good evening.")
    assert EchoFilter(texts).strip(line) == ("Good evening.", 2)
    # a villager under the same rules has no one-time kill to echo
    assert not any("Once per game" in t for t in private_texts(state, "Fay", "", ""))


def test_a_short_private_text_matches_only_whole() -> None:
    texts = private_texts(table("WWDTMVV"), "Dan", "", "")
    claim, denial = "I am Dan (detective).", "Dan is no detective. Trust me."
    assert EchoFilter(texts).strip(claim) == ("", 1)  # the role line in the first person
    assert EchoFilter(texts).strip(denial) == (denial, 0)


@pytest.mark.parametrize(("line", "kept", "echoes"), [
    # Qwen 0.5B, seed 0: a wolf's introduction that every later speaker copied
    ("I'm Alice, the village's chief. I am a werewolf, so I am hiding in character.",
     "I'm Alice, the village's chief.", 1),
    ("As a werewolf, I say we vote Ben.", "", 1),
    ("We are the wolves here, Ben and I. Vote Cat.", "Vote Cat.", 1),
    # Qwen 1.5B, seed 0: two wolves introduced themselves with their name in between
    ("I'm Alice, a werewolf, and I'm here to help keep the village safe. Hello.", "Hello.", 1),
    ("I am Ann, one of the wolves.", "", 1),
    ("I'm Alice, and a werewolf is among us.", "I'm Alice, and a werewolf is among us.", 0),
    # about the wolves, not a claim to be one
    ("I am sure a werewolf is among us.", "I am sure a werewolf is among us.", 0),
    ("Ben, are you a werewolf?", "Ben, are you a werewolf?", 0),
])
def test_a_wolf_saying_it_is_a_wolf_is_stripped(line: str, kept: str, echoes: int) -> None:
    # The role line "You are Ann (werewolf)." matches only whole; a first-person claim to be a
    # wolf is the reveal the goal forbids ("Never reveal the pack"), in any wording.
    state = table("WWDTMVV")
    wolf = EchoFilter(private_texts(state, "Ann", "", ""), wolf=True)
    assert wolf.strip(line) == (kept, echoes)
    villager = EchoFilter(private_texts(state, "Fay", "", ""))
    assert villager.strip(line) == (line, 0)  # a villager's joke or bluff is its own business


def test_a_wolf_bot_never_stores_its_claim_to_be_a_wolf() -> None:
    state = table("WWDTMVV")
    want = pending(state)
    assert want.actor == "Ann" and state.player("Ann").role is Role.WEREWOLF
    line = "Good morning, I bake bread. I am a werewolf, so I am hiding in character."
    pool = LLMPool(lambda model: LLM(model, backend=SaysBackend(line), use_cache=False))
    decision, _ = bot_decision(state, want, pool)
    assert (decision.text, decision.echoes) == ("Good morning, I bake bread.", 1)


def test_a_short_sentence_of_the_command_read_out_whole_is_an_echo() -> None:
    # Qwen 0.5B, seed 0, with the game frame: "Reply to the others." (4 words, the speak
    # command's last sentence) was stored as Alice's turn.
    command = ("Alice, your turn in the day 1 discussion (message 3 of 13; the vote follows). "
               "Reply to the others.")
    echo, own = "Reply to the others.", "I reply to the others now: Ben lies."
    assert EchoFilter([command]).strip(echo) == ("", 1)
    assert EchoFilter([command]).strip(own) == (own, 0)


@pytest.mark.parametrize(("line", "kept", "echoes"), [
    # SmolLM2, seed 0 (the "cut" games): Greta's turn was "You are Greta." on all three tries
    ("You are Fay.", "", 1),
    ("You're Fay, a villager. Ben was at the well.", "Ben was at the well.", 1),
    # the first person, another player told who they are, or the name later on: kept
    ("I am Fay, and I bake bread.", "I am Fay, and I bake bread.", 0),
    ("You are Ben, the miller.", "You are Ben, the miller.", 0),
    ("Are you sure it was Fay?", "Are you sure it was Fay?", 0),
])
def test_the_role_line_read_back_to_the_speaker_is_stripped(line: str, kept: str,
                                                            echoes: int) -> None:
    texts = private_texts(table("WWDTMVV"), "Fay", "", "")
    assert EchoFilter(texts, speaker="Fay").strip(line) == (kept, echoes)
    assert EchoFilter(texts).strip(line) == (line, 0)  # no run of the role line catches it
