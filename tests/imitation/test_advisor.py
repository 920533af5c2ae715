"""The advisor: a distilled policy asked about a live dialogue sees what it was trained on.

The dataset is built on the fake model by the dataset builder itself (a solved fruit-trading
game with two messages each, an opening, and a dealt variant), so every record carries the
dialogue it was made from; the advisor must rebuild each record's input from that dialogue byte
for byte, for policies of every feature mode.
"""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path

import numpy as np
import pytest
from binding_support import fruit_spec
from pydantic import ValidationError

import gtsteer
from gtsteer.binding import expand_sync, make_game, make_instance
from gtsteer.imitation import (
    ActionSetMismatchError,
    Advisor,
    Dialogue,
    Line,
    PolicyError,
    PolicyInput,
    TrainConfig,
    train_policy,
)
from gtsteer.imitation.advisor import DialogueMismatchError, DomainMismatchError, draw
from gtsteer.imitation.build import label_policy, records_from_game
from gtsteer.llm import LLM
from gtsteer.llm.embed import Embedder
from gtsteer.solvers import solve_cfr

ROOT = Path(__file__).resolve().parents[2]
OPENING = "{name0} and {name1} meet at the market to trade fruit."


def hash_embedder(dim: int = 8) -> Embedder:
    """Deterministic vectors from each text's hash (no model to load)."""

    def encode(texts: list[str]) -> np.ndarray:
        rows = [np.random.default_rng(int.from_bytes(
            hashlib.sha256(t.encode()).digest()[:4], "big")).standard_normal(dim) for t in texts]
        return np.asarray(rows, np.float32)

    return Embedder("test-hash", dim, encode, cache=False)


def solved_records(spec, index: int = 0):
    game = make_game(spec, make_instance(spec, index), LLM("fake"))
    expand_sync(game, progress=False)
    result = solve_cfr(game, solver="cfr+", iterations=20)
    return records_from_game(game, label_policy(result.policy, game, result.players), index)


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GTSTEER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        plain = fruit_spec(num_max_replies=2, num_llm_seeds=1, opening=OPENING)
        dealt = plain.with_deals(2)
        yield {"plain": (plain, solved_records(plain)), "dealt": (dealt, solved_records(dealt))}


def tiny_policy(spec, records, features: str):
    policy, _ = train_policy(records, hash_embedder(), TrainConfig(
        steps=3, batch=8, hidden=(8,), holdout=0.0, features=features, curve_points=1),
        domain=spec.name)
    return policy


@pytest.mark.parametrize("deal", ["plain", "dealt"])
@pytest.mark.parametrize("features", ["text", "struct", "both"])
def test_the_advisor_rebuilds_every_record_input_from_its_dialogue(specs, deal, features):
    spec, records = specs[deal]
    policy = tiny_policy(spec, records, features)
    advisor = Advisor(spec, policy)
    # decisions after own earlier messages (past instructions) and a second deal are covered
    assert max(r.metadata["own_decisions"] for r in records) == 1
    assert len({r.text.split("\n")[1] for r in records if r.player == 0}) == (
        2 if deal == "dealt" else 1)
    for record in records:
        dialogue = Dialogue.model_validate(record.metadata["dialogue"])
        view = advisor.policy_input(dialogue)
        assert view.text == record.text
        assert view.features == (record.features if features != "text" else None)
        wanted = policy.probs(record.text, record.features if features != "text" else None,
                              actions=record.actions)
        assert advisor.advise(dialogue) == wanted


def test_a_record_dialogue_holds_only_what_its_speaker_knows(specs):
    spec, records = specs["dealt"]
    for record in records:
        dialogue = Dialogue.model_validate(record.metadata["dialogue"])
        assert dialogue.speaker == record.player
        assert dialogue.opening is not None and dialogue.opening.instruction is None
        assert all(m.instruction is None for m in dialogue.messages if m.speaker != record.player)
        assert all(m.instruction in spec.instructions()
                   for m in dialogue.messages if m.speaker == record.player)


def test_a_live_dialogue_from_an_instance_equals_the_game_s(specs):
    spec, records = specs["plain"]
    advisor = Advisor(spec, tiny_policy(spec, records, "both"))
    # the opening is the proposer's, so the responder decides first and the proposer second
    record = next(r for r in records if r.player == 0 and r.metadata["replies"] == 1)
    said = Dialogue.model_validate(record.metadata["dialogue"]).messages[0]
    instance = advisor.instance(0)
    for who in (0, instance.names[0], "proposer"):
        live = advisor.dialogue(instance, who, [(instance.names[1], said.text)])
        assert advisor.policy_input(live) == PolicyInput(text=record.text,
                                                         features=record.features)
    assert advisor.dialogue(instance, 0, [Line(speaker=1, text=said.text)]) == live
    probs = advisor.advise(live)
    assert list(probs) == spec.instructions() and sum(probs.values()) == pytest.approx(1.0)
    picks = [advisor.choose(live, random.Random(s)) for s in range(5)]
    assert picks == [draw(probs, random.Random(s).random()) for s in range(5)]
    assert advisor.choose(live, np.random.default_rng(3)) == draw(
        probs, np.random.default_rng(3).random())


def test_mismatches_are_typed_errors(specs):
    spec, records = specs["plain"]
    policy = tiny_policy(spec, records, "both")
    other = fruit_spec(num_max_replies=2, num_llm_seeds=1, opening=OPENING,
                       name="another_fruit_config")
    with pytest.raises(DomainMismatchError, match="another_fruit_config"):
        Advisor(other, policy)
    fewer = fruit_spec(num_max_replies=2, num_llm_seeds=1, opening=OPENING,
                       actions={"tone": ["calm", "any"]})
    policy.config = policy.config.model_copy(update={"domain": None})
    with pytest.raises(ActionSetMismatchError, match=r"policy's not in the config: "
                       r"\['assertive', 'submissive'\]"):
        Advisor(fewer, policy)
    advisor = Advisor(spec, policy)
    instance = advisor.instance(0)
    with pytest.raises(DialogueMismatchError, match="it is .*'s turn after 0 message"):
        advisor.advise(advisor.dialogue(instance, 0))  # after the opening: the responder's
    with pytest.raises(ValidationError, match="own message names no instruction"):
        advisor.dialogue(instance, 1, [(1, "hi"), (0, "hello")])
    done = advisor.dialogue(instance, 1, [(1, "a", "calm"), (0, "b"), (1, "c", "any"), (0, "d")])
    with pytest.raises(DialogueMismatchError, match="reach the config's reply limit"):
        advisor.advise(done)
    with pytest.raises(ValueError, match="'shouty' is not one of the config's instructions"):
        advisor.advise(advisor.dialogue(instance, 1, [(1, "a", "shouty"), (0, "b")]))


def test_a_both_policy_needs_the_features_the_advisor_builds(specs):
    spec, records = specs["plain"]
    policy = tiny_policy(spec, records, "both")
    with pytest.raises(PolicyError, match="gtsteer.Advisor builds"):
        policy.probs(records[0].text)
    with pytest.raises(PolicyError, match="the view has none"):
        policy.probs_for(PolicyInput(text=records[0].text))


def readme_steering_example() -> str:
    """The README's Python block that steers a message through the advisor."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    found = [b for b in blocks if "Advisor(" in b]
    assert len(found) == 1, "README: one Python example steers through gtsteer.Advisor"
    return found[0]


def test_the_readme_example_steers_with_a_features_both_policy(
        specs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's example, run as written on a policy trained with `--features both` on the
    fake model's records of trade_fruit_tone (the packaged MiniLM embedder, as `gtsteer
    imitate` trains it), saved where the example loads it from."""
    from gtsteer.domains import load_spec
    from gtsteer.llm.embed import get_embedder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "cache"))
    code = readme_steering_example()
    spec = load_spec(ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml")
    records = solved_records(spec)
    policy, _ = train_policy(records, get_embedder(), TrainConfig(
        steps=3, batch=8, hidden=(8,), holdout=0.0, features="both", curve_points=1),
        domain=spec.name)
    model_dir = re.search(r'"(results/imitate-[^"]+/model)"', code)
    assert model_dir is not None and "--features both" in (ROOT / "README.md").read_text()
    policy.save(tmp_path / model_dir.group(1))
    (tmp_path / "configs").symlink_to(ROOT / "gtsteer" / "configs")
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the documented example
    probs = scope["advisor"].advise(scope["dialogue"])
    assert set(probs) == {"calm", "assertive", "submissive", "any"}
    assert sum(probs.values()) == pytest.approx(1.0)
    assert scope["instruction"] in probs


def test_advisor_is_exported_at_the_package_root() -> None:
    assert gtsteer.Advisor is Advisor and "Advisor" in gtsteer.__all__
    with pytest.raises(AttributeError, match="no_such_name"):
        gtsteer.no_such_name  # noqa: B018
