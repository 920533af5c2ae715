"""Faster grammar-constrained sampling for llama-cpp-python.

llama-cpp-python puts the grammar sampler first in its chain, so every generated token is
checked against the grammar for the whole vocabulary (262k tokens for Gemma 3): about five
times slower than unconstrained generation. llama.cpp's own `common_sampler` avoids that, and
`GrammarCheckedSampler` does the same:

1. sample a token from the normal chain (penalties, top-k, top-p, min-p, temperature,
   distribution) *without* the grammar;
2. apply the grammar to a one-element candidate array holding only that token; if its logit
   stays finite the grammar accepts it, and the token is accepted into grammar and chain;
3. only if it was rejected, apply the grammar to the chain's top-k candidates by logit (k = 40
   by default), drop those it rejects and sample from the rest with the normal chain;
4. only if the grammar rejected all of those too, apply it to the full candidate array, then
   the chain, and sample again (the grammar always sees at least k candidates, never an empty
   set).

Every emitted token has passed the grammar, so the output is valid by construction; the chain's
random generator is seeded as before, so a seed still fixes the text. At temperature 0 the
result equals the grammar-first chain exactly (the argmax of the allowed tokens is found in
step 2, 3 or 4). When sampling, step 3 draws from the allowed tokens among the top k by raw
logit rather than the top k of the allowed tokens; those sets differ only in tokens below the
k-th most likely, which min-p/top-p sampling almost never reaches.

`FastGrammarLlama` is `llama_cpp.Llama` with this sampler swapped in when a grammar is given;
without a grammar it builds llama-cpp-python's own chain unchanged. It relies on the private
`Llama._init_sampler` hook (llama-cpp-python 0.3.x), which `Llama.generate` calls once per
completion and whose result only needs a `sample(ctx, idx)` method.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import Llama, LlamaGrammar
from llama_cpp._internals import LlamaSampler

# llama_token_data {int32 id; float logit; float p;} as a numpy record, so a whole candidate
# array is filled with two vectorised copies instead of 262k Python-level assignments.
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)
if _TOKEN_DATA.itemsize != ctypes.sizeof(llama_cpp.llama_token_data):  # pragma: no cover
    raise RuntimeError("llama_token_data layout changed; the fast grammar sampler cannot be used")


def _candidates(buffer: np.ndarray) -> llama_cpp.llama_token_data_array:
    return llama_cpp.llama_token_data_array(
        data=ctypes.cast(buffer.ctypes.data, llama_cpp.llama_token_data_p),
        size=len(buffer),
        selected=-1,
        sorted=False,
    )


class GrammarCheckedSampler:
    """Chain sample first, grammar check of that one token, full grammar only on rejection."""

    def __init__(
        self, chain: LlamaSampler, model: Any, grammar: LlamaGrammar, n_vocab: int, top_k: int = 40
    ):
        self.chain = chain
        self.grammar = LlamaSampler()  # a one-sampler chain owns and frees the grammar sampler
        self.grammar.add_grammar(model, grammar)
        self.top_k = max(1, min(top_k if top_k > 0 else 40, n_vocab))
        self.prefilter = LlamaSampler()
        self.prefilter.add_top_k(self.top_k)
        self.n_vocab = n_vocab
        self._ids = np.arange(n_vocab, dtype=np.int32)
        self._full = np.zeros(n_vocab, dtype=_TOKEN_DATA)
        self._top = np.zeros(self.top_k, dtype=_TOKEN_DATA)
        self._one = np.zeros(1, dtype=_TOKEN_DATA)
        self.fast_tokens = 0  # accepted on the first, single-token grammar check
        self.top_k_tokens = 0  # drawn from the grammar-allowed tokens among the top k
        self.resampled_tokens = 0  # needed the grammar over the whole vocabulary

    def _full_array(self, ctx: Any, idx: int) -> llama_cpp.llama_token_data_array:
        pointer = llama_cpp.llama_get_logits_ith(ctx.ctx, idx)
        if not pointer:
            raise RuntimeError(f"llama.cpp returned no logits for position {idx}")
        self._full["id"] = self._ids
        self._full["logit"] = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))
        self._full["p"] = 0.0
        return _candidates(self._full)  # fresh struct: samplers may move `data`/`size`

    @staticmethod
    def _selected(cur: llama_cpp.llama_token_data_array) -> int:
        if not 0 <= cur.selected < cur.size:
            raise RuntimeError("the sampler chain selected no token")
        return int(cur.data[cur.selected].id)

    def _allowed(self, token: int) -> bool:
        self._one[0] = (token, 0.0, 0.0)
        one = _candidates(self._one)
        llama_cpp.llama_sampler_apply(self.grammar.sampler, ctypes.byref(one))
        return one.size == 1 and not math.isinf(one.data[0].logit)

    def _sample_top_k(self, ctx: Any, idx: int) -> int | None:
        """Sample among the grammar-allowed tokens of the top k by logit; None if there are none."""
        cur = self._full_array(ctx, idx)
        llama_cpp.llama_sampler_apply(self.prefilter.sampler, ctypes.byref(cur))
        n = min(int(cur.size), self.top_k)
        # llama_cpp annotates `data` as an Array; at run time it is a POINTER, with `.contents`.
        first = cur.data.contents  # type: ignore[attr-defined]
        ctypes.memmove(self._top.ctypes.data, ctypes.addressof(first), n * _TOKEN_DATA.itemsize)
        top = self._top[:n]
        checked = _candidates(top)
        llama_cpp.llama_sampler_apply(self.grammar.sampler, ctypes.byref(checked))
        # the grammar marks rejected tokens -inf in place; keep the rest, in the same order
        allowed = np.ascontiguousarray(top[np.isfinite(top["logit"])])
        if not len(allowed):
            return None
        allowed["p"] = 0.0
        cur = _candidates(allowed)
        llama_cpp.llama_sampler_apply(self.chain.sampler, ctypes.byref(cur))
        return self._selected(cur)

    def sample(self, ctx: Any, idx: int = -1) -> int:
        cur = self._full_array(ctx, idx)
        llama_cpp.llama_sampler_apply(self.chain.sampler, ctypes.byref(cur))
        token = self._selected(cur)
        if self._allowed(token):
            self.fast_tokens += 1
        elif (allowed := self._sample_top_k(ctx, idx)) is not None:
            self.top_k_tokens += 1
            token = allowed
        else:
            self.resampled_tokens += 1
            cur = self._full_array(ctx, idx)
            llama_cpp.llama_sampler_apply(self.grammar.sampler, ctypes.byref(cur))
            llama_cpp.llama_sampler_apply(self.chain.sampler, ctypes.byref(cur))
            token = self._selected(cur)
        self.grammar.accept(token)
        self.chain.accept(token)
        return token

    def close(self) -> None:
        self.prefilter.close()
        self.grammar.close()
        self.chain.close()


class FastGrammarLlama(Llama):
    """`Llama` whose grammar-constrained sampling checks the grammar on the sampled token first."""

    def _init_sampler(self, *args: Any, grammar: LlamaGrammar | None = None, **kwargs: Any) -> Any:
        chain = super()._init_sampler(*args, **{**kwargs, "grammar": None})
        if grammar is None:
            return chain
        top_k = int(kwargs.get("top_k", 40))
        return GrammarCheckedSampler(chain, self._model, grammar, self._n_vocab, top_k)
