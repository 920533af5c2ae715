"""Benchmark: one bot-only Werewolf game with the local model; writes its docs/BENCHMARKS.md section.

Measures wall time, LLM calls and tokens per game, and prefix stability: for each bot, the share
of each prompt identical to that bot's previous prompt (common prefix length / prompt length),
averaged per bot and then over bots. Provider prompt caches reward a high value.

    .venv/bin/python scripts/bench_werewolf.py --llm local --players 7 --max-days 2 --max-messages 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import tempfile
import time
from collections import Counter
from itertools import pairwise
from pathlib import Path

START, END = "<!-- bench_werewolf:start -->", "<!-- bench_werewolf:end -->"


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def prefix_stability(calls: list) -> dict[str, float]:
    by_bot: dict[str, list[str]] = {}
    for c in calls:
        if not c.bot.startswith("("):  # skip the router and the theme generator
            by_bot.setdefault(c.bot, []).append(c.prompt)
    out = {}
    for bot, prompts in by_bot.items():
        shares = [common_prefix(p, q) / len(q) for p, q in pairwise(prompts) if q]
        if shares:
            out[bot] = sum(shares) / len(shares)
    return out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def write_section(path: Path, body: str) -> None:
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{START}\n{body.rstrip()}\n{END}"
    if START in text and END in text:
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _commit() -> str:
    """The commit the benchmarked code came from (read before the run starts)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "gtsteer/werewolf",
                                "gtsteer/llm"], capture_output=True, text=True,
                               check=False).stdout.strip()
    except OSError:
        return "?"
    return head + (" (uncommitted changes)" if dirty else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llm", default="local")
    ap.add_argument("--players", type=int, default=7)
    ap.add_argument("--max-days", type=int, default=2)
    ap.add_argument("--max-messages", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="docs/BENCHMARKS.md")
    ap.add_argument("--json", default=None, help="Also write the raw numbers here.")
    ap.add_argument("--warm-cache", action="store_true",
                    help="Reuse GTSTEER_CACHE_DIR (default: a fresh cache, so every call is new).")
    args = ap.parse_args()

    if not args.warm_cache:
        os.environ.setdefault("GTSTEER_MODEL_DIR", str(
            Path(os.environ.get("GTSTEER_CACHE_DIR") or Path.home() / ".cache/gtsteer") / "models"))
        os.environ["GTSTEER_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-ww-")

    commit = _commit()
    from gtsteer.werewolf.runner import GameRunner, create_game
    from gtsteer.werewolf.store import GameStore

    db = Path(tempfile.mkdtemp(prefix="bench-ww-db-")) / "werewolf.sqlite"
    store = GameStore(db)
    t0 = time.perf_counter()
    state = create_game(store, n_players=args.players, seed=args.seed, model=args.llm,
                        max_days=args.max_days, max_messages_per_day=args.max_messages,
                        game_id="bench")
    state = GameRunner(store).run(state)
    wall = time.perf_counter() - t0
    calls = store.calls("bench")
    stability = prefix_stability(calls)
    purposes = Counter(c.purpose.split(":")[0] for c in calls)
    numbers = {
        "wall_s": round(wall, 1),
        "llm_calls": len(calls),
        "cache_hits": sum(c.cached for c in calls),
        "calls_by_purpose": dict(sorted(purposes.items())),
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "completion_tokens": sum(c.completion_tokens for c in calls),
        "max_prompt_tokens": max((c.prompt_tokens for c in calls), default=0),
        "structured_fallbacks": sum(1 for c in calls if c.error),
        "prefix_stability_mean": round(sum(stability.values()) / max(len(stability), 1), 3),
        "prefix_stability_by_bot": {k: round(v, 3) for k, v in sorted(stability.items())},
        "steps": state.step,
        "days": state.day,
        "winner": state.winner,
        "end_reason": state.end_reason,
    }
    cmd = (f".venv/bin/python scripts/bench_werewolf.py --llm {args.llm} --players "
           f"{args.players} --max-days {args.max_days} --max-messages {args.max_messages} "
           f"--seed {args.seed}")
    body = f"""## Werewolf: one bot-only game ({args.players} players, model `{args.llm}`)

Command: `{cmd}`
Machine: {os.cpu_count()} cores ({cpu_model()}), shared with other jobs (load average at
the end {', '.join(f'{x:.1f}' for x in os.getloadavg())}); date
{dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}; commit {commit}. Fresh response
cache (every call is a real model call). Caps: {args.max_days} days, {args.max_messages}
discussion turns per day (introductions on day 1 not counted).

| measure | value |
|---|---|
| wall time per game | {numbers['wall_s']} s |
| LLM calls per game | {numbers['llm_calls']} ({', '.join(f'{k} {v}' for k, v in numbers['calls_by_purpose'].items())}) |
| prompt / completion tokens | {numbers['prompt_tokens']} / {numbers['completion_tokens']} (largest prompt {numbers['max_prompt_tokens']}) |
| calls that fell back (never valid) | {numbers['structured_fallbacks']} |
| prefix stability (mean over bots) | {numbers['prefix_stability_mean']} |
| result | {numbers['winner']} after {numbers['steps']} steps ({numbers['end_reason']}) |

Prefix stability = for each bot, common-prefix length with its previous prompt divided by the
prompt length, averaged over its prompts, then over bots. Per bot:
{json.dumps(numbers['prefix_stability_by_bot'])}
"""
    write_section(Path(args.out), body)
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=2))
    print(json.dumps(numbers, indent=2))


if __name__ == "__main__":
    main()
