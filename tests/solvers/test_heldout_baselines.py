"""The fresh-sample value against baselines (`any`, greedy, uniform), the intervals beside it,
and a solve that resumes from the records an earlier run wrote (issue 40, item 1)."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from test_heldout_readers import (
    DAYS,
    DayBySeed,
    day_embedder,
    day_spec,
    games,
    named_day_utility,
    readers,
)

import gtsteer
from gtsteer.binding import Domain, generate_instances, make_game
from gtsteer.domains import load_spec, register_domain
from gtsteer.domains.schedule_meeting import meeting_greedy
from gtsteer.solvers import heldout, solve_cfr
from gtsteer.solvers.heldout import OPENING, greedy_baseline, measure_heldout
from gtsteer.solvers.metrics import bootstrap_interval, instances_for_power, mean_ci

ROOT = Path(__file__).resolve().parents[2]
MEETING = ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml"


def test_greedy_proposes_the_best_day_the_player_is_not_away_on() -> None:
    spec = load_spec(MEETING)
    prefs = "Monday: 3, Tuesday: 9, Wednesday: 5, Thursday: 9, Friday: 6, Saturday: 10, Sunday: 1"
    info = {"out_of_office": "Saturday", "day_preferences": prefs}
    # Saturday is worth most but the player is away; Tuesday and Thursday tie: the earlier.
    assert meeting_greedy(spec, info) == {"day": "Tuesday"}
    info["out_of_office"] = "Tuesday, Saturday"
    assert meeting_greedy(spec, info) == {"day": "Thursday"}


def test_the_greedy_baseline_plays_each_players_own_best_day() -> None:
    spec = load_spec(MEETING)
    instance = generate_instances(spec, 1, 3)[0]
    game = make_game(spec, instance, "fake")
    greedy = greedy_baseline(game)
    assert greedy is not None
    state = game.new_initial_state()
    (action, p), = greedy(state)
    assert p == 1.0
    day = meeting_greedy(spec, instance.private_info[0])["day"]
    assert game.instructions()[action] == day


@functools.cache  # a second record under one name would be refused
def with_greedy(day: str) -> str:
    name = f"test_named_day_greedy_{day}"
    register_domain(Domain(name=name, utility=named_day_utility,
                           greedy=lambda spec, info: {"day": day}))
    return name


def test_the_policy_is_compared_with_each_baseline_on_the_same_fresh_samples(
    tmp_path: Path,
) -> None:
    llm = games(tmp_path, fresh_days=(DAYS[1], DAYS[0]))[0].llm
    # The same game with a greedy hook that always names Monday.
    spec = load_spec_with_domain(tmp_path, with_greedy(DAYS[0]))
    instance = generate_instances(spec, 1, 0)[0]
    solved = make_game(spec, instance, llm)
    fresh = make_game(spec, instance, llm, sample_offset=2)
    policy = solve_cfr(solved, solver="cfr+", iterations=200).policy
    held = measure_heldout(solved, policy, fresh, readers=readers(), progress=False)
    cells = {(v.player, v.replay, v.baseline): v for v in held.versus if v.others == "any"}
    # Ada (the first mover) at her opening decision: her words are fixed by the seed, so no
    # instruction of hers changes anything.
    for baseline in ("any", "greedy", "uniform"):
        assert cells[0, OPENING, baseline].gain == pytest.approx(0.0, abs=1e-9)
    # Ben read right is worth 1; `any` 0.5; always Monday 0.5 (one fresh message of two says
    # Monday); uniform over Monday, Tuesday, any: (1 + 0 + 0.5) / 3 = 0.5.
    for reader in ("nearest", "distilled"):
        assert cells[1, reader, "any"].policy_value == pytest.approx(1.0, abs=0.02)
        assert cells[1, reader, "any"].baseline_value == pytest.approx(0.5, abs=1e-9)
        assert cells[1, reader, "greedy"].baseline_value == pytest.approx(0.5, abs=1e-9)
        assert cells[1, reader, "uniform"].baseline_value == pytest.approx(0.5, abs=1e-9)
        # Against `any`, the comparison is the reader's own gain for that player.
        assert cells[1, reader, "any"].gain == pytest.approx(
            held.readers[reader].cfr_gain_per_player[1], abs=1e-12)
    assert cells[0, OPENING, "any"].gain == held.clean_gain
    assert not any(v.replay == "history" for v in held.versus)  # blind: not a comparison


async def named_day_after_a_day(ctx) -> list[float]:
    """`named_day_utility`, but an opening without a day leaves nothing to agree on."""
    if ctx.instructions(0)[0] == "any":
        return [0.0, 0.0]
    return await named_day_utility(ctx)


@functools.cache
def after_a_day() -> str:
    name = "test_named_day_after_a_day"
    register_domain(Domain(name=name, utility=named_day_after_a_day,
                           greedy=lambda spec, info: {"day": DAYS[0]}))
    return name


class Frozen(DayBySeed):
    """Answers until `frozen` is set, then refuses: the measurement reads only the expansion."""

    frozen = False

    async def complete(self, request, json_schema=None):
        assert not self.frozen, "the measurement asked for a node the expansion left out"
        return await super().complete(request, json_schema)


def test_the_responder_is_also_compared_after_the_first_movers_solved_opening(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    llm = games(tmp_path, fresh_days=(DAYS[1], DAYS[0]))[0].llm
    backend = Frozen(llm.backend.texts)
    llm.backend = backend
    spec = load_spec_with_domain(tmp_path, after_a_day())
    instance = generate_instances(spec, 1, 0)[0]
    solved = make_game(spec, instance, llm)
    policy = solve_cfr(solved, solver="cfr+", iterations=200).policy

    def expand_then_freeze(*args, **kwargs):
        report = expand_sync(*args, **kwargs)
        backend.frozen = True
        return report

    expand_sync = heldout.expand_sync
    monkeypatch.setattr(heldout, "expand_sync", expand_then_freeze)
    fresh = make_game(spec, instance, llm, sample_offset=2)
    held = measure_heldout(solved, policy, fresh, readers=readers(), progress=False)
    cells = {(v.player, v.replay, v.baseline, v.others): v for v in held.versus}
    assert {v.others for v in held.versus if v.player == 0} == {"any"}
    for reader in ("nearest", "distilled"):
        # After an opening on `any` every reply is worth 0: nothing tells the baselines apart.
        for baseline in ("any", "greedy", "uniform"):
            cell = cells[1, reader, baseline, "any"]
            assert (cell.policy_value, cell.baseline_value) == (0.0, 0.0)
        # After Ada's solved opening (a day), Ben read right is worth 1, `any` 0.5, always
        # Monday 0.5 (one fresh message of two says it), uniform (1 + 0 + 0.5) / 3.
        after = {b: cells[1, reader, b, "policy"] for b in ("any", "greedy", "uniform")}
        assert after["any"].policy_value == pytest.approx(1.0, abs=0.02)
        assert [after[b].baseline_value for b in ("any", "greedy", "uniform")] == \
            pytest.approx([0.5, 0.5, 0.5], abs=1e-9)
    # Ada's opening, Ben on `any`: a day 0.5, `any` 0, always Monday 0.5, uniform 1/3.
    assert cells[0, OPENING, "any", "any"].gain == pytest.approx(0.5, abs=1e-3)
    assert cells[0, OPENING, "greedy", "any"].gain == pytest.approx(0.0, abs=1e-3)
    assert cells[0, OPENING, "uniform", "any"].gain == pytest.approx(0.5 - 1 / 3, abs=1e-3)


def load_spec_with_domain(tmp_path: Path, domain: str):
    import yaml

    path = day_spec(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["domain"] = domain
    out = tmp_path / f"{domain}.yaml"
    out.write_text(yaml.safe_dump(data))
    return load_spec(out)


def test_a_greedy_choice_outside_the_action_set_is_no_baseline(tmp_path: Path) -> None:
    spec = load_spec_with_domain(tmp_path, with_greedy("Friday"))  # not an action here
    game = make_game(spec, generate_instances(spec, 1, 0)[0], "fake")
    assert greedy_baseline(game) is None
    plain = load_spec(day_spec(tmp_path))  # a domain without the hook
    assert greedy_baseline(make_game(plain, generate_instances(plain, 1, 0)[0], "fake")) is None


def test_the_bootstrap_interval_agrees_with_t_on_normal_data() -> None:
    values = np.random.default_rng(7).normal(1.0, 2.0, size=200)
    t = mean_ci(values)
    low, high = bootstrap_interval(values)
    assert low < values.mean() < high
    assert low == pytest.approx(t.ci_low, abs=0.08)
    assert high == pytest.approx(t.ci_high, abs=0.08)
    assert bootstrap_interval(values) == (low, high)  # seeded: the page redraws the same
    assert bootstrap_interval([2.0, 2.0, 2.0]) == (2.0, 2.0)
    assert bootstrap_interval([1.0]) is None


def test_instances_for_power_reaches_the_power_and_no_fewer_would() -> None:
    values = np.random.default_rng(3).normal(0.67, 1.9, size=20)
    n = instances_for_power(values)
    assert n is not None
    effect = values.mean() / values.std(ddof=1)

    def power(k: int) -> float:  # the exact power of a two-sided one-sample t-test
        crit = stats.t.ppf(0.975, k - 1)
        nc = effect * np.sqrt(k)
        return float(stats.nct.sf(crit, k - 1, nc) + stats.nct.cdf(-crit, k - 1, nc))

    assert power(n) >= 0.79
    assert power(int(n * 0.85)) < 0.8
    assert instances_for_power([1.0, 1.0]) is None


def test_a_stopped_solve_resumes_from_its_records(tmp_path: Path) -> None:
    solved, _ = games(tmp_path, fresh_days=(DAYS[1], DAYS[0]))
    llm = solved.llm
    args = {"iterations": 200, "out": tmp_path / "run", "heldout": True, "quiet": True,
            "embedder": day_embedder()}
    first = gtsteer.solve(day_spec(tmp_path), llm=llm, games=2, **args)
    records = {p.name: p.read_text() for p in (tmp_path / "run" / "games").glob("*.json")}
    assert len(records) == 2
    # A longer run in the same folder keeps both records and solves only the third.
    again = gtsteer.solve(day_spec(tmp_path), llm=llm, games=3, resume=True, **args)
    assert again.llm_calls.requests < first.llm_calls.requests  # one instance's worth
    for name, text in records.items():
        assert (tmp_path / "run" / "games" / name).read_text() == text
    assert again.instances == [0, 1, 2]
    assert again.metrics.cfr_gain.per_instance[:2] == first.metrics.cfr_gain.per_instance
    # Other settings are not the same run: nothing is kept.
    other = gtsteer.solve(day_spec(tmp_path), llm=llm, games=3, resume=True,
                          **{**args, "iterations": 100})
    assert other.llm_calls.requests > again.llm_calls.requests
    # Without --resume the folder starts over, as before.
    fresh_run = gtsteer.solve(day_spec(tmp_path), llm=llm, games=1, **args)
    assert sorted(p.name for p in (tmp_path / "run" / "games").glob("*.json")) == ["0.json"]
    assert fresh_run.instances == [0]
