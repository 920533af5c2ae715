"""This checkout against a reference commit, in ABBA order: the README job and a Table 1 instance.

A speed change is measured in one run against the commit before it (issue 45): the reference
(A) is a temporary detached `git worktree` of `--against REV`, removed afterwards (on error
too), whose code runs in the same venv through `PYTHONPATH` (before the editable install on
`sys.path`; each tree's import location is checked before any run), with that tree's configs;
this checkout (B) is the working tree as it is, uncommitted changes included. Each run is
`gtsteer solve schedule_meeting_dow --games 1 --heldout --profile` (the Makefile's
`demo` recipe with `--heldout --profile`), cold in an empty response cache with
`GTSTEER_LOCAL_THREADS`, in a fresh process, in the order A B B A (`--rounds` times), so a
machine that drifts slower or faster over the hour weighs on both sides alike. Both trees are
byte-compiled first, and one unrecorded warm-up run on the `fake` model reads site-packages
into the page cache, so the first run pays for neither.

Per run: the whole process's wall seconds and, from its `profile.json`, the README job's
seconds (the solved tree's phases) and the Table 1 instance's (every phase: `--heldout` adds
the fresh tree), tokens generated and prompt tokens evaluated, and two digests of what it
decided: the sampled dialogues with their payoffs (`games/0.terminals.jsonl`, bench_demo's
`terminals (sha256)`) and the policy, values and metrics (summary.json, games/0.json). A speed
change must leave both unchanged; the section says loudly when it did not. llama.cpp's own
`llama-bench` on the same GGUF and threads runs before the first run and after the last.
Writes the `bench_abba` section of docs/BENCHMARKS.md. Nothing else may load a model meanwhile:

    flock /tmp/gtsteer-model.lock .venv/bin/python -m lab abba --against REV
        [--model smollm2-135m] [--threads 2] [--rounds 1] [--no-write]
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gtsteer.llm import ModelConfigError
from gtsteer.llm.backends.local import parse_local_model
from lab.bench import benchdoc, llama_tools
from lab.bench.bench_demo import digest, reference

COMMAND = "python -m lab abba"
START, END = benchdoc.markers("bench_abba")
#: One round: the reference, this checkout twice, the reference again.
ROUND = ("A", "B", "B", "A")
#: What each run reads back from its results folder.
TERMINALS = "games/0.terminals.jsonl"
GAME = "games/0.json"
READ = ("summary.json", "profile.json", TERMINALS, GAME)
#: What a run decided, besides its dialogues: the keys whose values a speed change must keep.
DECIDED_SUMMARY = ("metrics", "head_to_head", "instruction_distribution", "heldout_metrics")
DECIDED_GAME = ("policy", "values", "heldout")
#: The paths whose uncommitted changes make this checkout differ from its HEAD for the job.
CODE_PATHS = ("gtsteer", "Makefile")  # the configs are in gtsteer/configs/
#: The `gtsteer solve` options the job needs from both trees.
NEEDED_OPTIONS = ("--heldout", "--profile")


class AbbaError(Exception):
    """The benchmark cannot run as asked (a bad revision, a reference too old for the job)."""


@dataclass(frozen=True)
class Tree:
    """One side of the comparison: its code letter, checkout, commit and where its gtsteer is
    imported from."""

    code: str
    path: Path
    commit: str
    imported: Path


def job_args(llm: str) -> list[str]:
    """The job after `gtsteer`: the README job (read from this checkout's Makefile) with the
    fresh tree and the profile."""
    return [*benchdoc.demo_args(), "--heldout", "--profile", "-q", "--llm", llm]


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                          check=True).stdout.strip()


def resolve(rev: str, root: Path = benchdoc.ROOT) -> str:
    """The full hash of the commit `rev` names in the repository at `root`."""
    done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                          cwd=root, capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        raise AbbaError(f"--against {rev!r} is not a commit of {root}")
    return done.stdout.strip()


def _stop_on_sigterm() -> contextlib.ExitStack:
    """Until closed, SIGTERM (a killed `flock`, a timeout) raises SystemExit, so the `finally`
    that removes the reference worktree runs; only in the main thread, where signals land."""
    stack = contextlib.ExitStack()
    if threading.current_thread() is threading.main_thread():
        def stop(signum: int, frame: object) -> None:
            raise SystemExit(128 + signum)

        old = signal.signal(signal.SIGTERM, stop)
        stack.callback(signal.signal, signal.SIGTERM, old)
    return stack


@contextlib.contextmanager
def reference_tree(sha: str, root: Path = benchdoc.ROOT) -> Iterator[Path]:
    """A detached worktree of `sha` in a temporary folder for the block; removed (and
    unregistered from `root`'s repository) afterwards, whatever happens in the block."""
    holder = Path(tempfile.mkdtemp(prefix="gtsteer-abba-"))
    path = holder / "reference"
    stop = _stop_on_sigterm()
    try:
        try:
            _git(root, "worktree", "add", "--quiet", "--detach", str(path), sha)
        except subprocess.CalledProcessError as exc:
            raise AbbaError(f"git worktree add of {sha} failed: {exc.stderr.strip()}") from exc
        yield path
    finally:
        stop.close()
        with contextlib.suppress(subprocess.CalledProcessError, OSError):
            _git(root, "worktree", "remove", "--force", str(path))
        shutil.rmtree(holder, ignore_errors=True)
        with contextlib.suppress(subprocess.CalledProcessError, OSError):
            _git(root, "worktree", "prune")


def tree_env(tree: Path, threads: int) -> dict[str, str]:
    """What a run of `tree` adds to the environment: its code first on `sys.path` (the venv's
    editable install of this checkout comes after `PYTHONPATH`), and the thread count."""
    return {"PYTHONPATH": str(tree), "GTSTEER_LOCAL_THREADS": str(threads)}


def _child(command: Sequence[str], tree: Path, env: Mapping[str, str]) -> str:
    full = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "300", **env}
    done = subprocess.run(list(command), cwd=tree, env=full, capture_output=True, text=True)
    if done.returncode != 0:
        raise AbbaError(f"`{' '.join(command)}` failed in {tree}:\n{done.stderr.strip()}")
    return done.stdout


def imported_from(tree: Path, env: Mapping[str, str]) -> Path:
    """Where a child started as a run is (the venv's Python, `tree` as working directory, `env`)
    imports gtsteer from; `-P` leaves the working directory off `sys.path`, as the `gtsteer`
    console script does. It must be `tree`'s own package."""
    out = _child([sys.executable, "-P", "-c", "import gtsteer; print(gtsteer.__file__)"], tree,
                 env)
    imported = Path(out.strip()).resolve()
    if not imported.is_relative_to(tree.resolve()):
        raise AbbaError(f"a run in {tree} would import gtsteer from {imported}, not from {tree}")
    return imported


def missing_options(help_text: str) -> list[str]:
    """The options of `NEEDED_OPTIONS` that `gtsteer solve --help` does not list."""
    return [o for o in NEEDED_OPTIONS if not re.search(rf"(?<![\w-]){o}(?![\w-])", help_text)]


def prepare(code: str, path: Path, commit: str, threads: int) -> Tree:
    """Check that `path` imports its own gtsteer and that its `solve` takes the job's options,
    and byte-compile its package (so no run pays for compiling)."""
    env = tree_env(path, threads)
    imported = imported_from(path, env)
    help_text = _child([str(Path(sys.executable).parent / "gtsteer"), "solve", "--help"], path,
                       env)
    missing = missing_options(help_text)
    if missing:
        raise AbbaError(f"{code} ({commit}) has no `gtsteer solve {' '.join(missing)}`, which"
                        " the job needs (solve --profile came in 2863ce1); compare against a"
                        " later commit")
    _child([sys.executable, "-m", "compileall", "-q", str(path / "gtsteer")], path, env)
    return Tree(code=code, path=path, commit=commit, imported=imported)


def measure(files: Mapping[str, bytes]) -> dict:
    """One run's numbers from the files it wrote: seconds of the README job (the solved tree's
    phases) and of the Table 1 instance (every phase), tokens, and the two digests."""
    profile = json.loads(files["profile.json"])
    phases = profile["phases"]
    solved = [p for name, p in phases.items() if not name.startswith("fresh: ")]
    evaluated = [p.get("prompt_tokens_evaluated") for p in phases.values()]
    summary, game = json.loads(files["summary.json"]), json.loads(files[GAME])
    decided = {"summary": {k: summary.get(k) for k in DECIDED_SUMMARY},
               "game": {k: game.get(k) for k in DECIDED_GAME}}
    return {
        "profiled_s": profile["total_s"],
        "readme_s": round(sum(p["wall_s"] for p in solved), 3),
        "table1_s": round(sum(p["wall_s"] for p in phases.values()), 3),
        "generated": sum(p["completion_tokens"] for p in phases.values()),
        "evaluated": (None if all(e is None for e in evaluated)
                      else sum(e or 0 for e in evaluated)),
        "terminals": digest(files[TERMINALS]),
        "decisions": digest(json.dumps(decided, sort_keys=True,
                                       separators=(",", ":")).encode()),
    }


def run_once(tree: Tree, args: Sequence[str], threads: int) -> dict:
    """The job cold in a fresh process, from `tree`'s code and configs."""
    try:
        wall, files = benchdoc.run_cold(args, tree_env(tree.path, threads), "bench-abba-",
                                        read=READ, cwd=tree.path)
    except subprocess.CalledProcessError as exc:
        raise AbbaError(f"the job failed for {tree.code} ({tree.commit}) with exit status"
                        f" {exc.returncode} (its messages are above)") from exc
    return {"code": tree.code, "commit": tree.commit, "wall_s": round(wall, 2),
            **measure(files)}


def warm_up(tree: Tree, llm: str, threads: int) -> None:
    """One unrecorded run of the job on the `fake` model, plus llama-cpp-python's import for a
    local model: the first measured run would otherwise read from disk what every later run
    finds in the page cache (site-packages, the embedder's files), a cost only run 1 (an A)
    pays. llama-bench before the first run reads the GGUF."""
    benchdoc.run_cold(job_args("fake"), tree_env(tree.path, threads), "bench-abba-warm-",
                      read=(), cwd=tree.path)
    if llama_model(llm):
        _child([sys.executable, "-P", "-c", "import llama_cpp"], tree.path,
               tree_env(tree.path, threads))


def order(rounds: int) -> list[str]:
    """A B B A, `rounds` times."""
    return list(ROUND) * rounds


def llama_model(llm: str) -> str | None:
    """The GGUF llama-bench measures: the model of a `local:` model string, else None."""
    return llm.split(":", 1)[1] if llm.startswith("local:") else None


def run_abba(rev: str, llm: str, threads: int, rounds: int) -> dict:
    """Every run in order, with both trees and llama-bench's rates before and after."""
    sha = resolve(rev)
    b_commit = benchdoc.commit(CODE_PATHS)
    model = llama_model(llm)
    bins = llama_tools.build(("llama-bench",)) if model else None
    args = job_args(llm)
    with reference_tree(sha) as path:
        trees = {"A": prepare("A", path, _git(benchdoc.ROOT, "rev-parse", "--short", sha),
                              threads),
                 "B": prepare("B", benchdoc.ROOT, b_commit, threads)}
        print("warm-up (fake model, not recorded) ...", flush=True)
        warm_up(trees["B"], llm, threads)
        before = reference(bins, model, threads) if bins and model else None
        runs = []
        for i, code in enumerate(order(rounds), 1):
            print(f"run {i}: {code} ({trees[code].commit}) ...", flush=True)
            runs.append({"run": i, **run_once(trees[code], args, threads)})
            print(json.dumps(runs[-1]), flush=True)
        after = reference(bins, model, threads) if bins and model else None
    return {"against": rev, "llm": llm, "threads": threads, "rounds": rounds,
            "trees": {c: {"path": str(t.path), "commit": t.commit, "gtsteer": str(t.imported)}
                      for c, t in trees.items()},
            "runs": runs, "llama_bench": {"before": before, "after": after}}


# ---- the section -----------------------------------------------------------------------------


def ratio(runs: Sequence[Mapping], key: str) -> float:
    """Mean of B's runs over mean of A's runs."""
    def mean(code: str) -> float:
        return statistics.fmean(r[key] for r in runs if r["code"] == code)

    return mean("B") / mean("A")


def ratio_text(value: float) -> str:
    """`ratio B/A = 0.83 (B faster)`; equal at two decimals reads as no difference."""
    shown = f"{value:.2f}"
    verdict = ("no difference at this precision" if shown == "1.00"
               else "B faster" if value < 1 else "B slower")
    return f"ratio B/A = {shown} ({verdict})"


def ratio_line(runs: Sequence[Mapping], key: str, label: str) -> str:
    """The ratio with the per-run values it comes from, so a reader can recompute it."""
    def values(code: str) -> str:
        picked = [r[key] for r in runs if r["code"] == code]
        runs_text = " + ".join(f"{v:.2f}" for v in picked)
        return f"{code}: ({runs_text}) / {len(picked)} = {statistics.fmean(picked):.2f} s"

    return f"- {label}: **{ratio_text(ratio(runs, key))}**; {values('B')} over {values('A')}."


def same_answers(runs: Sequence[Mapping]) -> list[str]:
    """Per run: `reference` for the first A run, else whether both digests equal its."""
    first = next(r for r in runs if r["code"] == "A")
    return ["reference" if r is first else
            "yes" if (r["terminals"], r["decisions"]) == (first["terminals"], first["decisions"])
            else "**no**" for r in runs]


def answers_line(runs: Sequence[Mapping]) -> str:
    """One line on the identity check: a plain yes, or loud about which runs differ."""
    same = same_answers(runs)
    differ = [r for r, s in zip(runs, same, strict=True) if s == "**no**"]
    if not differ:
        return ("Same answers: yes. Every run's dialogues, payoffs, policy and metrics equal the"
                " first A run's.")
    which = ", ".join(f"{r['run']} ({r['code']})" for r in differ)
    parts = []
    if any(r["code"] == "B" for r in differ):
        parts.append("B decided differently from A, so this is not a pure speed change and the"
                     " ratios below compare different work")
    if any(r["code"] == "A" for r in differ):
        parts.append("A's own runs differ from each other, so the job is not deterministic here")
    return f"**Same answers: NO. Runs {which} differ from run 1: {'; '.join(parts)}.**"


def speeds_text(llm: str, before: Mapping | None, after: Mapping | None) -> str:
    if not (llama_model(llm) and before and after):
        return f"llama-bench: not measured (model {llm})."
    return (f"llama-bench on the same GGUF and threads (64-token prompts, 32 generated): "
            f"{before['pp']:.0f} prompt / {before['tg']:.1f} generated tokens/s before the first"
            f" run, {after['pp']:.0f} / {after['tg']:.1f} after the last.")


def _tokens(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def render(result: Mapping, command: str, machine: str) -> str:
    """The `bench_abba` section for `run_abba`'s result."""
    runs, trees = result["runs"], result["trees"]
    llm = result["llm"]
    lines = ["| run | code | commit | wall, process | README job | Table 1 instance | generated"
             " tokens | prompt tokens evaluated | terminals (sha256) | policy and metrics"
             " (sha256) | same answers as run 1 |",
             "|---:|---|---|---:|---:|---:|---:|---:|---|---|---|"]
    for r, same in zip(runs, same_answers(runs), strict=True):
        lines.append(f"| {r['run']} | {r['code']} | {r['commit']} | {r['wall_s']:.1f} s | "
                     f"{r['readme_s']:.1f} s | {r['table1_s']:.1f} s | {_tokens(r['generated'])}"
                     f" | {_tokens(r['evaluated'])} | `{r['terminals']}` | `{r['decisions']}` | "
                     f"{same} |")
    speeds = speeds_text(llm, result["llama_bench"]["before"], result["llama_bench"]["after"])
    job = " ".join(job_args(llm))
    return f"""{START}
## This checkout against a reference commit, ABBA: the README job and a Table 1 instance

Command: `{command}`
Machine: {machine}. A: `{result['against']}` = {trees['A']['commit']}, a temporary worktree;
B: {trees['B']['commit']}, this checkout. Each run: `gtsteer {job}` cold (an empty response
cache, `GTSTEER_LOCAL_THREADS={result['threads']}`) in a fresh process with its tree first on
`PYTHONPATH` and its configs, in the order {' '.join(r['code'] for r in runs)}, after one
unrecorded warm-up run on the `fake` model (run 1 would otherwise pay alone for reading
site-packages from disk). Wall: the whole
process (imports and model load included). README job: the seconds of the solved tree's phases
in its `profile.json`; Table 1 instance: every phase, `--heldout`'s fresh tree included. Tokens
count both trees. Terminals: a hash of every sampled dialogue with its payoffs; policy and
metrics: a hash of the CFR policy, values and metrics. {speeds}

{chr(10).join(lines)}

{answers_line(runs)}

{ratio_line(runs, 'readme_s', 'README job (solved tree)')}
{ratio_line(runs, 'table1_s', 'Table 1 instance (both trees)')}
{ratio_line(runs, 'wall_s', 'whole process')}
{END}"""


def command_line(rev: str, model: str, threads: int, rounds: int, llm: str) -> str:
    """The command the section names (the model lock held, as every model benchmark runs)."""
    extra = "" if llm == f"local:{model}" else f" --llm {llm}"
    return (f"flock /tmp/gtsteer-model.lock .venv/bin/python -m lab abba --against {rev} "
            f"--model {model} --threads {threads} --rounds {rounds}{extra}")


def main(argv: list[str] | None = None) -> None:
    ap = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    ap.add_argument("--against", required=True, metavar="REV",
                    help="The reference commit (A), e.g. the commit before the change.")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1, help="How many times to run A B B A.")
    ap.add_argument("--llm", help="The job's --llm (default local:MODEL); llama-bench runs only"
                                  " for a local model (`fake` makes a quick check of the bench).")
    ap.add_argument("--doc", default=str(benchdoc.DOC))
    ap.add_argument("--no-write", action="store_true", help="Print the section only.")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.threads < 1:
        ap.error("--rounds and --threads: at least 1")
    llm = args.llm or f"local:{args.model}"
    if llama_model(llm) is not None:  # checked before llama-bench is built (minutes)
        try:
            parse_local_model(llm)
        except ModelConfigError as exc:
            ap.error(f"{'--llm' if args.llm else '--model'}: {exc}")
    try:
        result = run_abba(args.against, llm, args.threads, args.rounds)
    except AbbaError as exc:
        raise SystemExit(f"{COMMAND}: error: {exc}") from exc
    print(json.dumps(result), flush=True)
    section = render(result, command_line(args.against, args.model, args.threads, args.rounds,
                                          llm), benchdoc.machine_line())
    print(section)
    if not args.no_write:
        benchdoc.write_section(Path(args.doc), START, END, section)


if __name__ == "__main__":
    main()
