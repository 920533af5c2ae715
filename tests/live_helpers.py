"""A domain with known payoffs and a greedy hook for `gtsteer evaluate`'s tests, and a tiny
distilled policy of it. Not a test module; imported by tests (and by the subprocess of the
kill -9 test, which puts tests/ on sys.path).

The game is tests/data/mixed_2x2.yaml (one message each, payoffs read off the two
instructions) under a domain that adds a greedy hook (always `a`), so every condition of the
evaluation has a known, instruction-decided payoff on the fake model.
"""

from __future__ import annotations

from pathlib import Path

from solve_helpers import MIXED_2X2, mixed_2x2_utility

from gtsteer.binding import Domain, expand_sync, make_game, make_instance
from gtsteer.domains import load_spec, register_domain
from gtsteer.imitation import TrainConfig, train_policy
from gtsteer.imitation.build import label_policy, records_from_game
from gtsteer.llm import LLM
from gtsteer.solvers import solve_cfr


def always_a(spec: object, info: dict[str, str]) -> dict[str, str]:
    """The greedy hook: `a` whatever one knows (a module function: a Ray task pickles it)."""
    return {"move": "a"}


LIVE_DOMAIN = register_domain(Domain(name="test_live_2x2", utility=mixed_2x2_utility,
                                     greedy=always_a))


def live_config(folder: Path, domain: str = "test_live_2x2") -> Path:
    """mixed_2x2.yaml under `domain` (default: the one with a greedy hook)."""
    text = MIXED_2X2.read_text(encoding="utf-8").replace("domain: test_mixed_2x2",
                                                         f"domain: {domain}")
    path = folder / f"live_{domain}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def live_policy(config: Path, folder: Path, train: tuple[int, ...] = (0,)) -> Path:
    """A tiny `struct` policy trained on the CFR solutions of instances `train` (seed 0)."""
    spec = load_spec(config)
    records = []
    for index in train:
        game = make_game(spec, make_instance(spec, index), LLM("fake"))
        expand_sync(game, progress=False)
        solved = solve_cfr(game, solver="cfr+", iterations=50)
        records += records_from_game(game, label_policy(solved.policy, game, solved.players),
                                     index)
    policy, _ = train_policy(records, None, TrainConfig(
        steps=20, batch=8, hidden=(8,), holdout=0.0, features="struct", curve_points=1),
        domain=spec.name)
    return policy.save(folder)
