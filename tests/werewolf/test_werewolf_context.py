"""Bot context: summaries see the day that ended, append-only chronological prompts, the
smaller prompt fixes (living pack, one abduction line, told discussion length), strict snapshots."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner
from werewolf_helpers import finish_summaries, play_night, table

from gtsteer.cli import app
from gtsteer.werewolf.context import MAX_CHAT_LINES, TRIM_BLOCK, build_context, trimmed
from gtsteer.werewolf.engine import begin_night, pending, step
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import ChatMessage, Decision, GameConfig, GameState
from gtsteer.werewolf.store import GameStore


class ContextRunner(GameRunner):
    """Keeps (state, pending) of every bot decision."""

    def __init__(self, store: GameStore):
        super().__init__(store)
        self.asked: list[tuple[GameState, object]] = []

    def decide(self, state, want):
        if want.kind != "route":
            self.asked.append((state, want))
        return super().decide(state, want)


def played(tmp_path, seed=3, n=8, **kw):
    store = GameStore(tmp_path / "c.sqlite")
    runner = ContextRunner(store)
    final = runner.run(create_game(store, GameConfig(n_players=n, max_messages_per_day=6),
                                   seed=seed, game_id="c", **kw))
    return store, runner, final


def test_day_2_summary_prompt_contains_day_1_chat(tmp_path):
    """Regression (issue 8.1): the notes written at dawn of day 2 summarise day 1 and night 1.

    The summaries run when night 1 is resolved, before day 2 starts, so `Summary.day` is the
    day summarised (1) and the prompt holds that day's whole chat."""
    store, _, final = played(tmp_path)
    day1_chat = [m for m in final.messages if m.day == 1 and m.channel == "public"
                 and m.phase == "discussion"]
    assert len(day1_chat) >= 4
    summaries = [c for c in store.calls("c") if c.purpose == "summary" and c.day == 1]
    assert summaries
    night1 = next(m.text for m in final.messages if m.text.startswith("Night 1:"))
    for call in summaries:
        for m in day1_chat:  # own lines are assistant turns, others' lines carry their name
            assert (m.text if m.author == call.bot else f"{m.author}: {m.text}") in call.prompt
        assert night1 in call.prompt
    # day 2 reads the moderator's recap of day 1 and the bot's own notes on it
    day2 = [c for c in store.calls("c") if c.day == 2 and c.purpose == "speak"]
    assert day2
    for call in day2:
        assert "Day 1 recap (moderator)" in call.prompt
        assert "Your notes after day 1:" in call.prompt
        assert all(f"{m.author}: {m.text}" not in call.prompt for m in day1_chat)


def _log_lines(ctx):
    return [e.line() for e in ctx.log]


def test_prompts_are_static_headed_and_append_only(tmp_path):
    _, runner, _ = played(tmp_path, seed=5, n=8)
    by_bot: dict[str, list] = {}
    for state, want in runner.asked:
        ctx = build_context(state, want.actor, want, state.player(want.actor).playstyle)
        by_bot.setdefault(want.actor, []).append((state, want, ctx))
    checked_same_day = checked_boundary = 0
    for bot, seq in by_bot.items():
        assert len({ctx.system for _, _, ctx in seq}) == 1, f"{bot}: system prompt changed"
        for (s1, w1, c1), (s2, _, c2) in pairwise(seq):
            if s1.day == s2.day:
                # the earlier log is a prefix of the later one ...
                assert c2.log[:len(c1.log)] == c1.log, f"{bot}: log rewritten within day"
                # ... and a command answered with a chat line stays in the transcript
                if w1.kind == "speak" and any(m.author == bot for m in
                                              s2.messages[len(s1.messages):]):
                    assert c2.log[len(c1.log)].text == c1.command
                checked_same_day += 1
            else:
                # across a day, the past-day part only grows
                def past(ctx):
                    head = next(i for i, e in enumerate(ctx.log)
                                if e.text.startswith(f"Day {ctx_day(ctx)} begins"))
                    return ctx.log[:head]
                assert past(c2)[:len(past(c1))] == past(c1)
                checked_boundary += 1
    assert checked_same_day > 30 and checked_boundary > 3


def ctx_day(ctx) -> int:
    return max(int(e.text.split()[1]) for e in ctx.log if e.text.startswith("Day ")
               and e.text.split()[1].isdigit() and "begins" in e.text)


def test_night_prompt_is_chronological_and_pack_lines_appear_once():
    state = table("WWDTMVV", intro=False, max_messages_per_day=2)
    state = step(state, Decision(kind="route", speakers=["Cat", "Dan"]))
    state = step(state, Decision(kind="speak", actor="Cat", text="Ann was quiet."))
    state = step(state, Decision(kind="speak", actor="Dan", text="Gus pushed hard."))
    while state.phase == "vote":
        want = pending(state)
        state = step(state, Decision(kind="vote", actor=want.actor,
                                     target="Gus" if want.actor != "Gus" else "Fay"))
    while (want := pending(state)).verb != "kill":
        if want.kind == "pack_chat":
            state = step(state, Decision(kind="pack_chat", actor=want.actor,
                                         text=f"{want.actor} wants Cat"))
        else:
            state = step(state, Decision(kind="night", actor=want.actor, target="Fay"))
    text = build_context(state, want.actor, want, "balanced").completion("")
    order = ["Dan: Gus pushed hard.", "Vote 1:", "The village eliminated Gus",
             "[pack] Ann: Ann wants Cat", "Night 1. "]
    positions = [text.index(s) for s in order]
    assert positions == sorted(positions), positions
    assert text.count("[pack] Ann: Ann wants Cat") == 2  # two rounds, each line once


def test_pack_names_only_living_mates():
    state = table("WWWDTMVVVV", intro=False)
    state.player("Cat").alive, state.player("Cat").died_day = False, 1
    state.player("Cat").cause = "vote"
    state = begin_night(state)
    want = pending(state)
    while want.kind != "pack_chat":
        state = step(state, Decision(kind="night", actor=want.actor, target="Jon"))
        want = pending(state)
    ctx = build_context(state, want.actor, want, "balanced")
    assert "Cat" not in ctx.command and "private pack chat with" in ctx.command
    mate = "Ben" if want.actor == "Ann" else "Ann"
    assert mate in ctx.command


def test_abducted_doctor_gets_one_line_for_one_event():
    state = begin_night(table("WWDTMVV"))
    after, _ = play_night(state, {"abduct": "Cat", "kill": "Gus", "investigate": "Ann"})
    want = pending(after)
    while want.actor != "Cat":
        after = step(after, Decision(kind="summary", actor=want.actor))
        want = pending(after)
    text = build_context(after, "Cat", want, "balanced").completion("")
    assert text.count("Night 1: Cat, you were abducted") == 1
    assert "night action was blocked." not in text.replace("any night action of yours was "
                                                          "blocked.", "")


def test_discussion_length_is_told_to_bots():
    state = table("WWDTMVV", intro=False)
    state = step(state, Decision(kind="route", speakers=["Ann", "Ben"]))
    state = step(state, Decision(kind="speak", actor="Ann", text="Hello."))
    want = pending(state)
    ctx = build_context(state, want.actor, want, "balanced")
    assert "(message 2 of 28;" in ctx.command
    assert "about 3.5 per living player" in ctx.system


def test_chat_is_trimmed_in_whole_blocks():
    msgs = [ChatMessage(id=i, day=1, phase="discussion", author="Ann", text=str(i))
            for i in range(100)]
    starts = []
    for n in range(1, 101):
        kept, cut = trimmed(msgs[:n])
        starts.append(int(kept[0].text))
        assert len(kept) <= MAX_CHAT_LINES and cut == (n > MAX_CHAT_LINES)
    moves = sorted(set(starts))
    assert moves == [k * TRIM_BLOCK for k in range(len(moves))] and len(moves) >= 3
    # the cut point moves only when the window is full: few prefix breaks per day
    assert sum(a != b for a, b in pairwise(starts)) == len(moves) - 1


# ---- snapshots: clear errors, unknown keys rejected -----------------------------------------


def _snapshot() -> dict:
    return json.loads(table("WWDTMVV").model_dump_json())


@pytest.mark.parametrize(("change", "match"), [
    (lambda s: s.update(vote=[]), "vote"),
    (lambda s: s["players"][0].update(playstyle="modest_mouse"), "modest_mouse"),
    (lambda s: s.update(night_results=[{"night": 1, "deaths": [{"name": "Gus"}]}]), "role"),
    (lambda s: s.update(day_results=[{"day": 1, "tally": {"Gus": 4}, "eliminated": "Gus"}]),
     "needs a `role`"),
    (lambda s: s.update(votes=[{"day": 1, "order": 1, "voter": "Ann", "target": "Zed"}]),
     "Zed"),
    (lambda s: s["players"][1].update(colour="red"), "colour"),
])
def test_bad_snapshots_are_rejected_with_the_field_named(change, match):
    snap = _snapshot()
    change(snap)
    with pytest.raises(ValidationError, match=match):
        GameState.model_validate(snap)


def test_act_on_a_bad_snapshot_is_a_clear_cli_error(tmp_path):
    snap = _snapshot()
    snap["players"][0]["playstyle"] = "modest_mouse"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(snap))
    res = CliRunner().invoke(app, ["werewolf", "act", "--snapshot", str(path), "--bot", "Ben",
                                   "--action", "vote", "--llm", "fake"])
    assert res.exit_code == 2 and "modest_mouse" in res.output and "Traceback" not in res.output


def test_act_runs_the_doctors_action_list(tmp_path):
    state = begin_night(table("WWDTMVV"))
    path = tmp_path / "night.json"
    path.write_text(state.model_dump_json())
    res = CliRunner().invoke(app, ["werewolf", "act", "--snapshot", str(path), "--bot", "Cat",
                                   "--action", "night", "--llm", "fake"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)  # the usage line goes to stderr
    assert out.get("action", "protect") in ("protect", "kill")
    assert out["target"] in [p.name for p in state.players]


def test_summaries_then_the_next_day(tmp_path):
    state = begin_night(table("WWDTMVV"))
    after, _ = play_night(state, {"abduct": "Fay", "kill": "Gus", "protect": "Cat",
                                  "investigate": "Ann"})
    assert after.phase == "summary"
    want = pending(after)
    ctx = build_context(after, want.actor, want, "balanced")
    assert "Day 1 and night 1 are over" in ctx.command
    nxt = finish_summaries(after)
    assert nxt.day == 2 and nxt.phase == "discussion"


def test_every_bot_is_told_first_that_this_is_a_party_game_spoken_in_character():
    """Chat-tuned models read bare rules about killing as a request for violence and refuse
    (Qwen2.5-Coder 0.5B, seed 0: "I'm sorry, but I can't assist with that." four times)."""
    from gtsteer.werewolf.prompts import GAME_FRAME

    state = table("WWDTMVV", intro=False)
    state = step(state, Decision(kind="route", speakers=["Ann", "Ben"]))
    want = pending(state)
    ctx = build_context(state, want.actor, want, "balanced")
    assert ctx.system.startswith(GAME_FRAME + "\n")
    assert "party game" in GAME_FRAME and "make-believe" in GAME_FRAME
    assert ctx.messages()[0].content.startswith(GAME_FRAME)
