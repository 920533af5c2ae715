"""Batched decoding: many sequences of one model advance together in one `llama_decode`.

A tree level, a round of Werewolf votes or a steering evaluation arrives as many concurrent
requests. Decoding them one at a time streams the whole weight file through the core for every
generated token of every request (a matrix-vector product); decoding up to `max_seqs` of them in
one `llama_batch`, one token per sequence, turns that into one matrix-matrix product per step.

How a request is served:
1. Admission (prefix-ordered, as `PrefixOrderedQueue` orders the one-at-a-time path): the prompt
   but its last token is loaded into sequence 0 of the batch context through a block prefix
   cache, in the same blocks the one-at-a-time path uses, and its KV cells are copied into a
   free generating sequence (llama.cpp's sequence state API). Requests sharing a prefix therefore
   share its cells: computed once, restored from the prefix cache for the others.
2. Every step decodes one token per active sequence (the first step: the prompt's last token)
   and samples each sequence with its own seeded llama.cpp sampler chain, built exactly as
   llama-cpp-python builds it for `create_completion` (grammar-constrained requests get the
   same `GrammarCheckedSampler`). Stop strings, end-of-generation tokens and `max_tokens` are
   applied per sequence with `create_completion`'s own rules, so a finished sequence frees its
   slot for the next queued request at once.
3. `choose` requests score every option of one question in one decode: one sequence per option
   holding the prompt, all option tokens in the batch with their logits.

Why outputs do not depend on the batch: the batch context keeps one KV stream per sequence
(`kv_unified = False`), so a sequence's attention runs over its own cells laid out exactly as in
the single-sequence context, and llama.cpp's CPU matrix kernels compute each column of a batch
independently. Tests check that batched outputs equal the one-at-a-time path's byte for byte
(docs/LOCAL.md records the measurement per model); a model whose kernels broke that would show
there first.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import math
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from gtsteer.llm.backends.prefix_queue import pop_longest_shared
from gtsteer.llm.errors import LLMCallError, ModelConfigError
from gtsteer.llm.types import RawCompletion, Usage

BATCH_ENV = "GTSTEER_LOCAL_BATCH"
#: Sequences decoded together by default. Measured (gtsteer bench batch, docs/BENCHMARKS.md):
#: on this 2-core machine B = 8 made the README main job 0.91x as fast as one at a time (its
#: prompts' 64-token blocks run one sequence at a time and dominate), and 16 requests sharing a
#: long prefix 1.05x; so batching is opt-in (GTSTEER_LOCAL_BATCH=8). Batching prefill would not
#: change that: prompt evaluation here is compute-bound at one 64-token block (llama.cpp's own
#: tools gain at most 1.23x from bigger decodes, 1.13x from several prompts per batch:
#: gtsteer bench prefill).
DEFAULT_BATCH = 1
MAX_BATCH = 64
#: Tokens one `llama_decode` may carry (the batch context's n_batch): scoring many long options
#: is split into several decodes beyond it.
BATCH_TOKENS = 512
#: Rows an interleaved (repacked-weight) kernel groups together: decodes of fewer rows than
#: this stream the weights once per row, so batching them buys nothing (docs/BENCHMARKS.md).
GROUP_ROWS = 4
#: Coming out of idle, admission waits until no request arrived for BURST_QUIET_S (at most
#: BURST_MAX_S): a tree level's requests reach the queue over a few milliseconds.
BURST_QUIET_S = 0.002
BURST_MAX_S = 0.05

# create_completion's sampling defaults (llama-cpp-python 0.3.x); the chain is built from them
# so that a batched request samples exactly as the one-at-a-time path does.
_SAMPLING = {
    "top_k": 40,
    "top_p": 0.95,
    "min_p": 0.05,
    "typical_p": 1.0,
    "repeat_penalty": 1.0,
    "frequency_penalty": 0.0,
    "presence_penalty": 0.0,
    "tfs_z": 1.0,
    "mirostat_mode": 0,
    "mirostat_tau": 5.0,
    "mirostat_eta": 0.1,
    "penalize_nl": True,
    "logits_processor": None,
}


def local_batch() -> int:
    """GTSTEER_LOCAL_BATCH (1 = one sequence at a time, the unbatched path), else the default."""
    raw = os.environ.get(BATCH_ENV, "").strip()
    if not raw:
        return DEFAULT_BATCH
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_BATCH:
        raise ModelConfigError(
            f"{BATCH_ENV}={raw!r} must be a whole number from 1 (one sequence at a time) "
            f"to {MAX_BATCH}."
        )
    return int(raw)


def log_softmax(logits: Any) -> Any:
    """Log-probabilities from float64 logits, max-shifted: how both scoring paths (batched and
    one at a time) turn llama.cpp's logits into an option token's log-likelihood, so their
    scores agree to the bit."""
    import numpy as np

    top = logits.max()
    return logits - (top + math.log(np.exp(logits - top).sum()))


@dataclass
class GenerateJob:
    """One completion: prompt tokens, sampling settings and the per-request stop rules."""

    tokens: list[int]
    seed: int
    temperature: float
    max_tokens: int
    stop: list[str]
    grammar: Any = None  # a LlamaGrammar, or None


@dataclass
class ScoreJob:
    """One `choose`: the prompt and each option's continuation tokens."""

    tokens: list[int]
    options: list[str]
    option_tokens: list[list[int]]


@dataclass(order=True)
class _Pending:
    order: int
    key: str = field(compare=False)
    job: GenerateJob | ScoreJob = field(compare=False)
    loop: asyncio.AbstractEventLoop = field(compare=False)
    future: asyncio.Future = field(compare=False)


@dataclass
class _Slot:
    """A generating sequence: its request, sampler and the text so far."""

    seq: int
    pending: _Pending
    sampler: Any
    stop: list[bytes]
    max_tokens: int
    next_token: int
    pos: int
    evaluated: int
    start: float
    completion: list[int] = field(default_factory=list)
    pieces: list[bytes] = field(default_factory=list)
    multibyte_fix: int = 0
    index: int = -1  # its row in the current decode


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class BatchDecoder:
    """One worker thread decoding up to `max_seqs` requests of one engine together.

    `engine` provides `llm` (the loaded `Llama`: model, vocabulary, context settings), `n_ctx`
    (per sequence) and `threads`; `prefix` is this decoder's own block prefix cache (its states
    are laid out for the batch context, so they are not shared with the engine's)."""

    def __init__(self, engine: Any, max_seqs: int, prefix: Any, name: str = "gtsteer-batch"):
        import llama_cpp
        from llama_cpp import _internals

        self.engine = engine
        self.max_seqs = max_seqs
        self.name = name
        llm = engine.llm
        params = llama_cpp.llama_context_default_params()
        # sequence 0 prefills (through the prefix cache); 1..max_seqs generate
        params.n_ctx = engine.n_ctx * (max_seqs + 1)
        params.n_batch = BATCH_TOKENS
        params.n_ubatch = BATCH_TOKENS
        params.n_seq_max = max_seqs + 1
        params.n_threads = engine.threads
        params.n_threads_batch = engine.threads
        params.swa_full = True
        params.kv_unified = False  # one KV stream per sequence: see the module docstring
        params.flash_attn_type = llm.context_params.flash_attn_type
        params.type_k = llm.context_params.type_k
        params.type_v = llm.context_params.type_v
        self.ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
        self.memory = llama_cpp.llama_get_memory(self.ctx.ctx)
        self.batch = llama_cpp.llama_batch_init(BATCH_TOKENS, 0, 1)  # one sequence per row
        self.prefix = prefix
        self.prefill = _PrefillSequence(self)
        self.n_vocab = llm.n_vocab()
        self.vocab = llm._model.vocab
        self.bos = llm.token_bos()
        self._piece = (ctypes.c_char * 64)()
        self._cond = threading.Condition()
        self._pending: list[_Pending] = []
        self._active: list[_Slot] = []
        # Lowest sequence ids first, rows in id order: llama.cpp puts only consecutive sequence
        # ids into one micro-batch (split_equal, one KV stream per sequence), so a gap in the ids
        # costs another pass over the weights.
        self._free = list(range(1, max_seqs + 1))
        self._counter = itertools.count()
        self._last_key = ""
        self._thread: threading.Thread | None = None
        self._closed = False
        self.running = threading.Lock()  # held while the worker touches llama.cpp
        self.served: deque[str] = deque(maxlen=1024)  # recent keys in admission order (tests)
        self.steps = 0  # decode steps of the generating sequences (benchmarks read it)
        self.rows_per_decode = self._independent_rows()
        self.peak_active = 0

    def _independent_rows(self) -> int:
        """How many sequences one decode may carry with each row's logits the bytes it gets
        alone. llama.cpp's CPU kernels compute most matrix products column by column, but some
        take columns in tiles whose shape follows the decode's size (the interleaved kernels
        for repacked Q4_K/Q4_0 weights group 4 rows; llamafile's tinyBLAS, which takes Q8_0,
        Q5_0 and Q4_0, most of Gemma 3 270M's and Qwen2.5 0.5B's tensors, picks its tile by how
        many columns remain), and a row rounds by its tile. Probed here for every decode size up to
        `max_seqs` and every place in it: one token per row, each row against its logits
        alone; the answer is the largest size up to which all agree (at least 1)."""
        import llama_cpp
        import numpy as np

        tokens = [(self.bos + 7 + 101 * i) % self.n_vocab for i in range(self.max_seqs)]

        def logits(row: int) -> bytes:
            pointer = llama_cpp.llama_get_logits_ith(self.ctx.ctx, row)
            return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)).tobytes()

        try:
            alone = []
            for i, t in enumerate(tokens):
                self._decode([(t, 0, 1 + i, True)])
                alone.append(logits(0))
            llama_cpp.llama_memory_clear(self.memory, True)
            for size in range(2, self.max_seqs + 1):
                self._decode([(t, 0, 1 + i, True) for i, t in enumerate(tokens[:size])])
                together = [logits(i) for i in range(size)]
                llama_cpp.llama_memory_clear(self.memory, True)
                if together != alone[:size]:
                    return size - 1
        finally:
            llama_cpp.llama_memory_clear(self.memory, True)
        return self.max_seqs

    # ---- submitting --------------------------------------------------------------------------

    async def run(self, key: str, job: GenerateJob | ScoreJob) -> Any:
        loop = asyncio.get_running_loop()
        pending = _Pending(next(self._counter), key, job, loop, loop.create_future())
        with self._cond:
            self._pending.append(pending)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._thread.start()
            self._cond.notify()
        return await pending.future

    # ---- the worker --------------------------------------------------------------------------

    def _pick(self) -> _Pending:
        return pop_longest_shared(self._pending, self._last_key)

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._active:
                    if self._closed:
                        return
                    self._cond.wait()
                if not self._active:
                    self._gather_burst()
                admit: list[_Pending] = []
                while self._pending and len(self._active) + len(admit) < self.max_seqs:
                    admit.append(self._pick())
            with self.running:
                for pending in admit:
                    if pending.future.cancelled():
                        continue
                    self._last_key = pending.key
                    self.served.append(pending.key)
                    self._admit(pending)
                if self._active:
                    self._step()

    def _gather_burst(self) -> None:
        """Coming out of idle, let a burst of requests arrive before admitting any, so that the
        first batch is chosen (prefix-ordered) from the whole burst rather than its first few.
        Only the grouping depends on this timing; outputs never do."""
        deadline = time.monotonic() + BURST_MAX_S
        while time.monotonic() < deadline:
            before = len(self._pending)
            self._cond.wait(BURST_QUIET_S)
            if len(self._pending) == before:
                return

    def _finish(self, pending: _Pending, result: Any, error: BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # that event loop has closed
            pending.loop.call_soon_threadsafe(_settle, pending.future, result, error)

    def _admit(self, pending: _Pending) -> None:
        """Prefill one request into a free sequence (a failure fails this request alone)."""
        try:
            if isinstance(pending.job, ScoreJob):
                self._finish(pending, self._score(pending.job), None)
                return
            self._active.append(self._start(pending))
            self.peak_active = max(self.peak_active, len(self._active))
        except Exception as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            error = (
                exc if isinstance(exc, LLMCallError) else LLMCallError(f"llama.cpp failed: {exc}")
            )
            self._finish(pending, None, error)

    def _load_prompt(self, tokens: list[int], seqs: list[int]) -> int:
        """Put `tokens` (the prompt but its last token) into each of `seqs`; return the tokens
        evaluated (once: the prefix cache's single-sequence context computes, the batch copies)."""
        import llama_cpp

        for seq in seqs:
            llama_cpp.llama_memory_seq_rm(self.memory, seq, -1, -1)
        if not tokens:
            return 0
        evaluated = self.prefix.load(self.prefill, tokens)
        ctx = self.ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        state = (ctypes.c_uint8 * size)()
        if llama_cpp.llama_state_seq_get_data(ctx, state, size, 0) != size:
            raise LLMCallError("llama.cpp could not read the prompt's KV state")
        for seq in seqs:
            if llama_cpp.llama_state_seq_set_data(ctx, state, size, seq) != size:
                raise LLMCallError("llama.cpp could not copy the prompt's KV state into the batch")
        return evaluated

    def _start(self, pending: _Pending) -> _Slot:
        job = pending.job
        assert isinstance(job, GenerateJob)
        start = time.perf_counter()
        seq = self._free.pop(0)
        try:
            evaluated = self._load_prompt(job.tokens[:-1], [seq]) + 1
            llm = self.engine.llm
            llm.set_seed(job.seed)  # `_init_sampler` seeds the chain from it, as create_completion
            sampler = llm._init_sampler(temp=job.temperature, grammar=job.grammar, **_SAMPLING)
        except BaseException:
            self._return_seq(seq)
            raise
        return _Slot(
            seq=seq,
            pending=pending,
            sampler=sampler,
            stop=[s.encode("utf-8") for s in job.stop],
            max_tokens=job.max_tokens,
            next_token=job.tokens[-1],
            pos=len(job.tokens) - 1,
            evaluated=evaluated,
            start=start,
        )

    def _decode(self, rows: list[tuple[int, int, int, bool]]) -> None:
        """One llama_decode of (token, position, sequence, wants logits) rows."""
        import llama_cpp

        if len(rows) > BATCH_TOKENS:
            raise LLMCallError(f"{len(rows)} tokens exceed one decode's {BATCH_TOKENS}")
        batch = self.batch
        batch.n_tokens = len(rows)
        for i, (token, pos, seq, logits) in enumerate(rows):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.seq_id[i][0] = seq
            batch.n_seq_id[i] = 1
            batch.logits[i] = logits
        rc = llama_cpp.llama_decode(self.ctx.ctx, batch)
        if rc != 0:
            raise LLMCallError(f"llama_decode failed with code {rc}")

    def _release(self, slot: _Slot) -> None:
        import llama_cpp

        llama_cpp.llama_memory_seq_rm(self.memory, slot.seq, -1, -1)
        with contextlib.suppress(Exception):
            slot.sampler.close()
        self._return_seq(slot.seq)
        self._active.remove(slot)

    def _return_seq(self, seq: int) -> None:
        self._free.append(seq)
        self._free.sort()

    def _step(self) -> None:
        """One token for every active sequence, in decodes of at most `rows_per_decode` (split
        evenly: 8 sequences at 7 rows per decode make 4 + 4, not 7 + 1)."""
        self.steps += 1
        active = sorted(self._active, key=lambda slot: slot.seq)
        decodes = -(-len(active) // self.rows_per_decode)
        width = -(-len(active) // decodes)
        for start in range(0, len(active), width):
            self._step_rows(active[start : start + width])

    def _step_rows(self, slots: list[_Slot]) -> None:
        rows = []
        for i, slot in enumerate(slots):
            slot.index = i
            rows.append((slot.next_token, slot.pos, slot.seq, True))
        try:
            self._decode(rows)
        except Exception as exc:  # noqa: BLE001 - every sequence of this decode fails
            for slot in slots:
                self._finish(slot.pending, None, exc)
                self._release(slot)
            return
        for slot in slots:
            try:
                token = slot.sampler.sample(self.ctx, slot.index)
                text = self._advance(slot, token)
            except Exception as exc:  # noqa: BLE001 - this sequence alone fails
                self._finish(slot.pending, None, LLMCallError(f"llama.cpp failed: {exc}"))
                self._release(slot)
                continue
            if text is not None:
                usage = Usage(
                    prompt_tokens=len(slot.pending.job.tokens),
                    prompt_tokens_evaluated=slot.evaluated,
                    completion_tokens=len(slot.completion),
                    latency_s=time.perf_counter() - slot.start,
                )
                self._finish(slot.pending, RawCompletion(text=text, usage=usage), None)
                self._release(slot)

    def _piece_of(self, token: int) -> bytes:
        import llama_cpp

        n = llama_cpp.llama_token_to_piece(
            self.vocab, token, self._piece, len(self._piece), 0, False
        )
        if n < 0:  # the piece needs a larger buffer
            buffer = (ctypes.c_char * -n)()
            n = llama_cpp.llama_token_to_piece(self.vocab, token, buffer, -n, 0, False)
            return bytes(buffer[:n])
        return self._piece.raw[:n]

    def _text(self, slot: _Slot) -> bytes:
        out = b"".join(slot.pieces)
        # llama-cpp-python's detokenize drops the space a leading BOS piece brings
        if slot.completion and slot.completion[0] == self.bos and out[:1] == b" ":
            return out[1:]
        return out

    def _advance(self, slot: _Slot, token: int) -> str | None:
        """Take a sampled token with create_completion's rules; the text once finished."""
        import llama_cpp

        if llama_cpp.llama_vocab_is_eog(self.vocab, token):
            return self._text(slot).decode("utf-8", errors="ignore")
        slot.completion.append(token)
        slot.pieces.append(self._piece_of(token))
        text = self._text(slot)
        for k, char in enumerate(text[-3:]):  # an incomplete UTF-8 character: keep going
            k = 3 - k
            for num, pattern in ((2, 192), (3, 224), (4, 240)):
                if num > k and pattern & char == pattern:
                    slot.multibyte_fix = num - k
        slot.next_token = token
        slot.pos += 1
        if slot.multibyte_fix > 0:
            slot.multibyte_fix -= 1
            if slot.pos < self.engine.n_ctx:
                return None
        hits = [s for s in slot.stop if s in text]
        if hits:
            return text[: text.index(hits[0])].decode("utf-8", errors="ignore")
        if len(slot.completion) >= slot.max_tokens or slot.pos >= self.engine.n_ctx:
            return text.decode("utf-8", errors="ignore")
        return None

    # ---- choose ------------------------------------------------------------------------------

    def _score(self, job: ScoreJob) -> tuple[dict[str, float], Usage]:
        """Every option's log-likelihood, the options of a chunk side by side in each decode.

        Each decode feeds one token per option (the prompt's last token, then the option's
        tokens in turn), so every sequence is evaluated one token at a time exactly as the
        one-at-a-time path scores it: several tokens of one sequence in one decode would take
        llama.cpp's multi-row attention kernels, whose low bits differ."""
        import llama_cpp
        import numpy as np

        start = time.perf_counter()
        prompt = job.tokens
        scores = {option: 0.0 for option in job.options}
        todo = [(o, t) for o, t in zip(job.options, job.option_tokens, strict=True) if t]
        evaluated = requested = 0
        seqs = list(self._free)  # admission leaves at least one free
        while todo:
            width = min(len(seqs), self.rows_per_decode)
            chunk, todo = todo[:width], todo[width:]
            used = seqs[: len(chunk)]
            totals = [0.0] * len(chunk)
            try:
                evaluated += self._load_prompt(prompt[:-1], used)
                for j in range(max(len(tokens) for _, tokens in chunk)):
                    live = [k for k, (_, tokens) in enumerate(chunk) if j < len(tokens)]
                    rows = [
                        (
                            prompt[-1] if j == 0 else chunk[k][1][j - 1],
                            len(prompt) - 1 + j,
                            used[k],
                            True,
                        )
                        for k in live
                    ]
                    self._decode(rows)
                    for row, k in enumerate(live):
                        pointer = llama_cpp.llama_get_logits_ith(self.ctx.ctx, row)
                        logits = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))
                        logits = logits.astype(np.float64)
                        totals[k] += float(log_softmax(logits)[chunk[k][1][j]])
                    evaluated += len(rows)
            finally:
                for seq in used:
                    llama_cpp.llama_memory_seq_rm(self.memory, seq, -1, -1)
            for (option, tokens), total in zip(chunk, totals, strict=True):
                scores[option] = total
                requested += len(prompt) + len(tokens)
        usage = Usage(
            prompt_tokens=requested,
            prompt_tokens_evaluated=evaluated,
            latency_s=time.perf_counter() - start,
        )
        return scores, usage

    # ---- shutdown ----------------------------------------------------------------------------

    def close(self, timeout: float = 10) -> bool:
        """Free llama.cpp's batch and context; False (leaking them) while a decode runs."""
        import llama_cpp

        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if not self.running.acquire(timeout=timeout):
            return False
        try:
            if self.batch is not None:
                llama_cpp.llama_batch_free(self.batch)
                self.batch = None
            self.prefix.clear()
            self.ctx.close()
        finally:
            self.running.release()
        return True


class _PrefillSequence:
    """Sequence 0 of the batch context, seen as the `Llama` a `BlockPrefixCache` works on
    (`ctx`, `input_ids`, `n_tokens`, `reset`, `eval`): prompts are evaluated there in the same
    fixed blocks as on the single-sequence context, and only sequence 0 is ever touched."""

    def __init__(self, decoder: BatchDecoder):
        import numpy as np

        self.decoder = decoder
        self.ctx = decoder.ctx.ctx
        self.input_ids = np.zeros(decoder.engine.n_ctx, dtype=np.intc)
        self.n_tokens = 0
        self._requires_eval = False

    def reset(self) -> None:
        self.n_tokens = 0

    def eval(self, tokens: list[int]) -> None:
        import llama_cpp

        if self.n_tokens + len(tokens) > len(self.input_ids):
            raise LLMCallError("the prompt does not fit the context")
        llama_cpp.llama_memory_seq_rm(self.decoder.memory, 0, self.n_tokens, -1)
        for start in range(0, len(tokens), BATCH_TOKENS):
            chunk = tokens[start : start + BATCH_TOKENS]
            pos = self.n_tokens
            self.decoder._decode(
                [(t, pos + i, 0, i == len(chunk) - 1) for i, t in enumerate(chunk)]
            )
            self.input_ids[pos : pos + len(chunk)] = chunk
            self.n_tokens += len(chunk)
        self._requires_eval = False
