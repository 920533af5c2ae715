"""Bot decisions: the cornered bot, fallbacks on garbage, the router rules, the playstyle hook."""

from __future__ import annotations

import json
import random

import pytest
from werewolf_helpers import table

from gtsteer.llm import LLM, Backend, RawCompletion, Usage
from gtsteer.werewolf.bots import LINE_RESAMPLES, bot_decision
from gtsteer.werewolf.context import build_context
from gtsteer.werewolf.engine import pending, step
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.playstyles import PLAYSTYLE_NAMES, InfoState
from gtsteer.werewolf.router import fix_speakers, route
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import ChatMessage, Decision, GameConfig, Vote
from gtsteer.werewolf.store import GameStore
from gtsteer.werewolf.themes import BUILTIN_SCENE, themed_cast


def cornered(seed: int = 0, model: str = "fake"):
    """Day 2: Gus died last night; everyone accuses Cat; five of six votes are already on Cat."""
    state = table("WWDTMVV", seed=seed, models=model)
    gus = state.player("Gus")
    gus.alive, gus.died_day, gus.cause = False, 1, "night"
    state.day, state.phase = 2, "vote"
    lines = [(n, f"Cat is the wolf, she dodged every question. Vote Cat, {n} says.")
             for n in ("Ann", "Ben", "Dan", "Eve", "Fay")]
    lines.insert(2, ("Cat", "I am not a wolf, you are making a mistake."))
    state.messages = [ChatMessage(id=i + 1, day=2, phase="discussion", author=a, text=t)
                      for i, (a, t) in enumerate(lines)]
    state.votes = [Vote(day=2, order=i + 1, voter=v, target="Cat")
                   for i, v in enumerate(["Ann", "Ben", "Dan", "Eve", "Fay"])]
    state.queue = ["Cat"]
    return state


@pytest.mark.parametrize("seed", range(12))
def test_cornered_bot_votes_a_legal_target_fake(seed):
    state = cornered(seed)
    want = pending(state)
    assert want.actor == "Cat"
    assert "Cat" not in want.legal_targets and "Gus" not in want.legal_targets
    decision, records = bot_decision(state, want, LLMPool())
    assert decision.target in want.legal_targets
    assert decision.target not in ("Cat", "Gus") and not decision.fallback
    after = step(state, decision)  # the engine accepts it and resolves the day
    assert after.day_results[-1].eliminated == "Cat"
    assert "Cat -> " not in records[0].prompt.split("Day 2 vote")[0]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["local:gemma3-270m", "local:smollm2-135m"])
def test_cornered_bot_votes_a_legal_target_local(model):
    pytest.importorskip("llama_cpp")
    state = cornered(0, model=model)
    want = pending(state)
    decision, records = bot_decision(state, want, LLMPool())
    assert decision.target in want.legal_targets and decision.target not in ("Cat", "Gus")
    # The likelihood call scores the names after the bot's reasoning, in either prompt form.
    assert "choice (one option, copied exactly):" in records[1].prompt[-200:]


class GarbageBackend(Backend):
    """A model that never returns a valid object (and says nonsense)."""

    kind = "garbage"
    supports_grammar = False

    def __init__(self) -> None:
        super().__init__("garbage")
        self.calls = 0

    async def complete(self, request, json_schema=None) -> RawCompletion:
        self.calls += 1
        text = '{"target": "Nobody", "reason": 7}' if self.calls % 2 else "I refuse!"
        return RawCompletion(text=text, usage=Usage(prompt_tokens=10, completion_tokens=3))


def test_garbage_model_falls_back_and_the_game_goes_on(tmp_path):
    backend = GarbageBackend()
    pool = LLMPool(lambda model: LLM(backend=backend, structured_attempts=2))
    store = GameStore(tmp_path / "g.sqlite")
    state = create_game(store, GameConfig(n_players=8, max_messages_per_day=3), seed=4,
                        model="garbage", pool=pool, game_id="gb")
    final = GameRunner(store, pool=pool).run(state)
    assert final.over and final.winner in ("village", "werewolves")
    assert final.votes and all(v.fallback and v.error for v in final.votes)
    assert all("choice" in v.error or "JSON" in v.error for v in final.votes)
    living_at_vote = {v.target for v in final.votes}
    assert all(v.target != v.voter for v in final.votes) and living_at_vote
    acted = [a for a in final.night_actions if not a.blocked]
    assert acted and all(a.fallback for a in acted)
    assert all(s.fallback for s in final.summaries)
    calls = store.calls("gb")
    assert any(c.error and c.attempts == 2 for c in calls)
    # the fallback is a seeded pick: the same game again gives the same targets
    store2 = GameStore(tmp_path / "g2.sqlite")
    pool2 = LLMPool(lambda model: LLM(backend=GarbageBackend(), structured_attempts=2,
                                      use_cache=False))
    again = GameRunner(store2, pool=pool2).run(
        create_game(store2, GameConfig(n_players=8, max_messages_per_day=3), seed=4,
                    model="garbage", pool=pool2, game_id="gb"))
    assert [v.target for v in again.votes] == [v.target for v in final.votes]


def test_router_rules_drop_unknown_and_include_a_quiet_player():
    state = table("WWDTMVV", intro=False)
    state.messages = [ChatMessage(id=i + 1, day=1, phase="discussion", author=a, text="hi")
                      for i, a in enumerate(["Ann", "Ann", "Ben", "Cat", "Dan", "Eve", "Fay"])]
    state.player("Fay").alive = False
    legal = [n for n in state.living() if n != "Eve"]
    fixed = fix_speakers(state, ["Zed", "Ann", "Fay", "Ann"], legal)
    assert "Zed" not in fixed and "Fay" not in fixed and fixed.count("Ann") == 1
    assert "Gus" in fixed  # the only living player who has not spoken today
    assert 2 <= len(fixed) <= 5
    many = fix_speakers(state, ["Ann", "Ben", "Cat", "Dan", "Eve"], legal)
    assert len(many) <= 5 and "Gus" in many
    assert fix_speakers(state, [], legal) == fix_speakers(state, [], legal)  # seeded


def test_router_decision_is_always_legal_with_the_fake_model():
    state = table("WWDTMVV", intro=False)
    for seed in range(10):
        state.seed = seed
        want = pending(state)
        decision, records = route(state, want, LLMPool())
        assert 2 <= len(decision.speakers) <= 5
        assert set(decision.speakers) <= set(want.legal_targets)
        assert records[0].bot == "(router)" and "(werewolf)" not in records[0].prompt
        step(state, decision)


class Recorder:
    """A chooser that records what it saw and always answers 'trickster'."""

    def __init__(self) -> None:
        self.seen: list[InfoState] = []

    def choose(self, info: InfoState) -> str:
        self.seen.append(info)
        return "trickster"


def test_playstyle_hook_is_asked_and_recorded(tmp_path):
    store = GameStore(tmp_path / "h.sqlite")
    chooser = Recorder()
    state = create_game(store, GameConfig(n_players=7, max_days=1, max_messages_per_day=3), seed=2,
                        game_id="h")
    GameRunner(store, chooser=chooser).run(state)
    assert chooser.seen
    assert {i.decision for i in chooser.seen} >= {"speak", "vote"}
    first = chooser.seen[0]
    assert first.text and first.bot in first.text and first.legal_targets == []
    assert first.assigned_playstyle in PLAYSTYLE_NAMES
    decisions = [d for d in store.steps("h") if d.kind != "route"]
    steered = [d for d in decisions if d.kind in ("speak", "vote", "pack_chat")]
    assert steered and all(d.playstyle == "trickster" for d in steered)
    # notes and night actions offer only "unsteered": the chooser is not asked
    assert all(d.playstyle == "unsteered" for d in decisions if d not in steered)
    assert all(d.info_state and d.info_state["bot"] == d.actor for d in decisions)
    # every request that reads the playstyle carries the chosen one; the follow-up that only
    # scores the options after the bot's own sentence carries none, and so do unsteered ones
    calls = [c for c in store.calls("h") if c.bot != "(router)"]
    styled = [c for c in calls if c.purpose in ("speak", "pack_chat", "vote:reason")]
    assert styled and all("Your playstyle now (trickster)" in c.prompt for c in styled)
    assert all("Your playstyle now" not in c.prompt for c in calls if c not in styled)
    assert all("Your playstyle now" not in i.text for i in chooser.seen)


def test_reminder_is_never_stored_and_chat_is_flattened():
    state = table("WWDTMVV", intro=False)
    state = step(state, Decision(kind="route", speakers=["Ann", "Ben", "Cat"]))
    for name, text in [("Ann", "Ben seems off."), ("Ben", "Why me, Ann?"), ("Cat", "Hm.")]:
        state = step(state, Decision(kind="speak", actor=name, text=text))
    ctx = build_context(state, "Ben", pending(state).model_copy(update={"actor": "Ben",
                                                                         "kind": "speak"}),
                        "balanced")
    msgs = ctx.messages()
    assert [m.role for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[2].content == "Why me, Ann?"
    assert "Ann: Ben seems off." in msgs[1].content and "Cat: Hm." in msgs[3].content
    assert msgs[3].content.rstrip().endswith(ctx.style)
    assert "Your playstyle now" not in state.model_dump_json()


def test_theme_uses_model_cast_or_falls_back():
    scene, cast, rec, builtin = themed_cast("pirates", 7, 1, LLMPool(), "fake")
    assert len(cast) == 7 and len({c[0] for c in cast}) == 7
    assert not builtin and rec.purpose == "theme"
    pool = LLMPool(lambda m: LLM(backend=GarbageBackend(), structured_attempts=1))
    scene, cast, rec, builtin = themed_cast("pirates", 7, 1, pool, "garbage")
    assert builtin and scene == BUILTIN_SCENE and len(cast) == 7 and rec.error


def test_themed_game_plays(tmp_path):
    store = GameStore(tmp_path / "t.sqlite")
    state = create_game(store, GameConfig(n_players=5, max_messages_per_day=2), seed=3,
                        theme="a space station", game_id="t")
    final = GameRunner(store).run(state)
    assert final.over
    assert json.loads(final.model_dump_json())["scene"]


def test_unknown_playstyle_from_the_hook_is_a_clear_error():
    class Bad:
        def choose(self, info: InfoState) -> str:
            return "berserker"

    state = cornered(0)
    with pytest.raises(ValueError, match="berserker"):
        bot_decision(state, pending(state), LLMPool(), Bad())


def test_mixed_models_in_one_game(tmp_path):
    store = GameStore(tmp_path / "m.sqlite")
    models = ["fake", "fake:other"] * 3
    config = GameConfig(n_players=6, max_days=1, max_messages_per_day=2)
    final = GameRunner(store).run(create_game(store, config, seed=1, models=models,
                                              game_id="m"))
    by_bot = {c.bot: c.model for c in store.calls("m") if not c.bot.startswith("(")}
    assert {p.name: p.model for p in final.players if p.name in by_bot} == by_bot
    assert set(by_bot.values()) == {"fake", "fake:other"}


@pytest.mark.parametrize(("raw", "clean"), [
    (" I trust Ben.\nBen: thanks", "I trust Ben."),
    ("Cat: I trust Ben.", "I trust Ben."),
    ("Ben:", ""),
    ("\n\n Ben is odd. Ben: no I am not", "Ben is odd."),
    ('"Quiet, all of you."', "Quiet, all of you."),
    # stage directions are not said aloud (SmolLM2, seed 0)
    ("(glancing at Ben) I trust Ben, (smiles) mostly.", "I trust Ben, mostly."),
    ("*sighs* Ben is odd.", "Ben is odd."),
    ("(The story is now starting, with Cla going to the bar. I trust Ben.", "I trust Ben."),
    ("(The story is now starting, with Cla going to the bar", ""),
])
def test_speech_is_cut_where_the_model_starts_another_turn(raw, clean):
    from gtsteer.werewolf.bots import clean_line

    assert clean_line(raw, "Cat", ["Ben", "Ann", "Moderator"]) == clean


# ---- order-invariant target choice (issue 8.4) ---------------------------------------------


class FirstListedBackend(Backend):
    """A model with pure position bias: it always prefers the first name of the last list it
    was shown (scores fall with the position; a structured pick takes the enum's first value)."""

    kind = "first-listed"
    supports_grammar = True

    def __init__(self) -> None:
        super().__init__("first-listed")

    @staticmethod
    def shown(text: str) -> list[str]:
        cut = max(text.rfind("Options: "), text.rfind("exactly one of: "))
        tail = text[cut:].split(": ", 1)[1]
        return [n.strip(" .") for n in tail.split(" (")[0].split(". ")[0].split(", ")]

    async def complete(self, request, json_schema=None) -> RawCompletion:
        if json_schema is None:
            return RawCompletion(text="Hard to say.")
        enum = json_schema["properties"][next(iter(json_schema["properties"]))].get("enum")
        key = next(iter(json_schema["properties"]))
        return RawCompletion(text=json.dumps({key: enum[0]}))

    async def score_options(self, request, options):
        order = self.shown(request.as_text())
        return {o: -10.0 * (order.index(o) if o in order else len(order)) for o in options}


def _bench():
    from lab.bench import bench_werewolf

    return bench_werewolf


def test_vote_does_not_depend_on_the_order_of_the_legal_list():
    state = cornered(3)
    want = pending(state)
    results = set()
    for k in range(4):
        order = list(want.legal_targets)
        random.Random(k).shuffle(order)
        decision, records = bot_decision(state, want.model_copy(update={"legal_targets": order}),
                                         LLMPool())
        results.add((decision.target, tuple(r.prompt for r in records)))
    assert len(results) == 1


def test_position_bias_is_measured_and_the_order_is_drawn_per_decision():
    bench = _bench()
    pool = LLMPool(lambda model: LLM(backend=FirstListedBackend(), use_cache=False))
    numbers = bench.position_bias("first-listed", 12, pool=pool, progress=False)
    # the measurement sees a pure position bias for what it is ...
    assert numbers["naive_fixed_order_first_wins"] == 1.0
    assert numbers["naive_shuffled_order_first_wins"] == 1.0
    assert numbers["scored_first_wins"] == 1.0
    # ... a fixed list order turns it into one victim; the bots' seeded display order does not
    assert len(numbers["targets"]["naive_fixed"]) == 1
    assert len(numbers["targets"]["scored"]) >= 4
    # the fake model has no position bias, and the bench does not invent one
    fake = bench.position_bias("fake", 16, pool=LLMPool(), progress=False)
    assert fake["scored_first_wins"] <= 0.5 and fake["naive_fixed_order_first_wins"] <= 0.5


def test_pick_samples_from_the_scores_with_the_decision_seed():
    from gtsteer.llm import ChoiceResult
    from gtsteer.werewolf.bots import sample_choice

    scores = ChoiceResult(choice="Ann", scores={"Ann": 0.0, "Ben": -0.7, "Cat": -30.0},
                          method="loglik")
    picks = [sample_choice(scores, ["Ann", "Ben", "Cat"], seed) for seed in range(400)]
    assert picks == [sample_choice(scores, ["Ann", "Ben", "Cat"], s) for s in range(400)]
    share = picks.count("Ann") / len(picks)
    assert 0.58 < share < 0.75 and "Cat" not in picks  # softmax: 1 / (1 + e^-0.7) = 0.67
    constrained = ChoiceResult(choice="Ben", scores={"Ann": 0.0, "Ben": 1.0}, method="constrained")
    assert sample_choice(constrained, ["Ann", "Ben"], 1) == "Ben"


# ---- a line cut at the token limit (issue 24.7) --------------------------------------------


class RunsOnBackend(Backend):
    """Answers with a fixed text and reports `tokens` completion tokens (the token limit when
    `tokens` is None)."""

    kind = "runs-on"

    def __init__(self, text: str, tokens: int | None = None):
        super().__init__("runs-on")
        self.text, self.tokens = text, tokens

    async def complete(self, request, json_schema=None) -> RawCompletion:
        used = request.max_tokens if self.tokens is None else self.tokens
        return RawCompletion(text=self.text, usage=Usage(completion_tokens=used))


@pytest.mark.parametrize(("text", "tokens", "said", "tries"), [
    # ran into the limit: the unfinished sentence goes, the whole one stays
    ("I saw Ben at the well. There's something in the air, and I'm", None,
     "I saw Ben at the well.", 1),
    # ran into the limit with no whole sentence: sampled again (this backend always answers
    # the same), then the first try is kept as it is (better than nothing)
    ("There's something in the air, and I'm", None, "There's something in the air, and I'm",
     1 + LINE_RESAMPLES),
    # ended by itself before the limit, mid-sentence: kept whole after the same resamples
    ("I saw Ben at the well. Ask him why", 12, "I saw Ben at the well. Ask him why",
     1 + LINE_RESAMPLES),
])
def test_a_public_line_cut_at_the_token_limit_keeps_its_whole_sentences(text, tokens, said,
                                                                          tries):
    state = table("WWDTMVV")
    want = pending(state)
    assert want.kind == "speak"
    pool = LLMPool(lambda model: LLM(model, backend=RunsOnBackend(text, tokens),
                                     use_cache=False))
    decision, records = bot_decision(state, want, pool)
    assert decision.text == said and decision.resampled == tries - 1
    assert [r.response for r in records] == [text] * tries  # the records keep what was written


class EmbeddedChatBackend(Backend):
    """Looks like an embedded chat model (kind `local`, a chat template) and keeps the messages
    of every free-text request."""

    kind = "local"
    chat = True

    def __init__(self) -> None:
        super().__init__("embedded-chat")
        self.asked: list = []
        self.stops: list = []

    async def complete(self, request, json_schema=None) -> RawCompletion:
        self.asked.append(request.messages)
        self.stops.append(request.stop)
        return RawCompletion(text=" Good evening, I mend nets by the river.")


def test_an_embedded_chat_model_answers_the_user_turn_and_stops_at_another_players_turn():
    # Opening the assistant turn with the speaker's cue (as the dialogue games do for chat
    # models) was tried and measured (docs/BENCHMARKS.md, "Werewolf: how each embedded model's
    # game reads"): with the day's chat in the prompt, SmolLM2 and Qwen 0.5B then continued it
    # as a transcript and copied earlier lines (Qwen 0.5B: 7 distinct of 13 lines, five
    # players saying the same line, "Good morning, everyone! I am Alice, ... I am a werewolf").
    # So the bots answer the user turn.
    state = table("WWDTMVV")
    want = pending(state)
    backend = EmbeddedChatBackend()
    pool = LLMPool(lambda model: LLM(model, backend=backend, use_cache=False))
    assert pool.small("x") and not pool.completion_style("x")
    decision, _ = bot_decision(state, want, pool)
    (messages,) = backend.asked
    assert messages[-1].role == "user" and "introduce yourself" in messages[-1].content
    assert decision.text == "Good evening, I mend nets by the river."
    # it stops where it starts another player's turn (clean_line would cut there anyway)
    others = {f"\n{p.name}:" for p in state.players if p.name != want.actor} | {"\nModerator:"}
    assert set(backend.stops[0]) == others


def test_an_api_chat_model_gets_no_stops():
    # an API model's paragraphs are joined into its line, so it is not stopped early
    state = table("WWDTMVV")
    backend = EmbeddedChatBackend()
    backend.kind = "api"
    pool = LLMPool(lambda model: LLM(model, backend=backend, use_cache=False))
    bot_decision(state, pending(state), pool)
    assert backend.asked[0][-1].role == "user"
    assert not backend.stops[0]


def test_each_decision_kind_has_its_own_function(tmp_path, monkeypatch):
    """`bot_decision` only builds the `DecisionContext` and hands it to `_speak` (speak,
    pack chat), `_summarise` (summary) or `_choose` (vote, night); each gives what
    `bot_decision` gives, records included (issue 41 item 6)."""
    from gtsteer.werewolf import bots

    store = GameStore(tmp_path / "k.sqlite")
    config = GameConfig(n_players=7, max_days=2, max_messages_per_day=2)
    seen: dict[str, tuple] = {}

    def grab(before, _after, _decision) -> None:
        want = pending(before)
        if want.kind != "route" and want.kind not in seen:
            seen[want.kind] = (before, want)

    GameRunner(store, on_step=grab).run(create_game(store, config, seed=4, game_id="k"))
    assert set(seen) == {"speak", "pack_chat", "night", "vote", "summary"}
    by_kind = {"speak": bots._speak, "pack_chat": bots._speak, "summary": bots._summarise,
               "vote": bots._choose, "night": bots._choose}
    for kind, (state, want) in seen.items():
        dc = bots.decision_context(state, want, LLMPool())
        assert (dc.bot, dc.purpose) == (want.actor, kind if want.verb is None
                                        else f"night:{want.verb}")
        direct, direct_calls = by_kind[kind](dc)
        whole, calls = bot_decision(state, want, LLMPool())
        assert direct == whole and direct.kind == kind
        assert ([c.model_dump(exclude={"latency_s"}) for c in direct_calls]
                == [c.model_dump(exclude={"latency_s"}) for c in calls])
    asked: list[str] = []
    for name in ("_speak", "_summarise", "_choose"):
        monkeypatch.setattr(bots, name, lambda dc, name=name: (asked.append(name), [])[1])
    for _kind, (state, want) in sorted(seen.items()):
        bot_decision(state, want, LLMPool())
    assert asked == ["_choose", "_speak", "_speak", "_summarise", "_choose"]
