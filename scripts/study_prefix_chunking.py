"""How many prompt tokens the local backend evaluates for the README job, under today's fixed
64-token blocks and under blocks that also end at every line end (a rule that, like today's,
depends only on the prompt, so outputs stay independent of what ran before).

Records the requests of `gtsteer solve configs/schedule_meeting_dow.yaml --games 1` with the
`fake` model answering but prompts rendered as for a chat model (so the fake's shorter texts
stand in for the real messages), tokenizes them with the embedded SmolLM2's template, then:
- replays them in order through `BlockPrefixCache` with a counting stand-in for llama.cpp (the
  policy as built: which block states are saved and restored);
- computes the ideal for both rules (every boundary state kept): a prompt evaluates from the
  longest boundary prefix any earlier prompt shares.
Prints the three counts; writes nothing into docs (a study for issue 23's notes).

    .venv/bin/python scripts/study_prefix_chunking.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "schedule_meeting_dow.yaml"


def record_requests(out: Path) -> list[Any]:
    """The README job's generation and `choose` requests, in the order they were sent."""
    from gtsteer.llm.backends import fake
    from gtsteer.runs.solve import solve_config

    seen: list[Any] = []
    complete, score = fake.FakeBackend.complete, fake.FakeBackend.score_options

    async def recording_complete(self, request, json_schema=None):
        seen.append(request)
        return await complete(self, request, json_schema)

    async def recording_score(self, request, options):
        seen.append(request)
        return await score(self, request, options)

    fake.FakeBackend.chat = True  # type: ignore[attr-defined]  # prompts as a chat model reads them
    fake.FakeBackend.complete = recording_complete  # type: ignore[method-assign]
    fake.FakeBackend.score_options = recording_score  # type: ignore[method-assign]
    solve_config(CONFIG, llm="fake", out_dir=out, progress=False)
    return seen


class CountingContext:
    """What `BlockPrefixCache.load` needs of a llama.cpp context, counting evaluated tokens."""

    def __init__(self) -> None:
        self.input_ids = np.zeros(1 << 16, dtype=np.intc)
        self.n_tokens = 0
        self.evaluated = 0

    def reset(self) -> None:
        self.n_tokens = 0

    def eval(self, tokens: list[int]) -> None:
        self.evaluated += len(tokens)
        self.n_tokens += len(tokens)


def policy_count(prompts: list[list[int]]) -> int:
    from gtsteer.llm.backends.prefix_cache import BlockPrefixCache

    class Counting(BlockPrefixCache):
        def _restore(self, llm, state, tokens, key):
            self._states.move_to_end(key)
            llm.n_tokens = len(tokens)

        def _save(self, llm, key):
            self._states[key] = 1

    cache, ctx = Counting(1 << 40), CountingContext()
    for p in prompts:
        cache.load(ctx, p)
    return ctx.evaluated


def ideal_count(prompts: list[list[int]], ends) -> int:
    seen: set[tuple[int, ...]] = set()
    evaluated = 0
    for p in prompts:
        whole = tuple(p)
        if whole in seen:  # the exact prompt again: its tail state
            continue
        bounds = [0, *ends(p)]
        best = max(b for b in bounds if whole[:b] in seen or b == 0)
        evaluated += len(p) - best
        seen.update(whole[:b] for b in bounds)
        seen.add(whole)
    return evaluated


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from gtsteer.llm.backends.local import LocalBackend
    from gtsteer.llm.backends.prefix_cache import BLOCK

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["GTSTEER_CACHE_DIR"] = tmp
        requests = record_requests(Path(tmp) / "run")
    engine = LocalBackend("local:smollm2-135m", threads=1, batch=1).engine()
    newline = {t for t in range(engine.llm.n_vocab()) if engine.llm.detokenize([t]).endswith(b"\n")}
    prompts = [engine.tokens(engine.render(r))[:-1] for r in requests]  # the last token decodes

    def fixed(p: list[int]) -> list[int]:
        return list(range(BLOCK, len(p) + 1, BLOCK))

    def lines(p: list[int]) -> list[int]:
        out, start = [], 0
        for i, t in enumerate(p):
            if i + 1 - start == BLOCK or t in newline:
                out.append(i + 1)
                start = i + 1
        return out

    total = sum(len(p) for p in prompts)
    print(f"{len(prompts)} requests, {total} prompt tokens requested")
    print(f"fixed {BLOCK}-token blocks, the cache's policy: {policy_count(prompts)} evaluated")
    print(f"fixed {BLOCK}-token blocks, every state kept: {ideal_count(prompts, fixed)} evaluated")
    print(f"blocks also ending at line ends, every state kept: {ideal_count(prompts, lines)}")


if __name__ == "__main__":
    sys.exit(main())
