"""Serving one request on an engine's context, on its worker thread: a completion, or the
scores of a fixed list of options.

Each prompt but its last token is loaded through the engine's block prefix cache (restoring the
longest cached block prefix, evaluating the rest in the same fixed blocks), so an answer is the
same bytes whatever was served before it.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from typing import Any

from gtsteer.llm.backends.local.engine import LlamaEngine
from gtsteer.llm.errors import LLMCallError, PromptTooLongError
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage


def log_softmax(logits: Any) -> Any:
    """Log-probabilities from float64 logits, max-shifted: how `choose` turns llama.cpp's
    logits into an option token's log-likelihood."""
    import numpy as np

    top = logits.max()
    return logits - (top + math.log(np.exp(logits - top).sum()))


def last_logits(llm: Any, n_vocab: int) -> Any:
    """Logits of the last evaluated position, copied out of llama.cpp's buffer."""
    import llama_cpp
    import numpy as np

    pointer = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(pointer, shape=(n_vocab,)).astype(np.float64)


def complete(
    engine: LlamaEngine, text: str, request: GenerationRequest, json_schema: dict | None
) -> RawCompletion:
    """`text` (the rendered prompt) continued as `request` asks, under llama.cpp's JSON-schema
    grammar when `json_schema` is given."""
    llm = engine.llm
    tokens = engine.tokens(text)
    if len(tokens) + request.max_tokens > engine.n_ctx:
        raise PromptTooLongError(len(tokens), engine.n_ctx, request.max_tokens)
    grammar = None
    if json_schema is not None:
        from llama_cpp import LlamaGrammar

        grammar = LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False)
    stop = list(request.stop)
    if engine.template and engine.template.eos:
        stop.append(engine.template.eos)
    start = time.perf_counter()
    criteria = None if request.decided is None else _until_decided(
        engine, tokens, request.decided)
    try:
        # The prompt but its last token goes through the block cache; llama-cpp-python then
        # finds it already in the context and evaluates only the last token itself.
        evaluated = engine.prefix.load(llm, tokens[:-1]) + 1
        floor = engine.prefix.floor_last
        out = llm.create_completion(
            tokens,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            seed=request.seed,
            stop=stop or None,
            grammar=grammar,
            stopping_criteria=criteria,
        )
    except Exception as exc:  # llama.cpp raises plain RuntimeError/ValueError
        raise LLMCallError(f"llama.cpp failed: {exc}") from exc
    assert isinstance(out, dict), "not streamed, so one response"
    usage = out.get("usage", {})
    # What the context holds now: the prompt and every generated token but the last sampled.
    # Its novel tokens are a suffix of it, so those past the prompt are the generated ones.
    held = llm.input_ids[: llm.n_tokens].tolist()
    novel = engine.count_novel(held)
    generated = None if novel is None else min(novel, len(held) - len(tokens))
    return RawCompletion(
        text=out["choices"][0]["text"],
        usage=Usage(
            prompt_tokens=len(tokens),
            prompt_tokens_evaluated=evaluated,
            tokens_novel=novel,
            tokens_novel_generated=generated,
            prompt_tokens_block_floor=None if floor is None else floor + _beyond_completion(
                len(tokens), llm.n_tokens, usage.get("completion_tokens", 0)),
            completion_tokens=usage.get("completion_tokens", 0),
            latency_s=time.perf_counter() - start,
        ),
    )


def _beyond_completion(prompt: int, held: int, completion_tokens: int) -> int:
    """One-token decodes of a completion that `completion_tokens` does not count: the prompt's
    last token, then each generated token the context holds, are decoded one at a time. A stop
    at `max_tokens` or a stop string leaves the last counted token undecoded (0 beyond); a stop
    at end-of-generation or `decided` drops a sampled token that is never counted (1 beyond)."""
    return max(0, 1 + held - prompt - completion_tokens)


def _until_decided(engine: LlamaEngine, prompt: list[int], decided: Any) -> Any:
    """llama-cpp-python's stopping criteria for `request.decided`: after each token it is
    asked with every token so far, and a yes ends generation there (the sampled next token is
    dropped). The tokens before it are the ones a full generation makes, so the kept text is
    the same and only the discarded tail is never generated."""
    from llama_cpp import StoppingCriteriaList

    llm = engine.llm
    prompt = list(prompt)  # detokenize's context, made once rather than at every token

    def done(input_ids: Any, _logits: Any) -> bool:
        generated = input_ids[len(prompt):]
        if len(generated) == 0:
            return False
        text = llm.detokenize(list(generated), prev_tokens=prompt)
        return bool(decided(text.decode("utf-8", errors="ignore")))

    return StoppingCriteriaList([done])


def score(engine: LlamaEngine, text: str, options: list[str]) -> tuple[dict[str, float], Usage]:
    """Each option's log-likelihood as the continuation of `text` (the rendered prompt)."""
    llm = engine.llm
    prompt_tokens = engine.tokens(text)
    option_tokens = [engine.continuation_tokens(text, option) for option in options]
    for continuation in option_tokens:
        if len(prompt_tokens) + len(continuation) > engine.n_ctx:
            raise PromptTooLongError(len(prompt_tokens), engine.n_ctx, len(continuation))
    n_vocab = llm.n_vocab()
    requested = sum(len(prompt_tokens) + len(t) for t in option_tokens)
    start = time.perf_counter()

    floor = 0  # what the loads would evaluate with an unbounded cache, when counting

    def at_prompt_end() -> int:
        """Load the prompt (its last token evaluated here, so its logits are llama.cpp's
        last ones); the tokens evaluated."""
        nonlocal floor
        loaded = engine.prefix.load(llm, prompt_tokens[:-1])
        floor += (engine.prefix.floor_last or 0) + 1
        llm.eval(prompt_tokens[-1:])
        return loaded + 1

    # Without logits_all, llama-cpp-python 0.3.x leaves `llm.scores` unfilled, so logits
    # are read straight from llama.cpp after each eval. Every option's first token is
    # scored from the one distribution after the prompt; an option's later tokens need the
    # prompt reloaded and the option fed one token at a time, all but its last (whose own
    # logits are never read). The same evaluations, in the same order, as feeding each
    # option from a reloaded prompt: the same scores, with most of the decodes gone (the
    # reward model's one-token answers: one decode a choice instead of two an option).
    evaluated = at_prompt_end()
    novel = engine.count_novel(prompt_tokens)
    after_prompt = log_softmax(last_logits(llm, n_vocab))
    scores: dict[str, float] = {}
    for option, tokens in zip(options, option_tokens, strict=True):
        total = float(after_prompt[tokens[0]]) if tokens else 0.0
        if len(tokens) > 1:
            if novel is not None:  # the option's last token is never evaluated
                novel += engine.count_novel(prompt_tokens + tokens[:-1]) or 0
            evaluated += at_prompt_end()
            for token, following in itertools.pairwise(tokens):
                llm.eval([token])
                evaluated += 1
                floor += 1
                total += float(log_softmax(last_logits(llm, n_vocab))[following])
        scores[option] = total
    usage = Usage(
        prompt_tokens=requested,
        prompt_tokens_evaluated=evaluated,
        tokens_novel=novel,
        prompt_tokens_block_floor=None if engine.novel is None else floor,
        latency_s=time.perf_counter() - start,
    )
    return scores, usage
