"""Record the playthrough regression files: one full game of every config with the fake model.

    .venv/bin/python scripts/record_playthroughs.py            # every configs/*.yaml
    .venv/bin/python scripts/record_playthroughs.py configs/x.yaml
    .venv/bin/python scripts/record_playthroughs.py --werewolf  # the playstyle game

Writes tests/data/playthroughs/<config stem>.txt: a header naming the config, the game's
parameters and the model, then every step with the action taken (chance by its probabilities,
players uniformly from seed 0). tests/test_conformance.py replays the recorded actions and
compares byte for byte, so after a deliberate change to prompts, the binding or the fake model
a rerun shows a local diff: read it before committing, it shows what a player sees at every
step. `--werewolf` records the Werewolf playstyle game built by tests/test_werewolf_steering.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "playthroughs"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", type=Path, help="default: configs/*.yaml")
    parser.add_argument("--werewolf", action="store_true", help="the playstyle game only")
    args = parser.parse_args(argv)
    # A private response cache: the recording must not depend on (or fill) the user's cache.
    os.environ["GTSTEER_CACHE_DIR"] = tempfile.mkdtemp(prefix="playthroughs-")
    sys.path.insert(0, str(ROOT))
    OUT.mkdir(parents=True, exist_ok=True)
    if args.werewolf:
        sys.path.insert(0, str(ROOT / "tests"))
        from test_werewolf_steering import PLAYTHROUGH, record_playstyle_playthrough

        PLAYTHROUGH.write_text(record_playstyle_playthrough(), encoding="utf-8")
        print(f"wrote {PLAYTHROUGH.relative_to(ROOT)}")
        return 0
    configs = args.configs or sorted((ROOT / "configs").glob("*.yaml"))
    for config in configs:
        target = OUT / f"{Path(config).stem}.txt"
        target.write_text(record_config(Path(config)), encoding="utf-8")
        print(f"wrote {target.relative_to(ROOT)}")
    return 0


def record_config(config: Path, model: str = "fake") -> str:
    """The playthrough of instance 0 of `config`, as configured; the header names the config
    by its path in the repository, so the file replays from any checkout."""
    from gtsteer.checks import playthrough
    from gtsteer.domains import load_game

    path = config.resolve().relative_to(ROOT).as_posix()
    game = load_game(ROOT / path, llm=model, instance=0)
    params = {k: v for k, v in game.get_parameters().items() if k != "key"}
    params["config"] = path  # the live key and the absolute path say nothing to a reader
    header = {"config": path, "model": model, "params": json.dumps(params, sort_keys=True),
              "domain": game.spec.domain or "(none)",
              "instance": game.instance.model_dump_json()}
    return playthrough(game, header, seed=0)


if __name__ == "__main__":
    raise SystemExit(main())
