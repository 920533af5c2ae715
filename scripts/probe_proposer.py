"""What a PSRO proposer answers to the shotgun prompt, with two kinds of answer example.

The proposer prompt (`gtsteer.solvers.psro.prompts`) shows a two-value answer example drawn by
the call's seed from a pool of tone words (`pool`, what `gtsteer psro` sends). `placeholder`
shows the format only, with placeholders naming the key (`["<new day>", "<another new day>"]`).
For each model, variant and seed this asks once, with the proposer's own temperature and token
limit, no cache, and prints one JSON line: the example shown and the values answered, and how
many of them are new (not listed, not the example, not a placeholder).

    flock /tmp/gtsteer-model.lock .venv/bin/python scripts/probe_proposer.py \
        [--config configs/schedule_meeting_dow.yaml] [--models local,local:qwen2.5-coder-0.5b]
        [--seeds 4]
"""

from __future__ import annotations

import argparse
import json

from gtsteer.binding import read_spec
from gtsteer.llm import LLM, LLMError
from gtsteer.solvers.psro import prompts
from gtsteer.solvers.psro.candidates import canonical
from gtsteer.solvers.psro.oracles import PROPOSER_MAX_TOKENS, PROPOSER_TEMPERATURE

ROLE_PLAYER = 0  # the proposer's player, as `--oracle-player 0`


def new_values(answer: list[str], listed: list[str], example: list[str]) -> list[str]:
    """Answered values that are neither listed, nor the example, nor a placeholder."""
    seen = {canonical(v) for v in [*listed, *example]}
    return [v for v in answer if canonical(v) not in seen and "<" not in v]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/schedule_meeting_dow.yaml")
    ap.add_argument("--models", default="local,local:qwen2.5-coder-0.5b")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--candidates", type=int, default=3)
    args = ap.parse_args()
    spec = read_spec(args.config)
    key = next(iter(spec.actions))
    listed = list(spec.actions[key])
    role = spec.players[ROLE_PLAYER]
    for model in [m.strip() for m in args.models.split(",") if m.strip()]:
        llm = LLM(model, use_cache=False)
        for variant in ("pool", "placeholder"):
            for seed in range(args.seeds):
                example = (prompts.example_values(seed, listed) if variant == "pool"
                           else [f"<new {key}>", f"<another new {key}>"])
                prompt = prompts.instructions_prompt(spec, key, role, listed, args.candidates,
                                                     example)
                try:
                    answer = llm.structured_sync(
                        prompt, prompts.ProposalList, seed=seed, temperature=PROPOSER_TEMPERATURE,
                        max_tokens=PROPOSER_MAX_TOKENS, attempts=1).value.instructions
                    row = {"answer": answer, "new": new_values(answer, listed, example)}
                except LLMError as exc:
                    row = {"error": f"{type(exc).__name__}: {str(exc)[:160]}"}
                print(json.dumps({"model": model, "variant": variant, "seed": seed,
                                  "example": example, **row}), flush=True)


if __name__ == "__main__":
    main()
