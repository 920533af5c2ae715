"""The per-game reading of public lines: repeats, cut lines, out-of-character lines, echoes."""

from __future__ import annotations

import pytest

from gtsteer.llm.speech import ends_sentence, whole_sentences
from gtsteer.werewolf.llmcalls import CallRecord
from gtsteer.werewolf.state import Decision
from lab.bench.line_quality import out_of_character, read_lines


def speak(actor: str, text: str, echoes: int = 0) -> Decision:
    return Decision(kind="speak", actor=actor, text=text, echoes=echoes)


def call(bot: str, tokens: int, purpose: str = "speak") -> CallRecord:
    return CallRecord(bot=bot, purpose=purpose, model="local", prompt="p", response="r", seed=0,
                      completion_tokens=tokens)


@pytest.mark.parametrize(("line", "speaker", "flagged"), [
    ("I'm Bram, the miller. I keep my eyes on the road.", "Bram", False),
    ("Ann, you were quiet last night. Why?", "Bram", False),
    ("Bram introduces himself to the village in character.", "Bram", True),
    ("(to the camera) There's something in the air.", "Bram", True),
    ("*smiles* Good evening, friends.", "Bram", True),
    ("I am the miller. (glancing at Ann) I keep to myself.", "Bram", True),
    ("Good evening (smiles), friends.", "Bram", True),
    ("Ann (the baker) was out late.", "Bram", False),
    ("The village is now in character, and I'm speaking.", "Bram", True),
    ("As an AI, I cannot pick a side.", "Bram", True),
    ("My playstyle says I should stay calm.", "Bram", True),
    ("I vote with the village; Kaja's story does not add up.", "Bram", False),
    # Qwen 0.5B, seed 0: an assistant's refusal, the moderator's header, a roster
    ("I'm sorry, but I can't assist with that.", "Bram", True),
    ("Day 1 begins. Alive: Clara, Ines, Greta.", "Bram", True),
    ("Ines, Greta, Kaja, Hugo, Alice, Elin.", "Bram", True),
    ("Ines and Greta voted together; why, Kaja?", "Bram", False),
    # SmolLM2, seed 0, with the game frame: a line that opens with a parenthesis narrates
    ("(The story is now starting, with Cla going to the bar.", "Bram", True),
    ("(I was playing a werewolf, and my character had been invited.)", "Bram", True),
])
def test_out_of_character_flags_narration_directions_and_machinery(
        line: str, speaker: str, flagged: bool) -> None:
    names = ["Bram", "Ann", "Kaja", "Clara", "Ines", "Greta", "Hugo", "Alice", "Elin"]
    assert out_of_character(line, speaker, names=names) is flagged


@pytest.mark.parametrize(("text", "whole"), [
    ("Good evening.", True), ('He said "no."', True), ("Really?!", True), ("Wait...", True),
    ("There's something in the air, and I'm", False), ("", False), ("I think (maybe)", False),
])
def test_ends_sentence(text: str, whole: bool) -> None:
    assert ends_sentence(text) is whole


def test_whole_sentences_keeps_text_up_to_the_last_sentence_end() -> None:
    assert whole_sentences("I saw Ann. She was out and I") == "I saw Ann."
    assert whole_sentences("no end at all") == "no end at all"


def test_a_game_report_counts_each_flag_over_spoken_lines_only() -> None:
    decisions = [
        speak("Ann", "Good evening, I bake bread."),
        speak("Ben", "Good evening, I bake bread."),  # repeat (another speaker, same words)
        speak("Cat", "  good   EVENING, i bake bread. "),  # repeat, case and spacing aside
        speak("Dan", "(to the camera) There's something in the air, and I'm"),  # cut + OOC
        speak("Eve", "...", echoes=2),  # empty after its echoes were stripped
        Decision(kind="vote", actor="Ann", target="Ben", reason="a reason, not a line"),
        Decision(kind="pack_chat", actor="Ann", text="kill Ben"),
        speak("Fay", "Ben dodged my question twice; I don't trust him.", echoes=1),
    ]
    calls = [call("Ann", 12), call("Ben", 12), call("Cat", 12), call("Dan", 60),
             call("Eve", 60), call("Ann", 60, purpose="vote:reason"), call("Fay", 20)]
    report = read_lines(decisions, calls, token_limit=60)
    assert report.lines == 6
    assert report.distinct == 3  # Ann's, Dan's and Fay's
    assert report.empty == 1 and report.echoes == 3
    assert report.cut == 1 and report.out_of_character == 1
    assert report.speak_calls == 6 and report.at_limit == 2  # the vote reason is not a speak call
    assert report.share("distinct") == pytest.approx(0.5)
    assert report.examples["repeat"] == ["Ben: Good evening, I bake bread.",
                                         "Cat: good   EVENING, i bake bread."]
    assert report.examples["cut"] == [("Dan: (to the camera) There's something in the air, "
                                      "and I'm")]


def test_an_empty_game_has_no_shares() -> None:
    report = read_lines([], [], token_limit=60)
    assert report.lines == 0 and report.share("distinct") is None


def test_a_line_reading_out_the_rules_is_out_of_character_when_the_config_is_given() -> None:
    from gtsteer.werewolf.state import GameConfig

    line = ("Base suspicion on votes, contradictions and claims, never on character stories. "
            "Hi.")
    decisions = [speak("Ann", line), speak("Ben", "Hi all, I fish by the river.")]
    assert read_lines(decisions, [], 60).out_of_character == 0  # no config: not matched
    report = read_lines(decisions, [], 60, config=GameConfig())
    assert report.out_of_character == 1 and report.examples["out_of_character"] == [
        f"Ann: {line}"]


def test_a_wolf_announcing_itself_is_out_of_character_when_the_wolves_are_given() -> None:
    # Qwen 1.5B, seed 0 (played before the claim filter took a name in between): stored as is.
    claim = "I'm Alice, a werewolf, and I'm here to help keep the village safe."
    decisions = [speak("Alice", claim), speak("Ben", "I'm Ben, a werewolf, haha. I fish.")]
    assert read_lines(decisions, [], 60).out_of_character == 0  # roles unknown: not matched
    report = read_lines(decisions, [], 60, wolves={"Alice"})
    # Ben is a villager: a villager's bluff is play, not a reveal
    assert report.out_of_character == 1 and report.examples["out_of_character"] == [
        f"Alice: {claim}"]


def test_a_line_reading_out_the_game_frame_is_out_of_character():
    from gtsteer.werewolf.prompts import GAME_FRAME
    from gtsteer.werewolf.state import GameConfig

    decisions = [speak("Ann", GAME_FRAME.split(". ")[0] + "."), speak("Ben", "I fish.")]
    report = read_lines(decisions, [], 60, config=GameConfig())
    assert report.out_of_character == 1


def test_the_line_report_counts_the_extra_samples() -> None:
    lines = [Decision(kind="speak", actor="Ann", text="Hello.", resampled=2),
             Decision(kind="speak", actor="Ben", text="Hi there.", resampled=1),
             Decision(kind="vote", actor="Ann", target="Ben")]
    report = read_lines(lines, [], token_limit=60)
    assert (report.lines, report.distinct, report.resampled) == (2, 2, 3)


def test_a_game_stored_without_first_tries_reports_them_unrecorded() -> None:
    """Counting only the first tries that are known would count only those that passed."""
    lines = [Decision(kind="speak", actor="Ann", text="Hello.", resampled=1),
             Decision(kind="speak", actor="Ben", text="Hi there.")]
    report = read_lines(lines, [], token_limit=60)
    assert report.distinct == 2
    assert (report.first_try_distinct, report.first_try_cut, report.first_try_empty) == (
        None, None, None)
    assert report.share("first_try_cut") is None
