"""Benchmark: one bot-only Werewolf game; prefix stability in tokens; vote position bias.

Writes its section of docs/BENCHMARKS.md. Three parts:

1. One game: wall time, LLM calls, tokens.
2. Prefix stability, counted in tokens of the local model's tokenizer (llama.cpp, vocabulary
   only: nothing is evaluated): for each bot, the common prefix of each prompt with that bot's
   previous prompt divided by the prompt's length, reported separately for pairs within a day
   and pairs across a day boundary; and a cross-bot figure, each prompt's longest common prefix
   with any earlier prompt of another bot. Provider prompt caches and llama.cpp's prefix reuse
   reward high values.
3. Position bias of vote target choice on a cornered bot (day 2, five votes cast against the
   voter, ten players): over many seeds, how often the first listed name wins, for the bots'
   method (a sentence of reasoning, then every option scored and one sampled, options shown in
   a seeded order) and for a naive one-call JSON pick from the list in a fixed order.

    # the coordinator runs this on an idle machine (timing numbers):
    GTSTEER_LOCAL_THREADS=2 .venv/bin/python -m lab werewolf --llm local \
        --players 7 --max-days 2 --max-messages 3 --bias-seeds 30
    # prompt structure only (no model): fake model, local prompt form, real tokenizer
    .venv/bin/python -m lab werewolf --llm fake --form completion --players 7 \
        --max-days 3 --bias-seeds 0 --out /tmp/bench.md
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import pairwise
from pathlib import Path

from lab.bench import benchdoc

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab werewolf"

START, END = benchdoc.markers("bench_werewolf")
Tokenize = Callable[[str], Sequence[int | str]]


def common_prefix(a: Sequence, b: Sequence) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def local_tokenizer() -> Tokenize:
    """The local model's tokenizer, loaded vocabulary-only (no weights evaluated).

    Loaded here rather than through gtsteer.llm because the LLM layer offers no tokenize call
    and this is a measurement, not a model call."""
    import llama_cpp

    from gtsteer.llm.backends.local import default_model_path

    vocab = llama_cpp.Llama(model_path=str(default_model_path()), vocab_only=True,
                            verbose=False)
    return lambda text: vocab.tokenize(text.encode(), add_bos=True, special=False)


def char_tokenizer() -> Tokenize:
    return lambda text: text


def prefix_stability(calls: list, tokenize: Tokenize) -> dict:
    """Same-day and day-boundary pair shares per bot, and the cross-bot shared prefix."""
    tokens = [(c, tokenize(c.prompt)) for c in calls if not c.bot.startswith("(")]
    by_bot: dict[str, list] = {}
    for c, t in tokens:
        by_bot.setdefault(c.bot, []).append((c, t))
    same: dict[str, list[float]] = {}
    boundary: dict[str, list[float]] = {}
    for bot, seq in by_bot.items():
        for (p, pt), (q, qt) in pairwise(seq):
            share = common_prefix(pt, qt) / max(len(qt), 1)
            (same if p.day == q.day else boundary).setdefault(bot, []).append(share)
    cross: list[float] = []
    for i, (c, t) in enumerate(tokens):
        earlier = [u for d, u in tokens[:i] if d.bot != c.bot]
        if earlier:
            cross.append(max(common_prefix(u, t) for u in earlier) / max(len(t), 1))

    def mean_of_bots(d: dict[str, list[float]]) -> float | None:
        per_bot = [statistics.fmean(v) for v in d.values() if v]
        return round(statistics.fmean(per_bot), 3) if per_bot else None

    return {
        "same_day": mean_of_bots(same),
        "same_day_pairs": sum(len(v) for v in same.values()),
        "same_day_min_bot": round(min(statistics.fmean(v) for v in same.values() if v), 3)
        if same else None,
        "day_boundary": mean_of_bots(boundary),
        "day_boundary_pairs": sum(len(v) for v in boundary.values()),
        "cross_bot": round(statistics.fmean(cross), 3) if cross else None,
        "mean_prompt_tokens": round(statistics.fmean(len(t) for _, t in tokens)) if tokens
        else 0,
    }


def cornered_state(seed: int, model: str):
    """Day 2, ten players: Jon died last night; five of the six votes so far are on the voter."""
    from gtsteer.werewolf.engine import new_game
    from gtsteer.werewolf.state import ChatMessage, GameConfig, Vote

    names = ["Ann", "Ben", "Cat", "Dan", "Eve", "Fay", "Gus", "Hal", "Ivy", "Jon"]
    cast = [(n, f"A villager called {n}.", "balanced") for n in names]
    config = GameConfig(n_players=len(cast), n_wolves=3, maniac=True, intro=False)
    state = new_game(cast, config, seed=seed, models=model)
    jon = state.player("Jon")
    jon.alive, jon.died_day, jon.cause = False, 1, "night"
    state.day, state.phase = 2, "vote"
    lines = [(n, f"Cat is the wolf, she dodged every question. Vote Cat, {n} says.")
             for n in ("Ann", "Ben", "Dan", "Eve", "Fay")]
    lines.insert(2, ("Cat", "I am not a wolf, you are making a mistake."))
    state.messages = [ChatMessage(id=i + 1, day=2, phase="discussion", author=a, text=t,
                                  turn=i + 1) for i, (a, t) in enumerate(lines)]
    voters = ["Ann", "Ben", "Dan", "Eve", "Fay", "Gus"]
    state.votes = [Vote(day=2, order=i + 1, voter=v, target="Cat" if v != "Gus" else "Ann")
                   for i, v in enumerate(voters)]
    state.queue = ["Cat", "Hal", "Ivy"]
    return state


def naive_pick(state, want, pool, order: list[str]) -> str | None:
    """The old method: one structured call, `target` an enum over the list as given."""
    from typing import Literal

    from pydantic import create_model

    from gtsteer.werewolf.bots import decision_seed
    from gtsteer.werewolf.context import build_context
    from gtsteer.werewolf.llmcalls import call_structured

    bot = want.actor
    ctx = build_context(state, bot, want, state.player(bot).playstyle)
    ctx = ctx.model_copy(update={"command": f"Day 2 vote. {bot}, vote for exactly one of: "
                                 f"{', '.join(order)}. Answer with JSON."})
    model = state.player(bot).model
    prompt = ctx.completion("JSON:") if pool.completion_style(model) else ctx.messages()
    schema = create_model("Vote", target=(Literal[tuple(order)], ...))  # type: ignore[arg-type]
    value, _ = call_structured(pool, model, prompt, schema, bot=bot, purpose="vote",
                               seed=decision_seed(state, bot, "vote"), max_tokens=40)
    return getattr(value, "target", None)


def position_bias(model: str, seeds: int, pool=None, progress: bool = True) -> dict:
    """How often the first listed name wins, per method, on the cornered vote."""
    from rich.progress import track

    from gtsteer.werewolf.bots import bot_decision
    from gtsteer.werewolf.context import choice_options, display_order
    from gtsteer.werewolf.engine import pending
    from gtsteer.werewolf.llmcalls import LLMPool
    from gtsteer.werewolf.rules import rng

    pool = pool or LLMPool()
    counts: Counter[str] = Counter()
    targets: dict[str, Counter] = {"scored": Counter(), "naive_fixed": Counter(),
                                   "naive_shuffled": Counter()}
    n_options = 0
    seq = range(seeds)
    for seed in (track(seq, description="position bias") if progress else seq):
        state = cornered_state(seed, model)
        want = pending(state)
        assert want is not None and want.actor is not None, "the cornered state waits for a vote"
        n_options = len(want.legal_targets)
        shown = choice_options(state, want.actor, want)
        alive = [n for n in display_order(state, "", state.alive_on(state.day), "alive")
                 if n != want.actor]
        decision, _ = bot_decision(state, want, pool)
        targets["scored"][decision.target] += 1
        counts["scored_first"] += decision.target == shown[0]
        counts["scored_alive_first"] += decision.target == alive[0]
        counts["scored_fallback"] += decision.fallback
        fixed = list(want.legal_targets)
        pick = naive_pick(state, want, pool, fixed)
        targets["naive_fixed"][pick] += 1
        counts["naive_fixed_first"] += pick == fixed[0]
        shuffled = list(fixed)
        rng(seed, "bench-shuffle").shuffle(shuffled)
        pick = naive_pick(state, want, pool, shuffled)
        targets["naive_shuffled"][pick] += 1
        counts["naive_shuffled_first"] += pick == shuffled[0]
    n = max(seeds, 1)
    return {
        "seeds": seeds,
        "options": n_options,
        "chance": round(1 / n_options, 3) if n_options else None,
        "scored_first_wins": round(counts["scored_first"] / n, 3),
        "scored_alive_first_wins": round(counts["scored_alive_first"] / n, 3),
        "scored_fallbacks": counts["scored_fallback"],
        "naive_fixed_order_first_wins": round(counts["naive_fixed_first"] / n, 3),
        "naive_shuffled_order_first_wins": round(counts["naive_shuffled_first"] / n, 3),
        "targets": {k: dict(v.most_common()) for k, v in targets.items()},
    }


def main(argv: list[str] | None = None) -> None:
    ap = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    ap.add_argument("--llm", default="local")
    ap.add_argument("--players", type=int, default=7)
    ap.add_argument("--max-days", type=int, default=2)
    ap.add_argument("--max-messages", type=int, default=None,
                    help="Discussion turns per day (default: scaled with the living players).")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rules", default="reference", choices=["reference", "simple"])
    ap.add_argument("--form", default="auto", choices=["auto", "completion", "chat"],
                    help="Prompt form: auto (by backend), or forced (completion = what the "
                    "local base model reads; use it with --llm fake to measure local prompts).")
    ap.add_argument("--tokenizer", default="local", choices=["local", "chars"])
    ap.add_argument("--bias-seeds", type=int, default=30,
                    help="Seeds for the position-bias measurement (0 skips it).")
    ap.add_argument("--out", default="docs/BENCHMARKS.md")
    ap.add_argument("--json", default=None, help="Also write the raw numbers here.")
    ap.add_argument("--warm-cache", action="store_true",
                    help="Reuse GTSTEER_CACHE_DIR (default: a fresh cache, so every call is new).")
    args = ap.parse_args(argv)

    if not args.warm_cache:
        benchdoc.fresh_cache_until_exit("bench-ww-")

    commit = benchdoc.commit(["gtsteer/werewolf", "gtsteer/llm"])  # the code measured
    from gtsteer.werewolf.llmcalls import LLMPool
    from gtsteer.werewolf.runner import GameRunner, create_game
    from gtsteer.werewolf.state import GameConfig
    from gtsteer.werewolf.store import GameStore

    force = {"auto": None, "completion": True, "chat": False}[args.form]
    pool = LLMPool(completion_style=force)
    tokenize = local_tokenizer() if args.tokenizer == "local" else char_tokenizer()
    db = Path(tempfile.mkdtemp(prefix="bench-ww-db-")) / "werewolf.sqlite"
    store = GameStore(db)
    t0 = time.perf_counter()
    config = GameConfig(n_players=args.players, max_days=args.max_days,
                        max_messages_per_day=args.max_messages, rules=args.rules)
    state = create_game(store, config, seed=args.seed, model=args.llm, game_id="bench",
                        pool=pool)
    state = GameRunner(store, pool=pool).run(state)
    wall = time.perf_counter() - t0
    calls = store.calls("bench")
    stability = prefix_stability(calls, tokenize)
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
        "prefix_stability": stability,
        "tokenizer": args.tokenizer,
        "form": args.form,
        "steps": state.step,
        "days": state.day,
        "winner": state.winner,
        "end_reason": state.end_reason,
    }
    if args.bias_seeds:
        numbers["position_bias"] = position_bias(args.llm, args.bias_seeds, pool)
    cmd = (f".venv/bin/python -m lab werewolf --llm {args.llm} --players "
           f"{args.players} --max-days {args.max_days} --seed {args.seed} --rules {args.rules} "
           f"--form {args.form} --tokenizer {args.tokenizer} --bias-seeds {args.bias_seeds}"
           + (f" --max-messages {args.max_messages}" if args.max_messages else ""))
    ps = stability
    bias = numbers.get("position_bias")
    bias_rows = "" if not bias else f"""
Position bias on the cornered vote ({bias['seeds']} seeds, {bias['options']} options, chance
{bias['chance']}): share of seeds in which the first listed name won.

| method | first listed wins |
|---|---|
| bots' method (reason, score every option, sample), first of the seeded option order | \
{bias['scored_first_wins']} (fallbacks {bias['scored_fallbacks']}) |
| bots' method, first of the day header's (seeded) alive list | {bias['scored_alive_first_wins']} |
| naive one-call JSON pick, fixed list order | {bias['naive_fixed_order_first_wins']} |
| naive one-call JSON pick, list shuffled per seed | {bias['naive_shuffled_order_first_wins']} |

Targets chosen: {json.dumps(bias['targets'])}
"""
    by_purpose = ", ".join(f"{k} {v}" for k, v in numbers["calls_by_purpose"].items())
    body = f"""## Werewolf: one bot-only game ({args.players} players, model `{args.llm}`)

Command: `{cmd}`
Machine: {benchdoc.machine_line(commit=commit, note="; shared with other jobs")}. Fresh response
cache (every call is a real model call). Caps: {args.max_days} days,
{args.max_messages or 'scaled'} discussion turns per day.

| measure | value |
|---|---|
| wall time per game | {numbers['wall_s']} s |
| LLM calls per game | {numbers['llm_calls']} ({by_purpose}) |
| prompt / completion tokens | {numbers['prompt_tokens']} / {numbers['completion_tokens']} \
(largest prompt {numbers['max_prompt_tokens']}) |
| calls that fell back (never valid) | {numbers['structured_fallbacks']} |
| prefix stability, same-day pairs ({ps['same_day_pairs']}) | {ps['same_day']} \
(lowest bot {ps['same_day_min_bot']}) |
| prefix stability, day-boundary pairs ({ps['day_boundary_pairs']}) | {ps['day_boundary']} |
| cross-bot shared prefix | {ps['cross_bot']} |
| mean prompt length ({args.tokenizer} tokens) | {ps['mean_prompt_tokens']} |
| result | {numbers['winner']} after {numbers['steps']} steps ({numbers['end_reason']}) |

Prefix stability = for each bot, the common prefix (in {args.tokenizer} tokens, prompt form
`{args.form}`) with its previous prompt divided by the prompt length, averaged over its pairs,
then over bots; cross-bot = each prompt's longest common prefix with any earlier prompt of
another bot.
{bias_rows}"""
    benchdoc.write_section(Path(args.out), START, END, benchdoc.wrap(START, END, body))
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=2))
    print(json.dumps(numbers, indent=2))


if __name__ == "__main__":
    main()
