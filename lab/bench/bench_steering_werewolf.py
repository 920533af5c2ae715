"""Benchmark: build a Werewolf steering policy from 20 states, and the latency steering adds.

Part 1 runs `steer-train` (logged bot-only games -> 20 playstyle games expanded with the model
and solved with CFR+ -> records -> MLP) and reports time and LLM calls per stage. Part 2 plays
the same seeds with steering off (assigned styles) and on (the distilled chooser, both teams),
and reports the hook's time per bot decision (the embedding and the MLP; the LLM calls the
steered style causes are counted apart) and the whole decision's time. Writes its section of
docs/BENCHMARKS.md; run it alone on an idle machine (timings).

    .venv/bin/python -m lab steering-werewolf --llm local --states 20
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from lab.bench import benchdoc

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab steering-werewolf"

START, END = benchdoc.markers("bench_steering_werewolf")


class Timed:
    """Wraps a chooser and adds up the time it takes (the hook's own latency)."""

    def __init__(self, inner):
        self.inner, self.seconds, self.calls = inner, 0.0, 0

    def choose(self, info):
        t = time.perf_counter()
        try:
            return self.inner.choose(info)
        finally:
            self.seconds += time.perf_counter() - t
            self.calls += 1


def play(store, chooser, args, gid: str, seed: int) -> dict:
    from gtsteer.werewolf.runner import GameRunner, create_game
    from gtsteer.werewolf.state import GameConfig

    timed = Timed(chooser)
    config = GameConfig(n_players=args.players, max_days=args.play_days,
                        max_messages_per_day=args.max_messages)
    state = create_game(store, config, seed=seed, model=args.llm,
                        game_id=gid)
    t0 = time.perf_counter()
    final = GameRunner(store, chooser=timed).run(state)
    wall = time.perf_counter() - t0
    calls = store.calls(gid)
    return {"wall_s": wall, "decisions": timed.calls, "hook_s": timed.seconds,
            "llm_calls": len(calls), "steps": final.step}


def main(argv: list[str] | None = None) -> None:
    ap = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    ap.add_argument("--llm", default="local")
    ap.add_argument("--states", type=int, default=20)
    ap.add_argument("--games", type=int, default=4,
                    help="Logged games the states come from (3 hold only 15 states at the"
                         " defaults).")
    ap.add_argument("--samples", type=int, default=1)
    ap.add_argument("--players", type=int, default=7)
    ap.add_argument("--max-messages", type=int, default=3)
    ap.add_argument("--max-days", type=int, default=2)
    ap.add_argument("--play-days", type=int, default=1, help="Day cap of the latency games.")
    ap.add_argument("--play-games", type=int, default=2)
    ap.add_argument("--train-steps", type=int, default=2000)
    ap.add_argument("--embedder", default=None)
    ap.add_argument("--out", default="docs/BENCHMARKS.md")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    benchdoc.fresh_cache_until_exit("bench-steer-")  # cold calls

    commit = benchdoc.commit(["gtsteer/werewolf", "gtsteer/llm"])  # the code measured
    from gtsteer.runs.context import RunContext
    from gtsteer.runs.werewolf_steer import SteerTrainConfig, SteerTrainOptions, run
    from gtsteer.werewolf.playstyles import AssignedPlaystyle
    from gtsteer.werewolf.steering import DistilledPlaystyleChooser
    from gtsteer.werewolf.store import GameStore

    work = Path(tempfile.mkdtemp(prefix="bench-steer-out-"))
    cfg = SteerTrainConfig(games=args.games, llm=args.llm, players=args.players,
                           max_messages=args.max_messages, max_days=args.max_days,
                           states=args.states, num_llm_seeds=args.samples,
                           train_steps=args.train_steps, embedder=args.embedder)
    t0 = time.perf_counter()
    summary = run(cfg, RunContext.of(out=work / "steer"), SteerTrainOptions())
    build_s = time.perf_counter() - t0
    chooser = DistilledPlaystyleChooser.load(work / "steer")
    store = GameStore(work / "latency.sqlite")
    off = [play(store, AssignedPlaystyle(), args, f"off{i}", 100 + i)
           for i in range(args.play_games)]
    on = [play(store, chooser, args, f"on{i}", 100 + i) for i in range(args.play_games)]

    def per_decision(rows: list[dict], key: str) -> float:
        return sum(r[key] for r in rows) / max(sum(r["decisions"] for r in rows), 1)

    numbers = {
        "build_s": round(build_s, 1), "games_s": round(summary.seconds_games, 1),
        "states_s": round(summary.seconds_states, 1), "train_s": round(summary.seconds_train, 1),
        "states": len(summary.solved), "records": summary.records,
        "message_calls": sum(s.message_calls for s in summary.solved),
        "prediction_calls": sum(s.prediction_calls for s in summary.solved),
        "game_log_calls": sum(len(GameStore(work / "steer" / "games.sqlite").calls(g))
                              for g in summary.logged_games),
        "sizes": summary.solved[0].sizes if summary.solved else {},
        "mean_nash_conv": sum(s.nash_conv for s in summary.solved) / max(len(summary.solved), 1),
        "hook_ms_off": round(1000 * per_decision(off, "hook_s"), 2),
        "hook_ms_on": round(1000 * per_decision(on, "hook_s"), 2),
        "decision_s_off": round(per_decision(off, "wall_s"), 3),
        "decision_s_on": round(per_decision(on, "wall_s"), 3),
        "llm_calls_off": sum(r["llm_calls"] for r in off),
        "llm_calls_on": sum(r["llm_calls"] for r in on),
        "shortfall": summary.shortfall,
    }
    def per_state(n: dict, asked: int) -> str:
        solved = max(n["states"], 1)
        calls = (n["message_calls"] + n["prediction_calls"]) / solved
        line = f"Per playstyle game: {n['states_s'] / solved:.1f} s and {calls:.0f} LLM calls."
        if n["shortfall"]:
            line += (f" Asked for {asked} states: {n['shortfall']}; {asked} states would take "
                     f"about {asked * n['states_s'] / solved:.0f} s and {asked * calls:.0f} calls.")
        return line

    cmd = (f".venv/bin/python -m lab steering-werewolf --llm {args.llm} --states "
           f"{args.states} --games {args.games} --samples {args.samples}")
    n = numbers
    body = f"""## Werewolf steering: a policy from {n['states']} states (model `{args.llm}`)

Command: `{cmd}`
Machine: {benchdoc.machine_line(commit=commit)}.

| stage | time (s) | LLM calls |
|---|---|---|
| {args.games} logged bot-only games | {n['games_s']} | {n['game_log_calls']} |
| {n['states']} playstyle games (expand + CFR+) | {n['states_s']} | \
{n['message_calls']} messages + {n['prediction_calls']} predictions |
| MLP training ({args.train_steps} steps, {n['records']} records) | {n['train_s']} | 0 |
| total | {n['build_s']} | |

One playstyle game: {n['sizes']}; mean NashConv of the CFR+ policies {n['mean_nash_conv']:.4f}.
{per_state(n, args.states)}

Latency per bot decision ({args.play_games} games of {args.play_days} day(s), same seeds):
the hook itself takes {n['hook_ms_off']} ms off (assigned styles) and {n['hook_ms_on']} ms on
(embedding + MLP); a whole decision takes {n['decision_s_off']} s off and
{n['decision_s_on']} s on (LLM calls: {n['llm_calls_off']} off, {n['llm_calls_on']} on).
"""
    benchdoc.write_section(Path(args.out), START, END, benchdoc.wrap(START, END, body))
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=2))
    print(json.dumps(numbers, indent=2))


if __name__ == "__main__":
    main()
