"""How the first message of a dialogue game reads, per model: the share of empty messages
("..."), of third-person narration, and of messages naming the instructed value.

The messages are the game's own (prompt form, stops and cleaning by model kind), sampled as
`gtsteer eval steering` samples them: sample j of each instruction is chance outcome
j mod S of instance j div S, so the two share cache entries. Prints a markdown table and, with
--json, writes the messages too.

    flock /tmp/gtsteer-model.lock .venv/bin/python scripts/measure_messages.py \
        configs/schedule_meeting_dow.yaml --llm local:qwen2.5-coder-0.5b --samples 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time

from gtsteer.binding import ANY, make_game, make_instance
from gtsteer.domains import load_spec
from gtsteer.llm import LLM
from gtsteer.llm.speech import is_narration

EMPTY = "..."


def mentions(message: str, value: str) -> bool:
    return re.search(rf"\b{re.escape(value)}\b", message, re.IGNORECASE) is not None


async def first_messages(config: str, model: str, samples: int, seed: int) -> list[dict]:
    spec = load_spec(config)
    llm = LLM(model)
    per_seed = spec.num_llm_seeds
    games = [make_game(spec, make_instance(spec, i, seed), llm, config=config, seed=seed)
             for i in range(-(-samples // per_seed))]
    (key,) = spec.actions  # one action key (the day or tone configs)
    values = list(spec.actions[key])
    speaker = games[0].first_player
    nodes = [(v, *divmod(j, per_seed)) for v in values for j in range(samples)]

    async def one(value: str, index: int, outcome: int) -> dict:
        game = games[index]
        action = game.instructions(speaker).index(value)
        text = await game.amessage((action, outcome), list(game.opening_turns), speaker, value)
        name = game.instance.names[speaker]
        return {"instructed": value, "instance": index, "outcome": outcome, "speaker": name,
                "message": text, "empty": text == EMPTY, "narration": is_narration(text, name),
                "mentions": None if value == ANY else mentions(text, value),
                "echo": (action, outcome) in game.echoes}

    return list(await asyncio.gather(*(one(*n) for n in nodes)))


def summary(rows: list[dict]) -> dict:
    guided = [r for r in rows if r["instructed"] != ANY]
    share = lambda flag, rs: sum(r[flag] for r in rs) / max(1, len(rs))
    return {"messages": len(rows), "empty": share("empty", rows),
            "narration": share("narration", rows), "echo": share("echo", rows),
            "mention_rate": share("mentions", guided)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("--llm", action="append", required=True, help="repeat for several models")
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    out = {}
    print("| model | messages | empty | third person / stage direction | echo stripped | "
          "names the instructed value | s |")
    print("|---|---|---|---|---|---|---|")
    for model in args.llm:
        t0 = time.perf_counter()
        rows = asyncio.run(first_messages(args.config, model, args.samples, args.seed))
        s = summary(rows)
        out[model] = {"summary": s, "rows": rows}
        print(f"| `{model}` | {s['messages']} | {s['empty']:.0%} | {s['narration']:.0%} | "
              f"{s['echo']:.0%} | {s['mention_rate']:.0%} | {time.perf_counter() - t0:.0f} |",
              flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
