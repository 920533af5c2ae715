"""Record the playthrough regression files: one full game of every config with the fake model.

    python -m lab playthroughs                  # every gtsteer/configs/*.yaml
    python -m lab playthroughs gtsteer/configs/x.yaml
    python -m lab playthroughs --werewolf       # the Werewolf playstyle game

Writes tests/data/playthroughs/<config stem>.txt: a header naming the config, the game's
parameters and the model, then every step with the action taken (chance by its probabilities,
players uniformly from seed 0). tests/project/test_conformance.py replays the recorded actions and
compares byte for byte, so after a deliberate change to prompts, the binding or the fake model
a rerun shows a local diff: read it before committing, it shows what a player sees at every
step. `--werewolf` records the Werewolf playstyle game built here (`playstyle_game`), which
tests/werewolf/test_werewolf_steering.py replays.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from gtsteer.checks import dialogue_playthrough, playthrough
from gtsteer.domains import load_game
from gtsteer.werewolf.engine import pending
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.playstyles import UNSTEERED
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import GameConfig, GameState
from gtsteer.werewolf.steer_game import PlaystyleGame, PlaystyleGameConfig
from gtsteer.werewolf.store import GameStore
from lab.bench import benchdoc

COMMAND = "python -m lab playthroughs"
ROOT = benchdoc.ROOT
OUT = ROOT / "tests" / "data" / "playthroughs"
#: The Werewolf playstyle game's recording.
PLAYTHROUGH = OUT / "werewolf_playstyle.txt"
#: Where the playthrough's root state comes from (its header says so too).
PLAYSTYLE_ROOT = ("lab/studies/playthroughs.py: discussion_states(seed=1)[1] (7 players, "
                  "1 day, 4 messages a day, fake models)")


def main(argv: list[str] | None = None) -> int:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", type=Path, help="default: gtsteer/configs/*.yaml")
    parser.add_argument("--werewolf", action="store_true", help="the playstyle game only")
    args = parser.parse_args(argv)
    # A private response cache: the recording must not depend on (or fill) the user's cache.
    os.environ["GTSTEER_CACHE_DIR"] = tempfile.mkdtemp(prefix="playthroughs-")
    OUT.mkdir(parents=True, exist_ok=True)
    if args.werewolf:
        PLAYTHROUGH.write_text(record_playstyle_playthrough(), encoding="utf-8")
        print(f"wrote {PLAYTHROUGH.relative_to(ROOT)}")
        return 0
    configs = args.configs or sorted((ROOT / "gtsteer" / "configs").glob("*.yaml"))
    outside = [str(c) for c in configs if not c.resolve().is_relative_to(ROOT)]
    if outside:  # its recording belongs beside the config, not in this repository's tests
        parser.error(f"{', '.join(outside)} is outside this repository: record it with "
                     "`gtsteer check CONFIG --record FILE`")
    for config in configs:
        target = OUT / f"{Path(config).stem}.txt"
        target.write_text(record_config(Path(config)), encoding="utf-8")
        print(f"wrote {target.relative_to(ROOT)}")
    return 0


def record_config(config: Path, model: str = "fake") -> str:
    """The playthrough of instance 0 of `config`, as configured; the header names the config
    by its path in the repository, so the file replays from any checkout."""
    path = config.resolve().relative_to(ROOT).as_posix()
    return dialogue_playthrough(load_game(ROOT / path, llm=model, instance=0), path)


# ---- the Werewolf playstyle game -------------------------------------------------------------


def discussion_states(store: GameStore, seed: int = 1) -> list[GameState]:
    """The discussion states at which someone is about to speak, in one fake-model Werewolf
    game (7 players, 1 day, 4 messages a day) logged in `store`."""
    found: list[GameState] = []

    def grab(_b, after: GameState, _d) -> None:
        want = pending(after)
        if after.phase == "discussion" and want is not None and want.kind == "speak":
            found.append(after)

    state = create_game(store, GameConfig(n_players=7, max_days=1, max_messages_per_day=4),
                        seed=seed, game_id=f"log{seed}")
    GameRunner(store, on_step=grab).run(state)
    return found


def playstyle_game(store_dir: Path, config: PlaystyleGameConfig | None = None) -> PlaystyleGame:
    """The playstyle game of the tests and of the recorded playthrough (by default 2 LLM
    seeds and the styles trickster, balanced and unsteered)."""
    root = discussion_states(GameStore(store_dir / "g.sqlite"))[1]
    config = config or PlaystyleGameConfig(num_llm_seeds=2,
                                           styles=["trickster", "balanced", UNSTEERED])
    return PlaystyleGame(root, LLMPool(), config)


def record_playstyle_playthrough() -> str:
    """The playthrough file of the playstyle game (`python -m lab playthroughs --werewolf`)."""
    with tempfile.TemporaryDirectory() as tmp:
        game = playstyle_game(Path(tmp))
        header = {"config": game.config.model_dump_json(), "model": game.predictor,
                  "params": json.dumps({"speakers": game.speakers, "teams": game.teams}),
                  "root": PLAYSTYLE_ROOT}
        return playthrough(game, header, seed=0)


if __name__ == "__main__":
    raise SystemExit(main())
