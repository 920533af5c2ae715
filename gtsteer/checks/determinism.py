"""Determinism across processes (PettingZoo's `seed_test`): the same inputs build the same
game, history by history, whatever the process's hash seed and with an empty cache.

The game comes from a `module:function` that a fresh interpreter imports and calls, so
anything that leaks process state into the tree (set or dict order under PYTHONHASHSEED, a
warm response cache, a global counter) shows up as two different digests.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pyspiel

from gtsteer.checks.errors import fail

#: Histories a digest covers at most (depth-first order), so a big tree stays cheap.
MAX_HISTORIES = 2000

_CHILD = """
import importlib, sys
from gtsteer.checks.determinism import tree_digest
module, _, function = sys.argv[1].partition(":")
print(tree_digest(getattr(importlib.import_module(module), function)(), int(sys.argv[2])))
"""


def tree_digest(game: pyspiel.Game, max_histories: int = MAX_HISTORIES) -> str:
    """SHA-256 over the first `max_histories` histories, depth first: each state's string,
    every player's information state at decision nodes, chance outcomes and returns."""
    digest = hashlib.sha256()
    stack, seen = [game.new_initial_state()], 0
    while stack and seen < max_histories:
        s = stack.pop()
        seen += 1
        item: list = [s.history(), str(s)]
        if s.is_terminal():
            item.append(s.returns())
        elif s.is_chance_node():
            item.append(s.chance_outcomes())
            stack.extend(s.child(a) for a, _ in reversed(s.chance_outcomes()))
        else:
            item.append([s.information_state_string(p) for p in range(game.num_players())])
            stack.extend(s.child(a) for a in reversed(s.legal_actions()))
        digest.update(json.dumps(item, default=str).encode())
    return digest.hexdigest()


def determinism_check(
    factory: str,
    name: str = "<game>",
    *,
    hash_seeds: Sequence[str] = ("1", "987"),
    max_histories: int = MAX_HISTORIES,
) -> str:
    """Build `factory` ("module:function", returning a pyspiel game) in one fresh process per
    hash seed, each with its own empty response cache, and compare the tree digests; returns
    the digest, raises `ConformanceError` when two processes disagree."""
    path = os.pathsep.join(p for p in sys.path if p)
    digests: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="gtsteer-determinism-") as tmp:
        for seed in hash_seeds:
            env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": path,
                   "GTSTEER_CACHE_DIR": str(Path(tmp) / f"cache-{seed}")}
            out = subprocess.run([sys.executable, "-c", _CHILD, factory, str(max_histories)],
                                 env=env, capture_output=True, text=True, check=False)
            if out.returncode != 0:
                tail = (out.stderr.strip().splitlines() or ["(no output)"])[-1]
                raise fail(name, "determinism", f"{factory} failed in a fresh process: {tail}")
            digests[seed] = out.stdout.strip().splitlines()[-1]
    if len(set(digests.values())) != 1:
        raise fail(name, "determinism", f"tree digests differ by PYTHONHASHSEED: {digests}")
    return next(iter(digests.values()))
