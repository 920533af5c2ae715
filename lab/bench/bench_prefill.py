"""Prompt evaluation (prefill) on the local backend: would bigger decodes, or many sequences'
prompts in one decode, evaluate prompts faster on this machine?

The README main job and the long-prefix case of the batched-decoding benchmark (removed with
the batch engine; docs/LOCAL.md, "Batched decoding: tried, measured, removed") spend most of
their time evaluating prompts, one 64-token block per `llama_decode` (gtsteer/llm/backends/
local/prefix_cache.py). Batching generation helps them only if prompt evaluation gets faster
too, and that is a question about llama.cpp's kernels on this CPU, answered here by measurement:

1. 512 prompt tokens evaluated in decodes of 16, 64, 128, 256 and 512 tokens, through gtsteer's
   engine, beside llama.cpp's own `llama-bench -p 512 -n 0 -b 512 -ub C` (same GGUF, threads).
2. llama.cpp's `llama-batched-bench -npp 64 -ntg 1 -npl 1,2,4,8` without `-pps`: B separate
   64-token prompts in one batch, its prompt tokens/s (`speed_pp`), the most that evaluating
   several requests' blocks in one decode could buy.

Run alone on the machine: `python -m lab prefill` (builds llama.cpp's two benchmark
tools on first use, `python -m lab llama-tools`).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from gtsteer.llm.backends.local import LocalBackend, close_engines, parse_local_model
from lab.bench import benchdoc, llama_tools

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab prefill"

START, END = benchdoc.markers("bench_prefill")
N_PROMPT = 512
CHUNKS = (16, 64, 128, 256, 512)
SEQS = (1, 2, 4, 8)
#: The block gtsteer evaluates prompts in (local.BLOCK); the ratios are against it.
BLOCK = 64


def gtsteer_prefill(model: str, threads: int, repeats: int = 2) -> dict[int, float]:
    """Prompt tokens/s through gtsteer's engine per decode size (best of `repeats`), each from
    an empty context, the last token's logits computed as a prompt's are."""
    import llama_cpp

    backend = LocalBackend(model, threads=threads)
    llm = backend.engine().llm
    memory = llama_cpp.llama_get_memory(llm._ctx.ctx)
    tokens = [(llm.token_bos() + 7 + 13 * i) % llm.n_vocab() for i in range(N_PROMPT)]
    speeds = {}
    for chunk in CHUNKS:
        best = float("inf")
        for _ in range(repeats):
            llm.reset()
            llama_cpp.llama_memory_clear(memory, True)
            start = time.perf_counter()
            for pos in range(0, N_PROMPT, chunk):
                llm.eval(tokens[pos : pos + chunk])
            best = min(best, time.perf_counter() - start)
        speeds[chunk] = N_PROMPT / best
    close_engines()
    return speeds


def llama_prefill(bins: dict[str, Path], path: Path, threads: int) -> dict[int, float]:
    """llama-bench's prompt tokens/s per micro-batch size (`-ub`), 512 tokens."""
    cmd = [str(bins["llama-bench"]), "-m", str(path), "-t", str(threads), "-p", str(N_PROMPT),
           "-n", "0", "-b", str(N_PROMPT), "-ub", ",".join(map(str, CHUNKS)), "-r", "3",
           "-fa", llama_tools.FLASH_ATTN, "-o", "json"]  # fmt: skip
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {int(r["n_ubatch"]): float(r["avg_ts"]) for r in json.loads(out)}


def cross_sequence(bins: dict[str, Path], path: Path, threads: int) -> dict[int, float]:
    """llama-batched-bench's prompt tokens/s with B separate 64-token prompts in one batch."""
    return llama_tools.batched_bench(bins, path, threads, BLOCK, 1, list(SEQS),
                                     shared_prompt=False, speed="speed_pp")  # fmt: skip


#: Below this gain, evaluating several requests' prompt blocks in one decode is not worth its cost
#: (sequences of unequal lengths split llama.cpp's micro-batches, and answers would then depend on
#: the batch's neighbours).
WORTH = 1.3


def reading(best: float, cross: float) -> str:
    """What the two gains say, in the words the numbers allow."""
    head = (f"Reading it: no decode size evaluates prompts more than {best:.2f}x faster than the "
            f"{BLOCK}-token block (llama-bench), and several sequences' prompts in one batch go "
            f"at most {cross:.2f}x faster than one (llama-batched-bench).")  # fmt: skip
    if max(best, cross) < WORTH:
        return head + (" Prompt evaluation is compute-bound already at one block on this "
                       "machine, so batching prefill across requests cannot make the "
                       "prefill-bound jobs (the README main job, 16 requests sharing a long "
                       "prefix) much faster; batching speeds up only their "
                       "generation.")  # fmt: skip
    return head + (f" That is at least {WORTH}x: evaluating several requests' prompt blocks in "
                   "one decode would pay here.")


def render(results: list[dict], code: str, flash_attn: str = llama_tools.FLASH_ATTN) -> str:
    lines = [
        "## Local model: prompt evaluation by decode size",
        "",
        (f"`python -m lab prefill`; {benchdoc.machine_line(commit=code)}. Reference in "
        "the same run: llama.cpp's `llama-bench -p 512 -n 0 -b 512 -ub C` and "
        f"`llama-batched-bench -npp {BLOCK} -ntg 1 -npl {','.join(map(str, SEQS))}` (no `-pps`), "
        "built from the llama.cpp sources vendored in the llama-cpp-python 0.3.36 sdist, same "
        f"GGUF and threads, flash attention `{flash_attn}` (gtsteer's contexts run without it)."),
        "",
        (f"512 prompt tokens in decodes of C tokens (prompt tokens/s; gtsteer evaluates prompts "
        f"in {BLOCK}-token blocks):"),
        "",
        ("| model | threads | C | gtsteer tokens/s | llama-bench tokens/s | ratio | "
        f"llama-bench vs C = {BLOCK} |"),
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        base = r["llama"].get(BLOCK, float("nan"))
        for chunk in CHUNKS:
            ours, ref = r["gtsteer"][chunk], r["llama"].get(chunk, float("nan"))
            lines.append(f"| {r['model']} | {r['threads']} | {chunk} | {ours:.0f} | {ref:.0f} | "
                         f"{ours / ref:.2f}x | {ref / base:.2f}x |")  # fmt: skip
    lines += [
        "",
        (f"B separate {BLOCK}-token prompts in one batch (llama-batched-bench, prompt tokens/s, "
        "and the gain over one prompt at a time):"),
        "",
        "| model | threads | " + " | ".join(f"B = {b}" for b in SEQS) + " |",
        "|---|---:|" + "---:|" * len(SEQS),
    ]
    for r in results:
        one = r["cross"].get(1, float("nan"))
        cells = [f"{r['cross'].get(b, float('nan')):.0f}"
                 f" ({r['cross'].get(b, float('nan')) / one:.2f}x)" for b in SEQS]
        lines.append(f"| {r['model']} | {r['threads']} | " + " | ".join(cells) + " |")
    best = max(max(r["llama"].values()) / r["llama"][BLOCK] for r in results)
    cross = max(max(r["cross"].values()) / r["cross"][1] for r in results)
    lines += ["", reading(best, cross)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.split("\n\n")[0])
    parser.add_argument("--models", default="smollm2-135m,qwen2.5-coder-0.5b")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    code = benchdoc.commit(["gtsteer", "scripts"])
    bins = llama_tools.build(("llama-bench", "llama-batched-bench"))
    results = []
    for model in (m.strip() for m in args.models.split(",") if m.strip()):
        path = parse_local_model(f"local:{model}").resolve_path()
        for threads in (int(t) for t in args.threads.split(",")):
            results.append({"model": model, "threads": threads,
                            "gtsteer": gtsteer_prefill(f"local:{model}", threads),
                            "llama": llama_prefill(bins, path, threads),
                            "cross": cross_sequence(bins, path, threads)})  # fmt: skip
            print(json.dumps(results[-1]), flush=True)
    body = render(results, code)
    print(body)
    if not args.no_write:
        benchdoc.write_section(benchdoc.DOC, START, END, benchdoc.wrap(START, END, body))


if __name__ == "__main__":
    main()
