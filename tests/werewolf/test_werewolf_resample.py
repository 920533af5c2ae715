"""A bot's line that comes out empty, word for word an earlier line of its channel, or ending
mid-sentence is sampled again (at most `LINE_RESAMPLES` times, with seeds derived from the
decision's), every try recorded; the game's line report counts the extra samples."""

from __future__ import annotations

import pytest
from werewolf_helpers import table

from gtsteer.llm import LLM, Backend, RawCompletion
from gtsteer.werewolf.bots import LINE_RESAMPLES, bot_decision
from gtsteer.werewolf.engine import pending, step
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.playstyles import reminder
from gtsteer.werewolf.prompts import GAME_FRAME
from gtsteer.werewolf.state import ChatMessage
from lab.bench.line_quality import read_lines


class ScriptBackend(Backend):
    """Answers free-text requests with the next line of a script (the last one repeats) and
    keeps the seeds it was asked with."""

    kind = "script"

    def __init__(self, lines: list[str]):
        super().__init__("script")
        self.lines = list(lines)
        self.seeds: list[int | None] = []

    async def complete(self, request, json_schema=None) -> RawCompletion:
        self.seeds.append(request.seed)
        line = self.lines.pop(0) if len(self.lines) > 1 else self.lines[0]
        return RawCompletion(text=line)


def decide(state, lines: list[str]):
    backend = ScriptBackend(lines)
    pool = LLMPool(lambda model: LLM(model, backend=backend, use_cache=False))
    want = pending(state)
    decision, records = bot_decision(state, want, pool)
    return want, decision, records, backend


def test_an_empty_line_is_sampled_again_with_another_seed() -> None:
    state = table("WWDTMVV")
    want, decision, records, backend = decide(state, ["", "Good morning, I bake bread."])
    assert want.kind == "speak"
    assert decision.text == "Good morning, I bake bread." and decision.resampled == 1
    assert [r.purpose for r in records] == ["speak", "speak"]
    assert len(set(backend.seeds)) == 2 and [r.seed for r in records] == backend.seeds


def test_a_line_that_is_only_an_echo_of_the_private_prompt_is_sampled_again() -> None:
    state = table("WWDTMVV")
    state.players[0].playstyle = "protective_team_player"
    echo = reminder("protective_team_player", wolf=True)
    _, decision, records, _ = decide(state, [echo, "I sell fish by the river."])
    assert decision.text == "I sell fish by the river." and decision.resampled == 1
    assert len(records) == 2


def test_a_line_that_reads_out_the_game_frame_is_sampled_again() -> None:
    # SmolLM2, seed 0: Hugo's turn was the frame every bot reads, word for word.
    state = table("WWDTMVV")
    _, decision, _, _ = decide(state, [GAME_FRAME, "(nods) Cat was quiet all day."])
    assert decision.text == "Cat was quiet all day." and decision.resampled == 1


def test_a_line_that_is_only_a_stage_direction_is_sampled_again() -> None:
    state = table("WWDTMVV")
    _, decision, _, _ = decide(state, ["(The story is now starting, with Cla at the bar",
                                       "I slept badly."])
    assert decision.text == "I slept badly." and decision.resampled == 1


def test_a_repeat_of_an_earlier_public_line_is_sampled_again() -> None:
    state = table("WWDTMVV")
    state.messages.append(ChatMessage(id=1, day=1, phase="intro", author="Gus",
                                      text="Good morning, everyone."))
    _, decision, _, _ = decide(state, ["good  morning,   Everyone.", "Ben looks nervous."])
    assert decision.text == "Ben looks nervous." and decision.resampled == 1


def test_a_line_said_only_in_the_pack_chat_is_no_repeat_in_public() -> None:
    state = table("WWDTMVV")
    state.messages.append(ChatMessage(id=1, day=1, phase="intro", channel="pack", author="Ben",
                                      text="Good morning, everyone."))
    _, decision, records, _ = decide(state, ["Good morning, everyone."])
    assert decision.text == "Good morning, everyone." and decision.resampled == 0
    assert len(records) == 1


@pytest.mark.parametrize(("tries", "kept"), [
    (["", "Hi.", ""], "Hi."),  # a repeat beats silence
    (["Hi.", "Well, I think that", "And then"], "Well, I think that"),  # a fresh cut line, a repeat
])
def test_after_the_last_try_the_best_one_is_kept(tries: list[str], kept: str) -> None:
    state = table("WWDTMVV")
    state.messages.append(ChatMessage(id=1, day=1, phase="intro", author="Gus", text="Hi."))
    _, decision, records, _ = decide(state, tries)
    assert (decision.text, decision.resampled) == (kept, LINE_RESAMPLES)
    assert len(records) == 1 + LINE_RESAMPLES


def test_silence_after_the_last_try_is_kept_as_silence() -> None:
    state = table("WWDTMVV")
    state.messages.append(ChatMessage(id=1, day=1, phase="intro", author="Gus", text="Hi."))
    want, silent, records, _ = decide(state, [""])
    assert (silent.text, silent.resampled, len(records)) == ("", LINE_RESAMPLES,
                                                             1 + LINE_RESAMPLES)
    after = step(state, silent)  # the game goes on; nothing is posted for a silent bot
    assert [m.author for m in after.messages] == ["Gus"] and after.step == state.step + 1
    assert want.actor not in after.queue[:1]


def test_the_same_state_asks_the_same_seeds() -> None:
    state = table("WWDTMVV")
    first = decide(state, ["", "", "Fine."])[3].seeds
    assert first == decide(state, ["", "", "Fine."])[3].seeds and len(set(first)) == 3


def test_a_line_that_ends_mid_sentence_is_sampled_again() -> None:
    # SmolLM2, stage games: first lines such as "Ines," and "Greeting:" were kept as turns.
    state = table("WWDTMVV")
    _, decision, records, _ = decide(state, ["Greeting:", "I keep the inn by the well."])
    assert decision.text == "I keep the inn by the well." and decision.resampled == 1
    assert len(records) == 2


def test_a_bot_that_tells_itself_who_it_is_samples_again() -> None:
    state = table("WWDTMVV")
    want = pending(state)
    _, decision, records, _ = decide(state, [f"You are {want.actor}.", "The mill was quiet."])
    assert decision.text == "The mill was quiet."
    assert (decision.echoes, decision.resampled, len(records)) == (0, 1, 2)


def test_first_try_rates_show_the_failures_the_guard_resampled() -> None:
    """Three introductions whose first tries come out empty, as a repeat and cut, each fixed by
    the second try: the kept lines read clean, their first tries do not."""
    state = table("WWDTMVV")
    backend = ScriptBackend(["", "I bake bread by the mill.",
                             "I bake bread by the mill.", "I mend nets at the pier.",
                             "Well, I think that", "The well has been quiet.",
                             "I keep the inn."])
    pool = LLMPool(lambda model: LLM(model, backend=backend, use_cache=False))
    decisions, calls = [], []
    for _ in range(4):
        decision, records = bot_decision(state, pending(state), pool)
        decisions.append(decision)
        calls += records
        state = step(state, decision)
    assert [d.kind for d in decisions] == ["speak"] * 4
    assert [d.first_try for d in decisions] == ["", "I bake bread by the mill.",
                                                "Well, I think that", None]
    report = read_lines(decisions, calls, token_limit=60)
    assert (report.lines, report.resampled, report.speak_calls) == (4, 3, 7)
    assert (report.distinct, report.cut, report.empty) == (4, 0, 0)  # after the guard
    # first tries: the cut one and the last (kept at once) are fresh; one repeat, one empty
    assert (report.first_try_distinct, report.first_try_cut, report.first_try_empty) == (2, 1, 1)
    assert report.share("first_try_distinct") == pytest.approx(0.5)
