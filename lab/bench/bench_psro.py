"""Benchmark `gtsteer psro` and write its section of docs/BENCHMARKS.md.

Same parameters on both sides: the fruit-trading tone domain (2 players, tones calm /
assertive / submissive / any, 2 LLM samples, 1 reply each), 3 PSRO iterations, shotgun
oracle with K = 4 candidates.

1. gtsteer: `gtsteer.psro` on `gtsteer/configs/trade_fruit_tone.yaml` with a fresh response cache,
   then the same run again (cache warm): new LLM calls and wall time per iteration. Twice:
   with an oracle for every player (gtsteer's default), and with an oracle for player 0 only
   (`oracle_players=[0]`, the reference's work), each with its own fresh cache.
2. Reference: OpenSpiel's `examples/chat_game_psro_example.py` flow (its `PSRO` class on
   `config_trade_fruit_w_tone`, its default 10 simulation trials per payoff entry), with its
   `MockLLM.generate_response`/`generate_bool` wrapped by a counter (as bench_solve does).

    .venv/bin/python -m lab psro --llm local      # the timed run (idle machine)
    .venv/bin/python -m lab psro --llm fake --no-write   # smoke test
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import sys
import tempfile
import time

from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab psro"

FRUIT = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
DOC = benchdoc.DOC
START, END = benchdoc.markers("bench_psro")
ITERATIONS, CANDIDATES = 3, 4


def gtsteer_run(model: str, oracle_players: list[int] | None = None) -> dict:
    import gtsteer
    from gtsteer.llm import LLM
    from gtsteer.solvers.psro import PSROConfig

    # All iterations run even when one adds nothing (the reference always runs all of them).
    settings = PSROConfig(iterations=ITERATIONS, candidates=CANDIDATES, operator="shotgun",
                          meta_solver="rd", seed=0, stop_when_converged=False,
                          oracle_players=oracle_players)
    runs = []
    with benchdoc.fresh_cache("bench-psro-"), tempfile.TemporaryDirectory() as out:
        for _ in ("cold", "rerun"):
            start = time.perf_counter()
            summary = gtsteer.psro(FRUIT, llm=LLM(model), settings=settings, out=out)
            runs.append((summary, time.perf_counter() - start))
    (cold, cold_s), (rerun, rerun_s) = runs
    return {
        "model": model,
        "per_iteration": [
            {"iteration": it.iteration, "new_calls": it.llm.new_calls,
             "proposer_calls": sum(len(o.calls) for o in it.oracles),
             "requests": it.llm.requests, "wall_s": it.wall_s,
             "added": it.added, "population_sizes": [len(p) for p in it.populations]}
            for it in cold.iterations
        ],
        "cold_new_calls": cold.llm_calls.new_calls,
        "cold_s": cold_s,
        "rerun_new_calls": rerun.llm_calls.new_calls,
        "rerun_s": rerun_s,
        "same_numbers": cold.numbers() == rerun.numbers(),
        "converged": cold.converged,
    }


def reference_run() -> dict:
    """OpenSpiel's chat_game_psro_example PSRO class, mock LLM counted per call."""
    from absl import logging

    logging.set_verbosity(logging.ERROR)
    from open_spiel.python.examples import chat_game_psro_example as example
    from open_spiel.python.games.chat_games.configs import config_trade_fruit_w_tone
    from open_spiel.python.games.chat_games.utils import test_utils

    counts: collections.Counter = collections.Counter()
    generate, generate_bool = test_utils.MockLLM.generate_response, test_utils.MockLLM.generate_bool

    def counted_generate(self, prompt, seed, num_output_tokens=None):
        counts["generate"] += 1
        return generate(self, prompt, seed, num_output_tokens)

    def counted_bool(self, prompt, seed):
        counts["bool"] += 1
        return generate_bool(self, prompt, seed)

    marks: list[int] = []
    report = example.PSROReporting.report

    def counted_report(self, psro_iter, *args, **kwargs):
        marks.append(counts.total())
        with contextlib.redirect_stdout(io.StringIO()):
            return report(self, psro_iter, *args, **kwargs)

    test_utils.MockLLM.generate_response = counted_generate
    test_utils.MockLLM.generate_bool = counted_bool
    example.PSROReporting.report = counted_report
    start = time.perf_counter()
    try:
        config = example.get_config()
        config.num_iters = ITERATIONS
        config.num_candidates = CANDIDATES
        config.domain = example.Domain.TRADE_FRUIT_W_TONE
        config.env_config = config_trade_fruit_w_tone.get_config()
        with contextlib.redirect_stdout(io.StringIO()):
            psro = example.PSRO("", config)
            setup = counts.total()
            psro.run()
    finally:
        test_utils.MockLLM.generate_response = generate
        test_utils.MockLLM.generate_bool = generate_bool
        example.PSROReporting.report = report
    per_iteration = [b - a for a, b in zip([setup, *marks[:-1]], marks, strict=True)]
    return {
        "setup_calls": setup,
        "per_iteration": per_iteration,
        "total": counts.total(),
        "generate": counts["generate"],
        "bool": counts["bool"],
        "num_trials": config.num_trials,
        "wall_s": time.perf_counter() - start,
    }


def render(ours: dict, solo: dict, ref: dict, command: str) -> str:
    """`ours`: an oracle for every player; `solo`: for player 0 only, as the reference."""
    lines = [
        START,
        "## `gtsteer psro`: LLM calls per iteration",
        "",
        f"Command: `{command}` · {benchdoc.machine_line()}",
        "",
        (
            "Fruit trading with tones (4 tones, 2 LLM samples, 1 reply each, on both sides), "
            f"{ITERATIONS} iterations, shotgun oracle with K = {CANDIDATES}. gtsteer: model "
            f"`{ours['model']}`, a fresh response cache per run, payoffs exact on the expanded "
            "branches, candidates scored against the meta-strategy's support; row 0 is the "
            "initial meta-game plus the oracles' candidate scoring, the last row the final "
            "meta-game. Run twice: an oracle for every player (the default) and for player 0 "
            "only (`--oracle-player 0`, the reference's work). Reference: OpenSpiel "
            "`chat_game_psro_example.py` (`config_trade_fruit_w_tone`, its default "
            f"{ref['num_trials']} simulated dialogues per payoff entry, an oracle for player 0 "
            "only), its mock LLM counted per call."
        ),
        "",
        (
            "| iteration | reference LLM calls | gtsteer, every player: new calls (proposer) "
            "| wall time | reference / gtsteer | gtsteer, player 0 only: new calls (proposer) "
            "| wall time | reference / gtsteer |"
        ),
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def cells(it: dict, ref_calls: int | None) -> str:
        ratio = (f"{ref_calls / it['new_calls']:.1f}x"
                 if ref_calls is not None and it["new_calls"] else "—")
        return f"{it['new_calls']} ({it['proposer_calls']}) | {it['wall_s']:.1f} s | {ratio}"

    for i, (it, it0) in enumerate(zip(ours["per_iteration"], solo["per_iteration"],
                                      strict=False)):
        ref_calls = ref["per_iteration"][i] if i < len(ref["per_iteration"]) else None
        lines.append(f"| {it['iteration']} | {ref_calls if ref_calls is not None else '—'} | "
                     f"{cells(it, ref_calls)} | {cells(it0, ref_calls)} |")
    lines.append("")
    for label, run in (("every player", ours), ("player 0 only", solo)):
        lines += [
            (f"- gtsteer, {label}, whole run: {run['cold_new_calls']} new calls in "
             f"{run['cold_s']:.1f} s cold; rerun: **{run['rerun_new_calls']} new calls** in "
             f"{run['rerun_s']:.1f} s, numbers identical: {run['same_numbers']}. Added per "
             "iteration (per player): "
             + ("; ".join(f"{it['iteration']}: {json.dumps(it['added'])}"
                          for it in run["per_iteration"] if it["added"]) or "—") + "."),
        ]
    lines += [
        (
            f"- Reference, whole run: {ref['total']} calls ({ref['generate']} generate + "
            f"{ref['bool']} yes/no, {ref['setup_calls']} at setup), {ref['wall_s']:.1f} s with "
            "its mock LLM; every rerun pays the same (no cache)."
        ),
        "- Goal: at least 10x fewer calls than the reference per iteration, zero on rerun.",
        END,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("--llm", default="local", help="gtsteer's model (default: local)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    command = "python -m lab psro" + "".join(
        f" {a}" for a in (sys.argv[1:] if argv is None else argv) if a != "--no-write"
    )
    ours = gtsteer_run(args.llm)
    print("gtsteer", json.dumps(ours), flush=True)
    solo = gtsteer_run(args.llm, oracle_players=[0])
    print("gtsteer player 0", json.dumps(solo), flush=True)
    ref = reference_run()
    print("reference", json.dumps(ref), flush=True)
    section = render(ours, solo, ref, command)
    print(section)
    if not args.no_write:
        benchdoc.write_section(DOC, START, END, section)


if __name__ == "__main__":
    main()
