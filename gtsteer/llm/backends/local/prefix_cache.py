"""A deterministic prompt-prefix cache for one llama.cpp context.

Same inputs must give the same output whatever ran before, so a prompt is always evaluated the
same way: in fixed-size token blocks (`BLOCK` tokens, one `llama_decode` each, counted from
position 0), whether or not a cache is used. After a full block the context's KV state is the
same bytes whichever request computed it, so it can be saved, keyed by a hash of every token up
to the block's end, and restored later in place of evaluating those blocks again; the blocks
after it are then evaluated exactly as a fresh evaluation would. Tests compare logits and outputs
with the cache on and off.

States are saved with llama.cpp's sequence-level state API (KV cells of sequence 0 only, no
logits buffer) in a bounded LRU held in memory. A state at block k holds all k blocks, so saving
every boundary would cost memory quadratic in the prompt length. States are saved at:
- the prompt's last full block (what an append-only prompt, e.g. a Werewolf bot's, continues
  from);
- the last block before the point where the prompt leaves the longest prefix it shares with a
  recent prompt (where further siblings, the same prefix with another ending, will branch off);
- checkpoints that thin out with depth (blocks 1, 2, 3, 4, 6, 8, 12, 16, 24, ...: two per
  doubling), so an unforeseen divergence re-evaluates at most about a third of the shared part;
- the exact prompt when it ends inside a block (a "tail" state, valid only for exactly these
  tokens, since a longer prompt evaluates that partial block as part of a full one): the same
  prompt with another seed, or `choose` scoring its next option, evaluates nothing.

llama-cpp-python's `LlamaCache` would not do: it saves whole-context states at the end of each
prompt and restores them into a context whose remaining tokens are then evaluated in a different
batch split, which changes the logits' low bits.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gtsteer.llm.errors import ModelConfigError

BLOCK = 64  # tokens per llama_decode; must not exceed the context's n_batch/n_ubatch (512)
DEFAULT_CACHE_MB = 2048  # of a 24 GiB machine: ample room left for the solver and the models
RECENT_PROMPTS = 64  # prompts remembered (as tokens) to find where new ones branch off
CACHE_MB_ENV = "GTSTEER_LOCAL_PREFIX_CACHE_MB"
_SEQ = 0  # the one llama.cpp sequence gtsteer uses


def cache_bytes_from_env() -> int:
    raw = os.environ.get(CACHE_MB_ENV, "").strip()
    if not raw:
        return DEFAULT_CACHE_MB * 2**20
    try:
        mb = float(raw)
    except ValueError:
        mb = -1.0
    if mb < 0:
        raise ModelConfigError(
            f"{CACHE_MB_ENV}={raw!r} is not a size in MB; give e.g. 1024, or 0 to turn prefix "
            "reuse off."
        )
    return int(mb * 2**20)


def is_checkpoint(k: int) -> bool:
    """Blocks 1..3, then two per doubling: 4, 6, 8, 12, 16, 24, 32, 48, ..."""
    if k < 4:
        return k >= 1
    step = 1 << (k.bit_length() - 2)
    return k % step == 0


def block_keys(tokens: Sequence[int], block: int = BLOCK) -> list[bytes]:
    """keys[k-1] identifies tokens[: k * block] (a hash chain, so O(n) for all k)."""
    keys = []
    digest = b"gtsteer-prefix-v1"
    array = np.asarray(tokens, dtype=np.int32)
    for k in range(1, len(tokens) // block + 1):
        chunk = array[(k - 1) * block : k * block].tobytes()
        digest = hashlib.blake2b(digest + chunk, digest_size=16).digest()
        keys.append(digest)
    return keys


def tail_key(tokens: Sequence[int], keys: list[bytes], block: int = BLOCK) -> bytes | None:
    """Key of the whole of `tokens` when they end inside a block (None at a block boundary,
    where the last block key already names them). Valid only for exactly these tokens: a longer
    prompt evaluates that partial block as part of a full one."""
    rest = len(tokens) % block
    if not rest:
        return None
    chunk = np.asarray(tokens[-rest:], dtype=np.int32).tobytes()
    head = keys[-1] if keys else b"gtsteer-prefix-v1"
    return hashlib.blake2b(head + b"tail" + chunk, digest_size=16).digest()


class NovelTokens:
    """The token sequences an engine has held in its KV cache, as a trie, to count the tokens
    of a new sequence that no earlier one shares as a prefix.

    A token's KV entry depends on every token before it, so any way of serving the same calls
    must evaluate each node of this trie at least once: the sum of `add` over a run is the
    fewest tokens that could give its answers, whatever the caching or batching. That floor is
    a measurement (`solve --profile`, `python -m lab profile`), so it is opt-in
    (`counting_tokens`): the trie keeps every distinct token (one dict each), which a long run
    should not pay for."""

    def __init__(self) -> None:
        self._root: dict[int, dict] = {}
        self.nodes = 0

    def add(self, tokens: Sequence[int]) -> int:
        """Insert `tokens`; return how many of them are new nodes (always its last ones: once
        a sequence leaves the trie, every token after is new)."""
        node, new = self._root, 0
        for token in tokens:
            child = node.get(token)
            if child is None:
                child = node[token] = {}
                new += 1
            node = child
        self.nodes += new
        return new


@dataclass
class PrefixCacheStats:
    requests: int = 0
    tokens_requested: int = 0  # prompt tokens the requests asked to have evaluated
    tokens_evaluated: int = 0  # of those, tokens llama.cpp really evaluated
    restores: int = 0
    saves: int = 0
    evictions: int = 0
    peak_bytes: int = 0


class BlockPrefixCache:
    """Bounded LRU of KV states at block boundaries; `max_bytes == 0` turns reuse off."""

    def __init__(self, max_bytes: int, block: int = BLOCK):
        self.max_bytes = max_bytes
        self.block = block
        self._states: OrderedDict[bytes, ctypes.Array] = OrderedDict()
        self._recent: deque[np.ndarray] = deque(maxlen=RECENT_PROMPTS)
        self.bytes = 0
        self.stats = PrefixCacheStats()
        #: Every block and tail key loaded so far, when counting the floor (`count_floor`).
        self._seen: set[bytes] | None = None
        #: What the last `load` would have evaluated with an unbounded cache saving every block
        #: boundary (None unless counting).
        self.floor_last: int | None = None

    def count_floor(self, on: bool) -> None:
        """From now on (afresh), or no longer, work out for each load what an unbounded cache
        that saved every block and every exact prompt would have evaluated: the fewest tokens
        this load-then-last-token scheme evaluates for the same answers bit for bit (the same
        block splits). Memory grows with the distinct blocks: a measurement only."""
        self._seen = set() if on else None
        self.floor_last = None

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def __len__(self) -> int:
        return len(self._states)

    def clear(self) -> None:
        self._states.clear()
        self._recent.clear()
        self.bytes = 0

    def load(self, llm: Any, tokens: Sequence[int]) -> int:
        """Leave `llm` holding exactly `tokens` in its KV cache; return the tokens evaluated.

        Restores the longest cached prefix, then evaluates the rest in the same blocks a fresh
        evaluation uses. Logits of the last token are not needed by callers (they evaluate the
        prompt's final token themselves), so a fully cached `tokens` evaluates nothing."""
        tokens = list(tokens)
        if self._seen is not None:
            self.floor_last = self._unbounded(tokens, self._seen)
        if not self.enabled:
            llm.reset()
            for pos in range(0, len(tokens), self.block):
                llm.eval(tokens[pos : pos + self.block])
            return self._count(len(tokens), len(tokens))
        keys = block_keys(tokens, self.block)
        tail = tail_key(tokens, keys, self.block)
        if tail is not None and (state := self._states.get(tail)) is not None:
            self._restore(llm, state, tokens, tail)  # the same tokens again: nothing to evaluate
            return self._count(len(tokens), 0)
        start = 0
        for k in range(len(keys), 0, -1):  # longest cached prefix first
            state = self._states.get(keys[k - 1])
            if state is not None:
                self._restore(llm, state, tokens[: k * self.block], keys[k - 1])
                start = k * self.block
                break
        if start == 0:
            llm.reset()
        branch = self._branch_block(tokens)
        for pos in range(start, len(tokens), self.block):
            chunk = tokens[pos : pos + self.block]
            llm.eval(chunk)
            k = (pos + len(chunk)) // self.block
            if len(chunk) == self.block and (k in (len(keys), branch) or is_checkpoint(k)):
                self._save(llm, keys[k - 1])
        if tail is not None:
            self._save(llm, tail)
        self._recent.append(np.asarray(tokens, dtype=np.int32))
        return self._count(len(tokens), len(tokens) - start)

    def _unbounded(self, tokens: list[int], seen: set[bytes]) -> int:
        """Tokens an unbounded cache would evaluate for `tokens`: none if this exact prompt was
        loaded before (its tail state), else all after its longest loaded block prefix."""
        keys = block_keys(tokens, self.block)
        tail = tail_key(tokens, keys, self.block)
        if tail is not None and tail in seen:
            return 0
        known = 0
        while known < len(keys) and keys[known] in seen:
            known += 1
        seen.update(keys)
        if tail is not None:
            seen.add(tail)
        return len(tokens) - known * self.block

    def _branch_block(self, tokens: list[int]) -> int:
        """The last block boundary before `tokens` leaves the longest prefix it shares with a
        recent prompt: where its siblings (the same prefix, another ending) will branch off."""
        array = np.asarray(tokens, dtype=np.int32)
        shared = 0
        for other in self._recent:
            n = min(len(other), len(array))
            same = other[:n] == array[:n]
            shared = max(shared, n if same.all() else int(np.argmin(same)))
        return shared // self.block

    def _count(self, requested: int, evaluated: int) -> int:
        self.stats.requests += 1
        self.stats.tokens_requested += requested
        self.stats.tokens_evaluated += evaluated
        return evaluated

    def _restore(self, llm: Any, state: ctypes.Array, tokens: list[int], key: bytes) -> None:
        import llama_cpp

        self._states.move_to_end(key)
        self.stats.restores += 1

        read = llama_cpp.llama_state_seq_set_data(llm.ctx, state, len(state), _SEQ)
        if read != len(state):
            raise RuntimeError(f"llama.cpp restored {read} of {len(state)} state bytes")
        llm.input_ids[: len(tokens)] = tokens
        llm.n_tokens = len(tokens)
        llm._requires_eval = True  # no logits came with the state

    def _save(self, llm: Any, key: bytes) -> None:
        import llama_cpp

        if key in self._states:
            self._states.move_to_end(key)
            return
        size = llama_cpp.llama_state_seq_get_size(llm.ctx, _SEQ)
        if size > self.max_bytes:
            return
        state = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(llm.ctx, state, size, _SEQ)
        if written != size:
            raise RuntimeError(f"llama.cpp saved {written} of {size} state bytes")
        self._states[key] = state
        self.bytes += size
        self.stats.saves += 1
        while self.bytes > self.max_bytes:
            _, evicted = self._states.popitem(last=False)
            self.bytes -= len(evicted)
            self.stats.evictions += 1
        self.stats.peak_bytes = max(self.stats.peak_bytes, self.bytes)
