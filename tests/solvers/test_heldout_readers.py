"""The held-out gain reads the fresh text: a noise-free game where replay by sample index loses
a content-aware policy's whole gain (science review 66ff82a, H1).

Ada opens with a message naming a day; which day is fixed by the message's seed, as an LLM
sample's content is. Ben answers with an instruction: `any` pays both 0.5, naming the day Ada
wrote pays 1, the other day 0. There is no sampling noise to select on: every tree's optimum
is worth 1, so on any fresh tree the solved policy, read right, still gains 0.5 over `any`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import gtsteer
from gtsteer.binding import Domain, generate_instances, make_game
from gtsteer.domains import load_spec, register_domain
from gtsteer.imitation.readers import distilled_reader, nearest_reader
from gtsteer.llm import LLM, Backend
from gtsteer.llm.embed import Embedder
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage
from gtsteer.solvers import expected_returns, fixed, solve_cfr, tabular
from gtsteer.solvers.heldout import measure_heldout
from gtsteer.solvers.metrics import cfr_gain

DAYS = ("Monday", "Tuesday")


async def named_day_utility(ctx: Any) -> list[float]:
    opened = ctx.transcript[0].text
    answer = ctx.instructions(1)[0]
    value = 0.5 if answer == "any" else (1.0 if answer in opened else 0.0)
    return [value, value]


register_domain(Domain(name="test_named_day", utility=named_day_utility))


def day_spec(tmp_path: Path) -> Path:
    data = {
        "name": "named_day",
        "players": ["opener", "answerer"],
        "names": ["Ada", "Ben"],
        "actions": {"day": [*DAYS, "any"]},
        "scenario": "{name0} and {name1} pick a day.",
        "message_prompt": "{scenario}\n{transcript}\n{instruction}{name}:",
        "num_llm_seeds": 2,
        "num_max_replies": 1,
        "domain": "test_named_day",
        "payoff": {"min": 0, "max": 1, "prompt": "{transcript}"},
    }
    path = tmp_path / "named_day.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


class DayBySeed(Backend):
    """Ada's message is `texts[seed]` (Ben always says the same)."""

    kind = "day-by-seed"
    max_concurrency = 8
    supports_grammar = True

    def __init__(self, texts: dict[int, str]):
        super().__init__("day-by-seed")
        self.texts = texts

    async def complete(self, request: GenerationRequest,
                       json_schema: dict[str, Any] | None = None) -> RawCompletion:
        text = self.texts.get(request.seed, "Fine by me.")
        return RawCompletion(text=text, usage=Usage(completion_tokens=5))


def day_embedder() -> Embedder:
    """Texts as their counts of each day's name (and a constant), so only the day matters."""

    def encode(texts: list[str]) -> np.ndarray:
        return np.array([[t.count(d) for d in DAYS] + [0.1] for t in texts], dtype=np.float32)

    return Embedder("test-days", len(DAYS) + 1, encode, cache=False)


def games(tmp_path: Path, fresh_days: tuple[str, str]):
    """The solved game (samples 0, 1 say Monday, Tuesday) and a fresh one (`fresh_days`, in
    other words, so no fresh information state is a solved one word for word)."""
    spec = load_spec(day_spec(tmp_path))
    instance = generate_instances(spec, 1, 0)[0]
    probe = make_game(spec, instance, "fake")
    seed = {k: probe.message_request([], 0, "any", (k,)).seed for k in range(4)}
    texts = {seed[0]: f"Let us meet on {DAYS[0]}.", seed[1]: f"Let us meet on {DAYS[1]}.",
             seed[2]: f"Could we do {fresh_days[0]}?", seed[3]: f"Could we do {fresh_days[1]}?"}
    llm = LLM(backend=DayBySeed(texts), use_cache=False)
    solved = make_game(spec, instance, llm)
    fresh = make_game(spec, instance, llm, sample_offset=2)
    return solved, fresh


def readers():
    return {
        "nearest": nearest_reader(day_embedder()),
        "distilled": distilled_reader(day_embedder()),
    }


def test_a_replay_by_sample_index_answers_the_day_it_never_read(tmp_path: Path) -> None:
    solved, fresh = games(tmp_path, fresh_days=(DAYS[1], DAYS[0]))  # the samples swapped
    policy = solve_cfr(solved, solver="cfr+", iterations=200).policy
    any_ = fixed([solved.any_action(p) for p in range(2)])
    in_sample = cfr_gain(solved, tabular(policy), any_)
    assert in_sample[1] == pytest.approx(0.5, abs=1e-3)
    held = measure_heldout(solved, policy, fresh, readers=readers(), progress=False)
    # Blind: Ben answers fresh message k with the day of solved message k, the other day.
    assert held.cfr_gain_per_player[1] == pytest.approx(-0.5, abs=1e-3)
    # Reading the text keeps the whole gain.
    for name in ("nearest", "distilled"):
        assert held.readers[name].cfr_gain_per_player[1] == pytest.approx(0.5, abs=0.02), name
        assert held.readers[name].read == 2  # both fresh answers were read, not looked up
    # Ada's opening decision is the same position on both trees: replayed exactly, by all.
    assert held.clean_player == 0
    assert held.clean_gain == pytest.approx(0.0, abs=1e-9)
    assert held.readers["nearest"].verbatim == 1


def test_the_swap_diagnostic_on_unswapped_fresh_samples_keeps_the_gain(tmp_path: Path) -> None:
    # The same days in the same sample slots: here matching by index happens to be right, so
    # the blind replay's -0.5 above comes from the text it was matched to, not from selection.
    solved, fresh = games(tmp_path, fresh_days=DAYS)
    policy = solve_cfr(solved, solver="cfr+", iterations=200).policy
    held = measure_heldout(solved, policy, fresh, readers=readers(), progress=False)
    assert held.cfr_gain_per_player[1] == pytest.approx(0.5, abs=1e-3)
    assert held.readers["nearest"].cfr_gain_per_player[1] == pytest.approx(0.5, abs=1e-3)


def test_depth_shares_add_up_and_the_clean_share_is_the_opening_decision(tmp_path: Path) -> None:
    solved, fresh = games(tmp_path, fresh_days=(DAYS[1], DAYS[0]))
    policy = solve_cfr(solved, solver="cfr+", iterations=200).policy
    held = measure_heldout(solved, policy, fresh, readers=readers(), progress=False)
    for replay in (held, *held.readers.values()):
        for player in range(2):
            shares = [d.gain for d in replay.by_depth if d.player == player]
            assert sum(shares) == pytest.approx(replay.cfr_gain_per_player[player], abs=1e-12)
    assert [(d.player, d.depth, d.exact) for d in held.by_depth] == [(0, 0, True), (1, 1, False)]
    opening = next(d for d in held.by_depth if d.exact)
    assert held.clean_gain == opening.gain
    base = expected_returns(fresh, [fixed([fresh.any_action(p) for p in range(2)])] * 2)
    assert held.value_any == pytest.approx(list(base))


def test_solve_reports_the_clean_part_and_each_replay(tmp_path: Path) -> None:
    solved, _ = games(tmp_path, fresh_days=(DAYS[1], DAYS[0]))
    summary = gtsteer.solve(day_spec(tmp_path), llm=solved.llm, games=1, iterations=200,
                            out=tmp_path / "run", heldout=True, quiet=True, embedder=day_embedder())
    held = summary.heldout_metrics
    assert held is not None and held.clean_player == 0
    assert set(held.replays) == {"history", "nearest", "distilled"}
    assert held.replays["history"].per_player[1].mean == pytest.approx(-0.5, abs=1e-3)
    assert held.replays["nearest"].per_player[1].mean == pytest.approx(0.5, abs=1e-3)
    assert summary.metrics is not None and summary.metrics.cfr_gain_heldout is not None
    assert summary.metrics.cfr_gain_heldout.mean == held.replays["history"].cfr_gain.mean
    with pytest.raises(ValueError, match="readers"):
        gtsteer.solve(day_spec(tmp_path), llm=solved.llm, games=1, out=tmp_path / "bad",
                      heldout=True, quiet=True, heldout_readers=["psychic"])
    # An `Embedder` object (the run context's) cannot travel to Ray workers: refused before
    # Ray starts or any call, with the message it always had.
    with pytest.raises(ValueError, match=r"^embedder: give a name on Ray \(each worker"):
        gtsteer.solve(day_spec(tmp_path), llm=solved.llm, games=1, out=tmp_path / "ray",
                      heldout=True, quiet=True, embedder=day_embedder(), ray="local")
    assert not (tmp_path / "ray").exists()


def test_the_docs_say_what_the_fresh_sample_number_measures() -> None:
    root = Path(__file__).resolve().parents[2]
    for page in ("docs/SOLVE.md", "docs/explanation/heldout.md"):
        text = " ".join((root / page).read_text(encoding="utf-8").split())
        assert "clean estimate" in text, page
        assert "opening decision" in text, page
        assert "blind to the text" in text, page  # the history replay, named for what it is
    readme = " ".join((root / "README.md").read_text(encoding="utf-8").split())
    assert "clean estimate" in readme and "selection on sampling noise" in readme
