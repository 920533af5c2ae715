"""Same config and seed, same instances and tree in any process (PYTHONHASHSEED varied)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from binding_support import FRUIT, fruit_spec

from gtsteer.binding import generate_instances, make_instance

SCRIPT = f"""
import hashlib, json
from gtsteer.binding import generate_instances
from gtsteer.domains import load_game, load_spec
spec = load_spec({str(FRUIT)!r})
print(json.dumps([i.model_dump() for i in generate_instances(spec, 5, seed=3)], sort_keys=True))
game = load_game({str(FRUIT)!r}, llm="fake", instance=2, seed=3)
state = game.new_initial_state()
for a in [1, 1, 2, 0]:
    state.apply_action(a)
blob = json.dumps([state.information_state_string(0), [t.model_dump() for t in state.turns],
                   state.returns()])
print(hashlib.sha256(blob.encode()).hexdigest())
"""


def _run(hash_seed: str, cache: Path) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "GTSTEER_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout


def test_instances_and_transcripts_identical_across_processes(tmp_path: Path) -> None:
    # Separate caches: the second process must regenerate everything, not read the first's.
    first = _run("1", tmp_path / "a")
    second = _run("987", tmp_path / "b")
    assert first == second
    assert len(first.splitlines()) == 2


def test_instances_depend_on_seed_and_index_only() -> None:
    spec = fruit_spec()
    five = generate_instances(spec, 5, seed=0)
    assert [i.index for i in five] == list(range(5))
    assert five[3] == make_instance(spec, 3, seed=0)
    assert five != generate_instances(spec, 5, seed=1)
    assert len({i.seed for i in five}) == 5
    for inst in five:
        assert len(set(inst.names)) == 2
        assert set(inst.private_info[0]) == {"fruits_owned", "fruit_values"}


def test_instances_from_examples_without_generator() -> None:
    spec = fruit_spec(
        domain=None,
        private_info={"mood": ["happy", "sad", "tired"], "goal": ["win", "share"]},
    )
    insts = generate_instances(spec, 20, seed=0)
    moods = {i.private_info[p]["mood"] for i in insts for p in (0, 1)}
    assert moods == {"happy", "sad", "tired"}


def test_serialized_state_loads_in_another_process(tmp_path: Path) -> None:
    import pyspiel

    from gtsteer.domains import load_game

    game = load_game(str(FRUIT), llm="fake", instance=1)
    state = game.new_initial_state()
    for a in [2, 1, 0]:
        state.apply_action(a)
    blob = pyspiel.serialize_game_and_state(game, state)
    (tmp_path / "state.txt").write_text(blob)
    script = (
        "import sys, pyspiel, gtsteer.domains\n"
        "game, state = pyspiel.deserialize_game_and_state("
        f"open({str(tmp_path / 'state.txt')!r}).read())\n"
        "print(state.information_state_string(0))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "5"}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.rstrip("\n") == state.information_state_string(0)
