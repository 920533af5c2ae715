"""The Werewolf context guard (issue 27, item 9): a prompt that would overflow the model's
context gets its oldest chat folded into a summary line; the game goes on and the fold is
recorded with the decision.

The fast tests use the fake model behind a context window and tokenizer they control: 4096
tokens as the embedded models have, a ChatML chat template (SmolLM2's and Qwen's) or the plain
transcript a base model reads, and lines as long as a chat model's. The slow test sends one
overflowing 12-player prompt to the real SmolLM2."""

from __future__ import annotations

import re

import pytest
from werewolf_helpers import table

from gtsteer.llm import LLM, FakeBackend, GenerationRequest, PromptTooLongError, RawCompletion
from gtsteer.werewolf.bots import bot_decision
from gtsteer.werewolf.context import BotContext, Entry, build_context, fit_context, fold_chat
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import ChatMessage, GameConfig, Pending
from gtsteer.werewolf.store import GameStore

#: A stand-in for a BPE tokenizer: words cut into pieces of up to four characters, punctuation
#: apart (about 1.5 tokens per English word, as the embedded models' tokenizers give).
TOKEN_RE = re.compile(r"\w{1,4}|[^\w\s]")
WINDOW = 4096


class SmallContextBackend(FakeBackend):
    """The fake model as an embedded model with a 4096-token context: its own tokenizer
    (TOKEN_RE), a ChatML template when `chat`, long answers, and the local
    backend's PromptTooLongError when a prompt and its answer do not fit."""

    kind = "local"

    def __init__(self, model: str, chat: bool, window: int = WINDOW):
        super().__init__(model)
        self.chat = chat
        self.window = window
        self.largest = 0

    def render(self, request: GenerationRequest) -> str:
        if not self.chat or request.messages is None:
            return request.as_text()
        turns = [f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in request.messages]
        return "".join(turns) + "<|im_start|>assistant\n"

    def context_window(self) -> int | None:
        return self.window

    def count_tokens(self, request: GenerationRequest) -> int | None:
        return len(TOKEN_RE.findall(self.render(request)))

    def _check(self, request: GenerationRequest, answer: int) -> None:
        used = self.count_tokens(request)
        self.largest = max(self.largest, used + answer)
        if used + answer > self.window:
            raise PromptTooLongError(used, self.window, answer)

    async def complete(self, request: GenerationRequest, json_schema=None) -> RawCompletion:
        self._check(request, request.max_tokens)
        raw = await super().complete(request, json_schema)
        if json_schema is not None:
            return raw
        words = (raw.text.rstrip(".") + " ") * 5  # the local models' 60-token lines
        return RawCompletion(text=" ".join(words.split()[:40]) + ".", usage=raw.usage)

    async def score_options(self, request: GenerationRequest, options: list[str]):
        self._check(request, max(len(TOKEN_RE.findall(o)) for o in options))
        return await super().score_options(request, options)


def small_pool(chat: bool) -> tuple[LLMPool, dict[str, SmallContextBackend]]:
    made: dict[str, SmallContextBackend] = {}

    def factory(model: str) -> LLM:
        made[model] = SmallContextBackend(model, chat)
        return LLM(model, backend=made[model])

    return LLMPool(factory), made


@pytest.mark.parametrize("chat", [True, False], ids=["chat-template", "completion"])
def test_a_12_player_game_folds_old_chat_instead_of_overflowing(tmp_path, chat):
    store = GameStore(tmp_path / "g.sqlite")
    pool, made = small_pool(chat)
    state = create_game(store, GameConfig(n_players=12, max_days=2), seed=1, game_id="big",
                        pool=pool)
    final = GameRunner(store, pool=pool).run(state)
    assert final.over and final.day == 2  # two full scaled days: 46 turns each
    backend = made["fake"]
    assert backend.largest <= WINDOW
    decisions = store.steps("big")
    folded = [d for d in decisions if d.folded]
    assert len(folded) >= 10 and all(d.folded % 8 == 0 for d in folded)  # whole blocks
    assert not any(d.error and "PromptTooLong" in d.error for d in decisions)
    # The fold is in the prompt the bot read, and only where the decision records one.
    calls = store.calls("big")
    for d, step in ((d, i + 1) for i, d in enumerate(decisions) if d.kind != "route"):
        prompts = [c.prompt for c in calls if c.extra["step"] == step]
        has_fold = any("(Summary of" in p and "folded to fit your memory" in p for p in prompts)
        assert has_fold == bool(d.folded), (step, d.kind, d.folded)
    # A folded prompt keeps the newest chat: the last public line before the decision.
    d, step = next((d, i + 1) for i, d in enumerate(decisions) if d.folded and d.kind == "speak")
    mine = next(m for m in final.messages if m.author == d.actor and m.text == d.text)
    said = [m for m in final.messages if m.day == mine.day and m.channel == "public"
            and m.author != "Moderator" and m.id < mine.id]
    prompt = next(c.prompt for c in calls if c.extra["step"] == step)
    assert said[-1].text in prompt and said[0].text not in prompt


def test_a_prompt_that_fits_is_sent_whole():
    state = table("WWDTMVVVVVVV")
    want = Pending(kind="speak", actor="Ben", turn=1, turns_total=46)
    ctx = build_context(state, "Ben", want, "balanced")
    renders: list[BotContext] = []

    def render(c: BotContext) -> str:
        renders.append(c)
        return c.completion("Ben:")

    out, prompt = fit_context(ctx, [p.name for p in state.players], render, lambda p: True)
    assert out is ctx and prompt == ctx.completion("Ben:") and renders == [ctx]
    assert out.folded == 0


def chat_state(n_lines: int, words: int = 40):
    """Day 1 of a 12-player game with `n_lines` discussion lines of `words` words."""
    state = table("WWDTMVVVVVVV", intro=False)
    names = [p.name for p in state.players]
    for i in range(n_lines):
        author = names[i % 12]
        target = names[(i + 5) % 12]
        text = f"I think {target} is hiding something, " + " ".join(["because"] * words)
        state.messages.append(ChatMessage(id=i, day=1, phase="discussion", author=author,
                                          text=text, turn=i + 1))
    state.turns_today = n_lines
    return state


def test_folding_keeps_the_log_chronological_and_counts_the_folded_lines():
    state = chat_state(20)
    names = [p.name for p in state.players]
    want = Pending(kind="speak", actor="Ben", turn=21, turns_total=46)
    ctx = build_context(state, "Ben", want, "balanced")
    folded = fold_chat(ctx, names, 9)
    assert folded.folded == 9
    summary = [e for e in folded.log if e.text.startswith("(Summary of 9 earlier chat lines")]
    assert len(summary) == 1
    # Lines 0-8 are gone (Ben's own line 1 with the command that asked for it), 9-19 stay.
    kept = [e.text for e in folded.log if e.author is not None and e.label]
    assert kept == [m.text for m in state.messages[9:]]
    assert len([e for e in ctx.log if e.author == "Ben" and not e.label]) == 2
    assert len([e for e in folded.log if e.author == "Ben" and not e.label]) == 1
    # The summary says who spoke how often and whom they named; the bot is "you".
    assert "Ann 1 (named Fay)" in summary[0].text and "you 1 (named Gus)" in summary[0].text
    header = folded.log.index(summary[0])
    assert folded.log[header - 1].label == "Moderator"  # right after the day header
    # Folding more folds on from where it stopped.
    again = fold_chat(folded, names, 8)
    assert again.folded == 17 and sum(e.author is not None and bool(e.label)
                                      for e in again.log) == 3


def test_an_answer_that_cannot_fit_still_reaches_the_model_folded_as_far_as_it_goes():
    ctx = BotContext(bot="Ann", system="s", command="c", log=[
        Entry(label="Ben", text="hello Ann", author="Ben"),
        Entry(label="Cat", text="hi Ben", author="Cat")])
    out, _ = fit_context(ctx, ["Ann", "Ben", "Cat"], lambda c: c.completion("Ann:"),
                         lambda p: False)
    assert out.folded == 2 and "Summary of 2 earlier chat lines" in out.log[0].text


@pytest.mark.slow
def test_smollm2_gets_an_overflowing_12_player_prompt_folded(tmp_path):
    """The real chat model and its template: 40 long lines (about 5k tokens) do not fit its
    4096-token context; the bot still speaks, with the oldest lines folded."""
    model = "local:smollm2-135m"
    state = chat_state(40, words=90)
    for p in state.players:
        p.model = model
    pool = LLMPool()
    backend = pool.get(model).backend
    want = Pending(kind="speak", actor="Ben", turn=41, turns_total=46)
    whole = build_context(state, "Ben", want, "balanced")
    assert backend.count_tokens(GenerationRequest(messages=whole.messages())) > 4096
    decision, records = bot_decision(state, want, pool)
    assert decision.folded >= 8 and decision.text
    assert records[0].error is None and "(Summary of" in records[0].prompt
    assert records[0].prompt_tokens + 60 <= backend.context_window()  # 60: the answer
