"""Why the served README job's payoffs differ from the in-process run's: the same GGUF, seeds and
temperature, call by call, one cause at a time (issue 25, item 4).

The requests are the README config's (`gtsteer/configs/schedule_meeting_dow.yaml`) instance 0, root
level: the proposer's message for each of its 8 instructions and both LLM samples (16 requests,
the seeds the game uses), then the reward's two `choose` questions on each of the 16 one-message
transcripts. Each message is asked in these ways (no cache anywhere):

- `local`: in-process, as `gtsteer solve --llm local` asks it (chat messages: the prompt as the
  user's turn and the assistant's turn opened with `Alice:`, continued; chat stop strings);
- `local-plain`: in-process, but the request the served path sends (the plain prompt as one
  user message, the base-model stop strings);
- `served`: llama-cpp-python's server through litellm, as `--llm openai/smollm2` sends it;
  it now carries the in-process sampling parameters (`LLAMA_CPP_SAMPLING`: `top_k 40, top_p
  0.95, min_p 0.05, repeat_penalty 1.0`);
- `served-default`: the same request posted to the server directly without them: the server's
  defaults (`repeat_penalty` 1.1), as gtsteer sent it before;
- `served-raw`: posted directly with them (checks that litellm sends what it should);
- `local-plain` and `served-raw` again at temperature 0 (greedy).

Printed: how many of the 16 texts are identical between pairs, prompt tokens per side (equal
counts: the server renders the GGUF's chat template as the in-process backend does), and how
often the served `choose` (first-token `top_logprobs`) picks what the in-process `choose` (full
option log-likelihood) picks. Run under the model lock (it loads the model twice):

    flock /tmp/gtsteer-model.lock .venv/bin/python -m lab compare-served [--threads 1]
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

from gtsteer.binding import generate_instances, make_game
from gtsteer.binding.prompts import Turn, message_stop, reward_prompt
from gtsteer.domains import load_spec
from gtsteer.domains.schedule_meeting import day_prompt
from gtsteer.llm import LLM
from gtsteer.llm.backends.litellm_backend import LLAMA_CPP_SAMPLING
from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT
from lab.bench.servers import LlamaServer

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab compare-served"

CONFIG = ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml"
ALIAS = "openai/smollm2"


def post_chat(base_url: str, prompt: str, *, seed: int, temperature: float, max_tokens: int,
              stop: list[str], sampling: bool) -> tuple[str, int]:
    """One chat completion posted straight to the server, with the in-process sampling or
    with the server's defaults (what gtsteer sent before it sent `LLAMA_CPP_SAMPLING`)."""
    body = {"model": "smollm2", "messages": [{"role": "user", "content": prompt}],
            "seed": seed, "temperature": temperature, "max_tokens": max_tokens, "stop": stop,
            **(LLAMA_CPP_SAMPLING if sampling else {})}
    req = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as reply:
        data = json.loads(reply.read())
    return data["choices"][0]["message"]["content"] or "", data["usage"]["prompt_tokens"]


def same(a: list[str], b: list[str]) -> str:
    return f"{sum(x.strip() == y.strip() for x, y in zip(a, b, strict=True))}/{len(a)}"


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    import os

    os.environ["GTSTEER_LOCAL_THREADS"] = str(args.threads)
    from gtsteer.llm.backends.local import default_model_path

    spec = load_spec(CONFIG)
    instance = generate_instances(spec, 1, 0)[0]
    local = LLM("local:smollm2-135m", use_cache=False)
    game = make_game(spec, instance, local, config=str(CONFIG))
    plays = [(i, o) for i in game.instructions(0) for o in range(spec.samples_at(0))]
    ref = [game.message_request([], 0, i, (o,)) for i, o in plays]  # chat form
    plain_stop = message_stop(spec, instance, 0, chat=False)
    # the plain prompt is the chat form's user turn (the served path sends just that)
    plain = [r.prompt[0].content for r in ref]  # type: ignore[union-attr]
    gen = spec.generation
    start = time.perf_counter()

    async def local_texts(prompts: list, stop: list[str] | None, temperature: float) -> list:
        return await asyncio.gather(*(local.generate(
            p, seed=r.seed, temperature=temperature, max_tokens=gen.max_tokens,
            stop=stop if stop is not None else r.stop) for p, r in zip(prompts, ref, strict=True)))

    rows: dict[str, list[str]] = {}
    tokens: dict[str, list[int]] = {}
    out = asyncio.run(local_texts([r.prompt for r in ref], None, gen.temperature))
    rows["local"] = [c.text for c in out]
    out = asyncio.run(local_texts(plain, plain_stop, gen.temperature))
    rows["local-plain"], tokens["local-plain"] = [c.text for c in out], [c.usage.prompt_tokens
                                                                         for c in out]
    rows["local-plain T=0"] = [c.text for c in asyncio.run(local_texts(plain, plain_stop, 0.0))]
    transcripts = [[Turn(speaker=0, instruction=i, text=t.strip())] for (i, _), t
                   in zip(plays, rows["local"], strict=True)]
    days = list(spec.params["days"])
    questions = [(reward_prompt(spec, instance, t), ["yes", "no"]) for t in transcripts]
    questions += [(reward_prompt(spec, instance, t, day_prompt(spec)), days) for t in transcripts]

    async def choices(llm: LLM) -> list:
        return await asyncio.gather(*(llm.choose(q, opts, seed=0) for q, opts in questions))

    local_choice = asyncio.run(choices(local))
    local_s = time.perf_counter() - start

    with tempfile.TemporaryDirectory() as tmp:
        server = LlamaServer(default_model_path(), Path(tmp) / "server.log", threads=args.threads)
        server.start()
        try:
            start = time.perf_counter()
            served = LLM(ALIAS, api_base=server.base_url, api_key="no-key", use_cache=False)
            served_game = make_game(spec, instance, served, config=str(CONFIG))
            sent = [served_game.message_request([], 0, i, (o,)) for i, o in plays]
            assert [s.prompt for s in sent] == plain and all(s.stop == plain_stop for s in sent)

            async def served_texts() -> list:
                return await asyncio.gather(*(served.generate(
                    s.prompt, seed=s.seed, temperature=s.temperature, max_tokens=s.max_tokens,
                    stop=s.stop) for s in sent))

            out = asyncio.run(served_texts())
            rows["served"] = [c.text for c in out]
            tokens["served"] = [c.usage.prompt_tokens for c in out]
            for temp, name, sampling in ((gen.temperature, "served-raw", True),
                                         (gen.temperature, "served-default", False),
                                         (0.0, "served-raw T=0", True)):
                raw = [post_chat(server.base_url, p, seed=r.seed, temperature=temp,
                                 max_tokens=gen.max_tokens, stop=plain_stop, sampling=sampling)
                       for p, r in zip(plain, ref, strict=True)]
                rows[name] = [t for t, _ in raw]
            served_choice = asyncio.run(choices(served))
            served_s = time.perf_counter() - start
        finally:
            server.kill()

    n = len(questions) // 2
    agree = [a.choice == b.choice for a, b in zip(local_choice, served_choice, strict=True)]
    report = {
        "requests": len(ref),
        "identical": {
            "local vs served (as gtsteer sends each)": same(rows["local"], rows["served"]),
            "local vs local-plain (prompt form + stops)": same(rows["local"], rows["local-plain"]),
            "local-plain vs served-default (server's default sampling, gtsteer before)":
                same(rows["local-plain"], rows["served-default"]),
            "local-plain vs served (gtsteer now: in-process sampling sent)":
                same(rows["local-plain"], rows["served"]),
            "served vs served-raw (litellm vs a direct post, same fields)":
                same(rows["served"], rows["served-raw"]),
            "local vs served-default (both paths before the sampling fix)":
                same(rows["local"], rows["served-default"]),
            "local-plain T=0 vs served-raw T=0 (greedy)":
                same(rows["local-plain T=0"], rows["served-raw T=0"]),
        },
        "prompt_tokens_equal": tokens["local-plain"] == tokens["served"],
        "prompt_tokens": {k: v[:4] for k, v in tokens.items()},
        "choose_agree": {"settled yes/no": f"{sum(agree[:n])}/{n}",
                         "which day": f"{sum(agree[n:])}/{n}"},
        "choose_methods": sorted({c.method for c in served_choice}),
        "day_choices": {side: dict(Counter(c.choice for c in picks[n:])) for side, picks
                        in (("local", local_choice), ("served", served_choice))},
        "served_modes": served.capabilities(),
        "wall_s": {"local": round(local_s, 1), "served": round(served_s, 1)},
        "examples": {k: v[:3] for k, v in rows.items()},
    }
    print(json.dumps(report, indent=1))
    if args.out is not None:
        args.out.write_text(json.dumps({**report, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
