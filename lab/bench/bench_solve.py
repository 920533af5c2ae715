"""Benchmark `gtsteer solve` and write its section of docs/BENCHMARKS.md.

1. LLM calls to solve and evaluate one fruit-trading instance: gtsteer (fake model, fresh
   cache, then a rerun) vs OpenSpiel's reference `chat_game` on the same tree parameters
   (2 players, 4 tones, 2 LLM seeds, 1 reply each) solved with the flow of
   `open_spiel/python/examples/chat_game_cfr_example.py` (load, cached tree, CFR, evaluation
   against `any`, tree traversal for the imitation dataset), its mock LLM wrapped by a counter.
2. CFR iterations per second: OpenSpiel C++ CFR on the cached tree vs Python CFR on the
   uncached game (both after expansion, so no LLM work is timed).
3. Wall time of the README main job (`make demo`: `gtsteer solve DEMO_CONFIG --games 1` with
   the default local model), cold cache and rerun, when llama-cpp-python is importable.
4. Instruction echo rate per model: the share of guided messages (instruction other than `any`)
   whose sample carried an instruction-shaped stage direction ("(Alice writes in a calm
   tone.)", any name or tone), and the same for unguided messages (the binding strips them, so
   the opponent never sees them; the rates say how often a model tries).

    .venv/bin/python -m lab solve [--no-local] [--echo-models fake,local]
    .venv/bin/python -m lab solve --only-echo --echo-models local --no-write
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab solve"

FRUIT = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
DOC = benchdoc.DOC
START, END = benchdoc.markers("bench_solve")
#: The config of the Makefile's `demo` recipe (the README main job); keep the two in step.
DEMO_CONFIG = "gtsteer/configs/schedule_meeting_dow.yaml"
DEMO_COMMAND = f"gtsteer solve {DEMO_CONFIG} --games 1"


# ---- 1. LLM calls --------------------------------------------------------------------------


def gtsteer_calls(iterations: int) -> dict:
    import gtsteer
    from gtsteer.llm import LLM

    with benchdoc.fresh_cache("bench-solve-") as cache, tempfile.TemporaryDirectory() as out:
        first = gtsteer.solve(FRUIT, llm=LLM("fake"), iterations=iterations, out=out, quiet=True)
        record = json.loads((Path(out) / "games" / "0.json").read_text())
        second = gtsteer.solve(FRUIT, llm=LLM("fake"), iterations=iterations, out=out, quiet=True)
        del cache
    exp = record["expansion"]
    nodes = exp["message_requests"] + exp["termination_requests"] + exp["reward_requests"]
    return {
        "first_requests": first.llm_calls.requests,
        "first_new_calls": first.llm_calls.new_calls,
        "rerun_new_calls": second.llm_calls.new_calls,
        "rerun_cache_hits": second.llm_calls.cache_hits,
        "distinct_llm_nodes": nodes,
        "messages": exp["message_requests"],
        "termination_checks": exp["termination_requests"],
        "rewards": exp["reward_requests"],
        "terminals": exp["terminal_nodes"],
        "same_numbers": first.numbers() == second.numbers(),
    }


def reference_calls(iterations: int) -> dict:
    """OpenSpiel's chat_game with its mock LLM, counted per call, through its CFR example flow."""
    import pyspiel
    from absl import logging

    logging.set_verbosity(logging.ERROR)
    from open_spiel.python.examples import chat_game_cfr_example as example
    from open_spiel.python.games import chat_game  # noqa: F401  (registers chat_game)
    from open_spiel.python.games.chat_games.configs import config_trade_fruit_w_tone_fixed
    from open_spiel.python.games.chat_games.utils import test_utils

    counts: collections.Counter = collections.Counter()
    distinct: set = set()
    generate, generate_bool = test_utils.MockLLM.generate_response, test_utils.MockLLM.generate_bool

    def counted_generate(self, prompt, seed, num_output_tokens=None):
        counts["generate"] += 1
        distinct.add(("generate", prompt, seed, num_output_tokens))
        return generate(self, prompt, seed, num_output_tokens)

    def counted_bool(self, prompt, seed):
        counts["bool"] += 1
        distinct.add(("bool", prompt, seed))
        return generate_bool(self, prompt, seed)

    test_utils.MockLLM.generate_response = counted_generate
    test_utils.MockLLM.generate_bool = counted_bool
    phases = {}
    try:
        config = config_trade_fruit_w_tone_fixed.get_config()
        game = pyspiel.load_game("chat_game", config.params.to_dict())
        vectorizer = test_utils.MockVectorizer()
        game.load_chat_game(llm_type=test_utils.TestLLM.MOCK, vectorize=vectorizer.vectorize,
                            seed=1234, **config.game)  # fmt: skip
        phases["load"] = counts.total()
        cached = pyspiel.convert_to_cached_tree(game)
        solver = pyspiel.CFRSolver(cached)
        for _ in range(iterations):
            solver.evaluate_and_update_policy()
        average = solver.tabular_average_policy()
        phases["cfr"] = counts.total() - sum(phases.values())
        constructor = example.ImitationDatasetConstructor.__new__(
            example.ImitationDatasetConstructor
        )
        constructor.eval_vs_any(cached, average)
        phases["eval_vs_any"] = counts.total() - sum(phases.values())
        stats = example.GameStats()
        example.traverse_game_tree(game, game.new_initial_state(), stats, average,
                                   observer=game.make_py_observer(),
                                   vectorize=vectorizer.vectorize)  # fmt: skip
        phases["dataset_traversal"] = counts.total() - sum(phases.values())
    finally:
        test_utils.MockLLM.generate_response = generate
        test_utils.MockLLM.generate_bool = generate_bool
    return {
        "calls": counts.total(),
        "generate": counts["generate"],
        "bool": counts["bool"],
        "distinct_requests": len(distinct),
        "phases": phases,
        "terminals": stats.num_terminals,
        "decision_nodes": stats.num_decision_nodes,
    }


# ---- 2. CFR speed ----------------------------------------------------------------------------


def cfr_speed(min_seconds: float) -> dict:
    import pyspiel
    from open_spiel.python.algorithms import cfr

    from gtsteer.binding import expand_sync
    from gtsteer.domains import load_game
    from gtsteer.llm import LLM

    with benchdoc.fresh_cache("bench-solve-"):
        game = load_game(FRUIT, llm=LLM("fake"), instance=0)
        expand_sync(game, progress=False)

        def rate(solver) -> tuple[float, int]:
            n, start = 0, time.perf_counter()
            while time.perf_counter() - start < min_seconds:
                solver.evaluate_and_update_policy()
                n += 1
            return n / (time.perf_counter() - start), n

        cached = pyspiel.convert_to_cached_tree(game)
        pyspiel.CFRSolver(cached).evaluate_and_update_policy()  # build the cache first
        cpp, cpp_n = rate(pyspiel.CFRSolver(cached))
        cpp_plus, _ = rate(pyspiel.CFRPlusSolver(cached))
        py, py_n = rate(cfr.CFRSolver(game))
        start = time.perf_counter()
        solver = pyspiel.CFRPlusSolver(cached)
        for _ in range(1000):
            solver.evaluate_and_update_policy()
        default_s = time.perf_counter() - start
    return {
        "cpp_cfr_it_s": cpp,
        "cpp_cfr_plus_it_s": cpp_plus,
        "python_cfr_it_s": py,
        "cpp_iterations": cpp_n,
        "python_iterations": py_n,
        "speedup": cpp / py,
        "default_1000_cfr_plus_s": default_s,
    }


# ---- 3. README main job ----------------------------------------------------------------------


def main_job() -> dict | str:
    """Timings of the main job, or why it was not run.

    Runs on a snapshot of gtsteer/ (configs included) taken at the start, so edits that others make
    to the work tree during the (minutes-long) cold run cannot change the rerun's requests.
    """
    if (why := local_unavailable()) is not None:
        return why
    from gtsteer.llm.backends.local import DEFAULT_LOCAL_MODEL

    out: dict = {"command": DEMO_COMMAND, "model": DEFAULT_LOCAL_MODEL}
    out["source"] = f"snapshot of the work tree at {benchdoc.commit()}"
    with (
        benchdoc.fresh_cache("bench-solve-"),
        tempfile.TemporaryDirectory() as snap,
        tempfile.TemporaryDirectory() as tmp,
    ):
        shutil.copytree(ROOT / "gtsteer", Path(snap) / "gtsteer")
        env = {**os.environ, "PYTHONPATH": snap}
        cmd = [sys.executable, "-c", "from gtsteer.cli import app; app()", "solve",
               DEMO_CONFIG, "--games", "1", "--quiet", "--out", tmp]  # fmt: skip
        for label in ("cold", "rerun"):
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=snap, env=env, capture_output=True, text=True,
                                  check=False)  # fmt: skip
            out[f"{label}_s"] = time.perf_counter() - start
            out[f"{label}_rc"] = proc.returncode
            if proc.returncode != 0:
                out[f"{label}_error"] = proc.stderr.strip().splitlines()[-1:] or ["?"]
                break
            summary = json.loads((Path(tmp) / "summary.json").read_text())
            out[f"{label}_calls"] = summary["llm_calls"]
            out[f"{label}_failures"] = len(summary["failures"])
    return out


# ---- 4. instruction echo ---------------------------------------------------------------------


def echo_rates(models: list[str], games: int) -> dict[str, dict]:
    """Per model: guided messages, how many repeated their instruction, the rate, an example.

    A quality number, not a timing: it uses the normal response cache, so a model already run
    on these instances (e.g. by the main job) answers from it."""
    from gtsteer.binding import expand_sync, generate_instances, make_game
    from gtsteer.domains import load_spec
    from gtsteer.llm import LLM

    spec = load_spec(FRUIT)
    out: dict[str, dict] = {}
    for model in models:
        if model.startswith("local") and isinstance(local_unavailable(), str):
            out[model] = {"skipped": local_unavailable()}
            continue
        llm = LLM(model)
        counts: collections.Counter[str] = collections.Counter()
        example = ""
        for instance in generate_instances(spec, games, 0):
            game = make_game(spec, instance, llm)
            expand_sync(game, progress=False)
            unguided = game.any_action()
            for history in game.messages:
                kind = "unguided" if history[-2] == unguided else "guided"
                counts[kind] += 1
                counts[f"{kind}_echoed"] += history in game.echoes
            if game.echoes and not example:
                example = game.messages[min(game.echoes)]
        out[model] = {
            "games": games,
            "instructed": counts["guided"],
            "echoed": counts["guided_echoed"],
            "rate": counts["guided_echoed"] / max(counts["guided"], 1),
            "unguided": counts["unguided"],
            "unguided_echoed": counts["unguided_echoed"],
            "example_after_stripping": example,
        }
    return out


def local_unavailable() -> str | None:
    try:
        import llama_cpp  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means "not built here"
        return f"llama-cpp-python does not import here ({type(exc).__name__})"
    return None


def render_echo(rates: dict[str, dict]) -> list[str]:
    lines = [
        "### Instruction echo rate (fruit instances, guided messages)",
        "",
        "A sample that carries an instruction-shaped stage direction (\"(Alice writes in a calm",
        "tone.)\", under any name or tone) would show the private instruction to the other",
        "player; the binding strips it before the message enters the transcript and counts it",
        "(`echoed_messages`). Unguided (`any`) messages are counted apart.",
        "",
        "| model | games | guided messages | with a direction | rate | unguided with one |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for model, r in rates.items():
        if "skipped" in r:
            lines.append(f"| `{model}` | — | — | — | not run: {r['skipped']} | — |")
        else:
            lines.append(f"| `{model}` | {r['games']} | {r['instructed']} | {r['echoed']} |"
                         f" {r['rate']:.1%} | {r['unguided_echoed']} of {r['unguided']} |")
    return lines


# ---- report ----------------------------------------------------------------------------------


def render(
    calls: dict, ref: dict, speed: dict, job: dict | str, command: str, echo: dict[str, dict]
) -> str:
    ratio = ref["calls"] / calls["first_new_calls"]
    machine = benchdoc.machine_line(note=" (the machine is shared)")
    lines = [
        START,
        "## `gtsteer solve`: LLM calls, CFR speed, main job",
        "",
        f"Command: `{command}` · {machine}",
        "",
        "### LLM calls to solve and evaluate one fruit-trading instance",
        "",
        "Same tree parameters: 2 players, 4 tones, 2 LLM seeds, 1 reply each. gtsteer:",
        "`trade_fruit_tone` with the `fake` model and an empty cache (expansion,",
        "CFR+, NashConv, CFR gain, head-to-head, instruction distribution). Reference: OpenSpiel",
        "`chat_game` (`config_trade_fruit_w_tone_fixed`) through the flow of",
        "`chat_game_cfr_example.py` (cached tree, CFR, `eval_vs_any`, dataset traversal), its",
        "`MockLLM.generate_response`/`generate_bool` wrapped by a counter.",
        "",
        "| | gtsteer | OpenSpiel chat_game |",
        "|---|---:|---:|",
        f"| LLM calls, first run | {calls['first_new_calls']} | {ref['calls']} |",
        f"| LLM calls, rerun | {calls['rerun_new_calls']} | {ref['calls']} (no cache) |",
        (
            f"| distinct LLM nodes / requests | {calls['distinct_llm_nodes']} "
            f"({calls['messages']} messages, {calls['termination_checks']} end checks, "
            f"{calls['rewards']} rewards) | {ref['distinct_requests']} distinct (prompt, seed) |"
        ),
        f"| terminal histories | {calls['terminals']} | {ref['terminals']} |",
        "",
        (
            f"- Calls per distinct LLM node (gtsteer): "
            f"{calls['first_new_calls'] / calls['distinct_llm_nodes']:.2f} (goal <= 1)."
        ),
        (
            f"- Reference / gtsteer calls, first run: **{ratio:.1f}x** (goal >= 10x); "
            f"rerun: {calls['rerun_new_calls']} calls vs {ref['calls']}."
        ),
        (
            f"- Reference calls by phase: {json.dumps(ref['phases'])}; "
            f"{ref['generate']} generate + {ref['bool']} yes/no. Its tree has twice the terminals "
            "(a duplicate recipient action) and the second message is never rendered."
        ),
        f"- Rerun numbers identical to the first run: {calls['same_numbers']}.",
        "",
        "### CFR iterations per second (fruit instance 0, after expansion)",
        "",
        "| solver | iterations/s |",
        "|---|---:|",
        f"| OpenSpiel C++ CFR on `convert_to_cached_tree` | {speed['cpp_cfr_it_s']:,.0f} |",
        f"| OpenSpiel C++ CFR+ on `convert_to_cached_tree` | {speed['cpp_cfr_plus_it_s']:,.0f} |",
        f"| OpenSpiel Python CFR on the uncached game | {speed['python_cfr_it_s']:,.1f} |",
        "",
        (
            f"C++ on the cached tree is **{speed['speedup']:,.0f}x** faster; the default "
            f"(1000 CFR+ iterations) takes {speed['default_1000_cfr_plus_s']:.2f} s."
        ),
        "",
        "### README main job (local model)",
        "",
    ]
    if isinstance(job, str):
        lines.append(
            f"TODO: not timed in this run: {job}. Command: `{DEMO_COMMAND}`."
        )
    else:
        lines += [
            (
                f"`{job['command']}` (local model `{job['model']}` via llama.cpp, "
                f"fresh response cache, {job['source']}):"
            ),
            "",
            "| run | wall time | LLM calls |",
            "|---|---:|---|",
        ]
        for label in ("cold", "rerun"):
            if f"{label}_s" not in job:
                continue
            if job.get(f"{label}_rc") != 0:
                detail = f"failed: {job.get(f'{label}_error')}"
            else:
                detail = json.dumps(job[f"{label}_calls"])
                if job.get(f"{label}_failures"):
                    detail += f", {job[f'{label}_failures']} failed instance(s)"
            lines.append(f"| {label} | {job[f'{label}_s']:.1f} s | {detail} |")
        lines += ["", "Goal: under 5 minutes (300 s) cold."]
    if echo:
        lines += ["", *render_echo(echo)]
    lines.append(END)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000, help="CFR iterations (both)")
    parser.add_argument("--seconds", type=float, default=3.0, help="time per CFR speed run")
    parser.add_argument("--no-local", action="store_true", help="skip the local-model main job")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--echo-models", default="fake,local",
                        help="comma-separated models whose instruction echo rate is measured")
    parser.add_argument("--echo-games", type=int, default=1, help="instances per echo model")
    parser.add_argument("--only-echo", action="store_true",
                        help="measure only the echo rates (prints; never writes the doc)")
    args = parser.parse_args(argv)
    command = "python -m lab solve" + "".join(
        f" {a}" for a in (sys.argv[1:] if argv is None else argv) if a != "--no-write"
    )
    models = [m.strip() for m in args.echo_models.split(",") if m.strip()]
    if args.only_echo:
        rates = echo_rates(models, args.echo_games)
        print(json.dumps(rates, indent=2))
        print("\n".join(render_echo(rates)))
        return
    calls = gtsteer_calls(args.iterations)
    print("gtsteer", calls, flush=True)
    ref = reference_calls(args.iterations)
    print("reference", ref, flush=True)
    speed = cfr_speed(args.seconds)
    print("speed", speed, flush=True)
    job = "skipped with --no-local" if args.no_local else main_job()
    print("main job", job, flush=True)
    echo = echo_rates(models, args.echo_games)
    print("echo", echo, flush=True)
    section = render(calls, ref, speed, job, command, echo)
    print(section)
    if not args.no_write:
        benchdoc.write_section(DOC, START, END, section)


if __name__ == "__main__":
    main()
