"""How the embedded models' Werewolf games read: distinct, cut and out-of-character lines, echoes
and time per game, one cold bot-only game per model (`lab.bench.line_quality`).

Each model plays the same game (7 players, seed 0, 2 days, 6 discussion turns a day) through
the CLI, one at a time, each with an empty response cache of its own, so every call is a real
model call. The games stay in OUT/<model>/werewolf.sqlite; `--read` measures stored games again
without playing. Writes its section of docs/BENCHMARKS.md.

    flock /tmp/gtsteer-model.lock .venv/bin/python -m lab werewolf-lines \
        --models smollm2-135m,qwen2.5-coder-0.5b,gemma3-270m,qwen2.5-coder-1.5b \
        --out results/wwlines
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from lab.bench import benchdoc

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab werewolf-lines"

GAME = ["--players", "7", "--max-days", "2", "--max-messages", "6"]
GAME_ID = "g0"
#: Prepended to each model name (`local:smollm2-135m`); tests play `fake` with "".
MODEL_PREFIX = "local:"


def play(model: str, folder: Path, code: Path, seed: int = 0) -> float:
    """One cold game (seed `seed`) of `local:<model>` (`MODEL_PREFIX`) into `folder`, played by
    the gtsteer checkout at `code`; its wall time in seconds."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "werewolf.sqlite"
    db.unlink(missing_ok=True)
    env = {**os.environ, "GTSTEER_CACHE_DIR": str(folder / "cache"), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(code),
           "GTSTEER_MODEL_DIR": os.environ.get(
               "GTSTEER_MODEL_DIR", str(Path.home() / ".cache" / "gtsteer" / "models"))}
    cmd = [sys.executable, "-m", "gtsteer", "werewolf", "play", *GAME, "--seed", str(seed),
           "--llm", f"{MODEL_PREFIX}{model}", "--db", str(db), "--game-id", GAME_ID]
    t0 = time.perf_counter()
    with (folder / "play.log").open("w") as log:
        subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, check=True, cwd=code)
    wall = time.perf_counter() - t0
    (folder / "wall_s").write_text(f"{wall:.1f}\n")
    return wall


def game_times(db: Path) -> tuple[str, float]:
    """When the game was created (UTC) and the seconds from then to its last committed step
    (model loading not included)."""
    with sqlite3.connect(db) as c:
        (created,) = c.execute("SELECT created_at FROM games WHERE id=?", (GAME_ID,)).fetchone()
        (last,) = c.execute("SELECT MAX(created_at) FROM steps WHERE game_id=?",
                            (GAME_ID,)).fetchone()
    when = dt.datetime.fromtimestamp(created, dt.UTC)
    return f"{when:%Y-%m-%d %H:%M}", float(last - created)


def game_folder(out: Path, model: str, seed: int) -> Path:
    """OUT/<model> for seed 0 (the layout before `--seeds`), OUT/<model>-seed<k> otherwise."""
    return out / (model if seed == 0 else f"{model}-seed{seed}")


def measure(model: str, folder: Path, seed: int = 0) -> dict:
    from gtsteer.werewolf.bots import SPEAK_TOKENS, token_budget
    from gtsteer.werewolf.store import GameStore
    from lab.bench.line_quality import read_lines

    db = folder / "werewolf.sqlite"
    store = GameStore(db)
    state = store.load(GAME_ID)
    calls = store.calls(GAME_ID)
    report = read_lines(store.steps(GAME_ID), calls, token_budget(SPEAK_TOKENS, small=True),
                        config=state.config,
                        wolves=state.wolves())
    wall = folder / "wall_s"
    played, seconds = game_times(db)
    return {"model": model, "seed": seed, "report": report.model_dump(),
            "game_s": round(seconds, 1),
            "played": played,
            "wall_s": float(wall.read_text()) if wall.exists() else None,
            "calls": len(calls), "days": state.day, "winner": state.winner,
            "end_reason": state.end_reason}


def pct(n: int | None, of: int) -> str:
    """`n/of (share)`; "n/r" for a count not recorded (a first try of a game stored before)."""
    if n is None:
        return "n/r"
    return f"{n}/{of} ({n / of:.0%})" if of else "0/0"


COUNTS = ("lines", "distinct", "cut", "out_of_character", "empty", "echoes", "resampled",
          "at_limit", "speak_calls")


def first_try(report: dict, flag: str) -> int | None:
    """A count of the lines' first tries, before the resample guard (None: not recorded;
    absent from rows measured before they were counted)."""
    return report.get(f"first_try_{flag}")


def summed(games: list[dict], flag: str) -> int | None:
    counts = [first_try(g["report"], flag) for g in games]
    return None if None in counts else sum(c for c in counts if c is not None)


def rates(r: dict, n: int, first: dict[str, int | None]) -> str:
    """The distinct, cut, out-of-character and empty cells, each guarded count beside its first
    try's."""
    return (f"{pct(r['distinct'], n)} | {pct(first['distinct'], n)} | {pct(r['cut'], n)} | "
            f"{pct(first['cut'], n)} | {pct(r['out_of_character'], n)} | "
            f"{pct(r['empty'], n)} | {pct(first['empty'], n)}")


def total_row(model: str, games: list[dict]) -> str:
    """One model's games summed (a share over all their lines), before the per-game rows."""
    t = {k: sum(g["report"].get(k, 0) for g in games) for k in COUNTS}
    n = t["lines"]
    first = {flag: summed(games, flag) for flag in ("distinct", "cut", "empty")}
    mean_s = sum(g["game_s"] for g in games) / len(games)
    return (f"| `{model}`, all {len(games)} games | {n} | {rates(t, n, first)} | "
            f"{t['echoes']} | {t['resampled']} | {pct(t['at_limit'], t['speak_calls'])} | "
            f"{mean_s:.0f} s a game | | |")


def seed_note(row: dict) -> str:
    return f" seed {row['seed']}" if row.get("seed") else ""


def section_name(label: str) -> str:
    return "werewolf_lines" + (f"_{label}" if label else "")


def render(rows: list[dict], command: str, commit: str, label: str = "") -> str:
    table = [("| model | lines | distinct | first try distinct | cut mid-sentence | "
              "first try cut | out of character | empty | first try empty | "
              "echoes stripped | resampled | speak calls at the token limit | "
              "time per game (wall) | result | played (UTC) |"),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    examples = []
    for model in dict.fromkeys(row["model"] for row in rows):
        games = [row for row in rows if row["model"] == model]
        if len(games) > 1:
            table.append(total_row(model, games))
    for row in rows:
        r, n = row["report"], row["report"]["lines"]
        wall = f" ({row['wall_s']:.0f} s)" if row["wall_s"] else ""
        first = {flag: first_try(r, flag) for flag in ("distinct", "cut", "empty")}
        table.append(
            f"| `{row['model']}`{seed_note(row)} | {n} | {rates(r, n, first)} | {r['echoes']} | "
            f"{r.get('resampled', 0)} | "
            f"{pct(r['at_limit'], r['speak_calls'])} | {row['game_s']:.0f} s{wall} | "
            f"{row['winner'] or 'no winner'} after day {row['days']} "
            f"({row['end_reason'] or 'unfinished'}) | {row['played']} |")
        for flag, lines in r["examples"].items():
            said = " / ".join(json.dumps(line, ensure_ascii=False) for line in lines)
            examples += [f"- `{row['model']}`{seed_note(row)} {flag.replace('_', ' ')}: {said}"]
    start, end = benchdoc.markers(section_name(label))
    title = "Werewolf: how each embedded model's game reads" + (f" ({label})" if label else "")
    return f"""{start}
## {title}

Command: `{command}`
Machine: {benchdoc.machine_line(commit=commit)}. One cold game per model and seed (7 players,
seed 0 unless the row names another, 2 days, 6 discussion turns a day, an empty response cache
each), played one at a time. Lines are the bots' public lines (introductions and turns;
`lab.bench.line_quality` says what each column counts; *resampled*: extra samples for
lines that came out empty, repeated or cut). Distinct, cut and empty count the lines kept, after
that guard resampled exactly those failures; the *first try* columns count each line's first
sample instead (n/r: a game stored before first tries were kept). Time per game: from the
game's creation to its last step; in brackets the command's wall time, model loading included.

{chr(10).join(table)}

Flagged lines (the first of each kind per game):

{chr(10).join(examples) or "- none"}
{end}"""


def main(argv: list[str] | None = None) -> None:
    ap = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    ap.add_argument("--models", default="smollm2-135m,qwen2.5-coder-0.5b",
                    help="Embedded model names (`local:<name>`), comma-separated.")
    ap.add_argument("--out", default="/tmp/werewolf-lines", help="One folder per model.")
    ap.add_argument("--read", action="store_true", help="Measure the stored games; play none.")
    ap.add_argument("--code", default=str(benchdoc.ROOT),
                    help="The gtsteer checkout that plays (e.g. a worktree of an older commit, "
                    "for a before/after); the measuring is this checkout's.")
    ap.add_argument("--seeds", default="0", help="Game seeds, comma-separated (a game each).")
    ap.add_argument("--label", default="", help="Names this run in the doc's table.")
    ap.add_argument("--doc", default=str(benchdoc.DOC))
    ap.add_argument("--json", default=None, help="Also write the numbers here.")
    args = ap.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    out = Path(args.out)
    code = Path(args.code).resolve()
    commit = benchdoc.commit(["gtsteer"], root=code)
    rows = []
    seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
    for model in models:
        for seed in seeds:
            folder = game_folder(out, model, seed)
            if not args.read:
                print(f"{model} seed {seed}: playing ...", flush=True)
                print(f"{model} seed {seed}: {play(model, folder, code, seed):.0f} s", flush=True)
            rows.append(measure(model, folder, seed))
    command = (f"flock /tmp/gtsteer-model.lock .venv/bin/python -m lab werewolf-lines "
               f"--models {','.join(models)} --out {args.out}" + (" --read" if args.read else "")
               + (f" --seeds {args.seeds}" if seeds != [0] else "")
               + (f" --code {args.code}" if code != benchdoc.ROOT else "")
               + (f" --label {args.label}" if args.label else ""))
    section = render(rows, command, commit, args.label)
    print(section)
    benchdoc.write_section(Path(args.doc), *benchdoc.markers(section_name(args.label)), section)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
