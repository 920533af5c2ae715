"""Does a token's logits row in a batched decode depend on its companions? (issue 23)

For a model whose weights llama.cpp repacks for a row-grouped kernel (Gemma 3, Qwen2.5 Q4_K),
the batch decoder serves requests one at a time, because a batched row's low bits depend on the
decode it sits in. This probe asks whether padding every decode to a multiple of the kernel's
4-row group would fix that: 12 tokens, each decoded alone (one sequence each, position 0), then
the first n of them together for n = 2, 3, 4, 5, 8, 12, and one token moved between rows and
decode sizes. Prints which rows equal their alone-decoded logits byte for byte.

    .venv/bin/python scripts/probe_batch_rows.py local:gemma3-270m
"""

from __future__ import annotations

import sys

import numpy as np


def main(model: str) -> None:
    import llama_cpp

    from gtsteer.llm.backends.batch_decode import BatchDecoder
    from gtsteer.llm.backends.local import LocalBackend
    from gtsteer.llm.backends.prefix_cache import BlockPrefixCache

    engine = LocalBackend(model, threads=1, batch=1).engine()
    decoder = BatchDecoder(engine, 12, BlockPrefixCache(1 << 28))
    vocab = decoder.n_vocab
    print(f"{model}: the decoder's own probe allows {decoder.rows_per_decode} rows per decode")

    def decode(tokens: list[int]) -> list[np.ndarray]:
        llama_cpp.llama_memory_clear(decoder.memory, True)
        decoder._decode([(t, 0, 1 + i, True) for i, t in enumerate(tokens)])
        rows = [llama_cpp.llama_get_logits_ith(decoder.ctx.ctx, i) for i in range(len(tokens))]
        return [np.ctypeslib.as_array(r, shape=(vocab,)).copy() for r in rows]

    tokens = [int(t) for t in np.random.default_rng(0).integers(100, vocab - 100, 12)]
    alone = {t: decode([t])[0] for t in tokens}
    for n in (2, 3, 4, 5, 8, 12):
        same = [bool((row == alone[t]).all()) for row, t in zip(decode(tokens[:n]), tokens, strict=False)]
        print(f"{n:2d} rows together, each equal to alone: {same}")
    four = decode(tokens[:4])
    other_four = decode([tokens[0], *tokens[5:8]])
    eight = decode(tokens[4:8] + tokens[:4])
    print("row 0 with other companions:", bool((four[0] == other_four[0]).all()))
    print("rows 0-3 of a 4-row decode vs rows 4-7 of an 8-row one:",
          [bool((a == b).all()) for a, b in zip(four, eight[4:], strict=True)])
    decoder.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "local:gemma3-270m")
