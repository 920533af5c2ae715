"""`python -m lab werewolf-heldout`: the steering policy's gain on fresh samples of held-out
states (fresh-sample playstyle games, pairing, held-out checks, resume, the statistics and the
doc section), all on the fake model."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner
from werewolf_helpers import hash_embedder

from gtsteer.runs import werewolf_steer
from gtsteer.runs.context import RunContext
from gtsteer.runs.werewolf_steer import SolvedState
from gtsteer.solvers.evaluate import fixed, uniform
from gtsteer.solvers.heldout import VersusBaseline, paired_versus
from gtsteer.solvers.metrics import bootstrap_interval, instances_for_power
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.playstyles import UNSTEERED
from gtsteer.werewolf.steer_game import PlaystyleGame, PlaystyleGameConfig
from gtsteer.werewolf.store import GameStore
from lab.studies.playthroughs import discussion_states
from lab.studies.werewolf_heldout import opening_values

STYLES = ["trickster", "balanced", "aggressive_provoker", UNSTEERED]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small `steer-train` run on the fake model (2 games, 3 states, four styles)."""
    from gtsteer.runs.werewolf_steer import SteerTrainConfig

    out = tmp_path_factory.mktemp("trained") / "steer"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GTSTEER_CACHE_DIR", str(out.parent / "cache"))
        cfg = SteerTrainConfig(games=2, llm="fake", players=5, max_messages=3, max_days=1,
                               states=3, iterations=20, train_steps=30, styles=STYLES)
        werewolf_steer.run(
            cfg, RunContext.of(out=out, progress=False, embedder=hash_embedder()),
            werewolf_steer.SteerTrainOptions())
    return out


@pytest.fixture
def embedder(monkeypatch: pytest.MonkeyPatch):
    """The policy's embedder ("test-hash") wherever a command loads it by name."""
    from gtsteer.llm import embed

    emb = hash_embedder()
    monkeypatch.setattr(embed, "get_embedder", lambda name=None, **kw: emb)
    return emb


def game_pair(tmp_path: Path, samples: int = 1) -> tuple[PlaystyleGame, PlaystyleGame]:
    root = discussion_states(GameStore(tmp_path / "g.sqlite"))[1]
    config = PlaystyleGameConfig(num_llm_seeds=samples, styles=STYLES)
    pool = LLMPool()
    return (PlaystyleGame(root, pool, config),
            PlaystyleGame(root, pool, config, sample_offset=samples))


# ---- the fresh-sample game ---------------------------------------------------------------------


def test_fresh_game_keeps_the_opening_view_and_draws_other_messages(tmp_path):
    import pyspiel

    solved, fresh = game_pair(tmp_path, samples=2)
    assert fresh.key != solved.key and fresh.speakers == solved.speakers
    assert (fresh.new_initial_state().information_state_string(0)
            == solved.new_initial_state().information_state_string(0))
    texts = {}
    for name, game in (("solved", solved), ("fresh", fresh)):
        for sample in range(2):
            s = game.new_initial_state()
            s.apply_action(STYLES.index("balanced"))
            s.apply_action(sample)
            texts[name, sample] = s.ww.messages[-1].text
    # Four different messages: the fresh game's samples 0, 1 are samples 2, 3 of the position.
    assert len(set(texts.values())) == 4
    # The fresh game survives pyspiel's serialization with its offset.
    s = fresh.new_initial_state()
    s.apply_action(1)
    s.apply_action(1)
    game2, state2 = pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(fresh, s))
    assert state2.ww.messages[-1].text == s.ww.messages[-1].text
    with pytest.raises(ValueError, match="sample_offset"):
        PlaystyleGame(solved.source, LLMPool(), solved.config, sample_offset=-1)


def test_policy_and_baselines_meet_the_same_fresh_samples(tmp_path):
    """Paired per state: one tree, so a policy that plays a baseline's actions gains exactly 0,
    and every value is the mixture of the fresh tree's per-style values."""
    solved, fresh = game_pair(tmp_path)
    n, u = len(fresh.speakers), STYLES.index(UNSTEERED)
    others = [fixed([u] * n)] * n
    styles_only = [i for i, s in enumerate(STYLES) if s != UNSTEERED]
    values = opening_values(fresh, 0, others)
    assert sorted(values) == list(range(len(STYLES)))
    in_sample = opening_values(solved, 0, others)
    assert values != in_sample  # other samples, other values
    mixed = {0: 0.25, 2: 0.75}

    def policy(state):
        return sorted(mixed.items())

    rows = paired_versus(fresh, 0, {"same-as-unsteered": fixed([u] * n),
                                    "same-as-uniform": uniform(styles_only), "mixed": policy},
                         {UNSTEERED: fixed([u] * n), "uniform": uniform(styles_only)},
                         others, UNSTEERED)
    gain = {(r.replay, r.baseline): r.gain for r in rows}
    assert gain["same-as-unsteered", UNSTEERED] == 0.0
    assert gain["same-as-uniform", "uniform"] == 0.0
    mix = sum(p * values[a] for a, p in mixed.items())
    uni = sum(values[a] for a in styles_only) / len(styles_only)
    assert gain["mixed", UNSTEERED] == pytest.approx(mix - values[u], abs=1e-12)
    assert gain["mixed", "uniform"] == pytest.approx(mix - uni, abs=1e-12)
    assert all(r.others == UNSTEERED and r.player == 0 for r in rows)


def test_uniform_over_a_subset_refuses_a_subset_with_no_legal_action(tmp_path):
    from gtsteer.solvers.evaluate import StrategyError

    _, fresh = game_pair(tmp_path)
    with pytest.raises(StrategyError, match="none of the actions"):
        uniform([99])(fresh.new_initial_state())


# ---- statistics on known values ----------------------------------------------------------------


def row(index: int, gains: dict[tuple[str, str], float], team: str = "village"):
    from lab.studies.werewolf_heldout import FreshStateRow

    versus = [VersusBaseline(player=0, replay=p, baseline=b, others=UNSTEERED,
                             policy_value=g, baseline_value=0.0, gain=g)
              for (p, b), g in gains.items()]
    solved = SolvedState(game_id="g", step=index, day=1, speakers=["A", "B"], teams=[team, "x"],
                         sizes={}, message_calls=0, prediction_calls=0, prompt_tokens=0,
                         completion_tokens=0, info_states=0, nash_conv=0.0,
                         expand_seconds=0.0, solve_seconds=0.0)
    return FreshStateRow(run_key="k", index=index, game_id="g", game_seed=9, step=index, day=1,
                         speakers=["A", "B"], teams=[team, "werewolves"], role="villager",
                         styles=STYLES, sample_offset=1, view_sha256="0", cfr={}, distilled={},
                         in_sample={}, fresh={}, versus=versus, versus_in_sample=versus,
                         solved=solved, fresh_message_calls=0, fresh_prediction_calls=0,
                         seconds=0.0)


def test_gain_statistics_on_known_values():
    from lab.studies.werewolf_heldout_stats import find_stat, gain_stats

    pairs = [("cfr", UNSTEERED), ("cfr", "uniform"), ("distilled", UNSTEERED),
             ("distilled", "uniform")]
    rows = [row(i, {pair: (float(i + 1) if pair == ("cfr", UNSTEERED) else 0.5)
                    for pair in pairs}, team="village" if i < 2 else "werewolves")
            for i in range(4)]
    stats = gain_stats(rows)
    s = find_stat(stats, "cfr", UNSTEERED)
    # gains 1, 2, 3, 4: mean 2.5, sd sqrt(5/3), t(0.975, 3) = 3.182446305
    half = 3.182446305284263 * math.sqrt(5 / 3) / 2
    assert s.gain.n == 4 and s.gain.mean == pytest.approx(2.5)
    assert s.gain.ci_low == pytest.approx(2.5 - half) and s.gain.ci_high == pytest.approx(
        2.5 + half)
    # The BCa bootstrap of the four states (seeded: the same bounds on every run).
    assert s.bootstrap == bootstrap_interval([1.0, 2.0, 3.0, 4.0]) == pytest.approx((1.5, 3.5))
    assert s.states_needed == instances_for_power([1.0, 2.0, 3.0, 4.0]) == 8
    flat = find_stat(stats, "distilled", "uniform")
    assert (flat.gain.mean, flat.gain.ci_low, flat.gain.ci_high) == (0.5, 0.5, 0.5)
    assert flat.bootstrap == (0.5, 0.5)
    village = find_stat(stats, "cfr", UNSTEERED, team="village")
    assert village.gain.n == 2 and village.gain.mean == pytest.approx(1.5)
    assert find_stat(stats, "cfr", UNSTEERED, "in-sample").gain.mean == pytest.approx(2.5)


# ---- the command -------------------------------------------------------------------------------


def invoke(*args: str):
    from lab_support import lab

    return CliRunner().invoke(lab, ["werewolf-heldout", *args])


def test_steer_heldout_end_to_end_resume_and_render(tmp_path, trained, embedder):
    out, doc = tmp_path / "fresh", tmp_path / "doc.md"
    doc.write_text("# Doc\n\nbefore\n\n<!-- werewolf_fresh:start -->\nold\n"
                   "<!-- werewolf_fresh:end -->\n\nafter\n")
    args = ["--policy", str(trained), "--states", "3", "--per-game", "2", "--out", str(out),
            "--doc", str(doc)]
    res = invoke(*args)
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "steer_heldout.json").read_text())
    train = json.loads((trained / "steer_train.json").read_text())["config"]
    # Held out: the games' seeds follow the training games' (0, 1), none of them reused.
    assert summary["config"]["seed"] == 2 and summary["config"]["llm"] == "fake"
    assert summary["train_seeds"] == [0, 1] and min(summary["heldout_seeds"]) == 2
    rows = [json.loads((out / "rows" / f"{i}.json").read_text()) for i in range(3)]
    assert sorted(p.name for p in (out / "rows").iterdir()) == ["0.json", "1.json", "2.json"]
    assert len({(r["game_id"], r["step"]) for r in rows}) == 3
    assert all(r["game_seed"] in summary["heldout_seeds"] for r in rows)
    assert max(sum(r["game_id"] == g for r in rows) for g in {r["game_id"] for r in rows}) <= 2
    for r in rows:
        assert r["styles"] == STYLES == train["styles"] and r["sample_offset"] == 1
        assert r["solved"]["message_calls"] > 0 and r["fresh_message_calls"] > 0
        # Every gain recomputes from the row: the policies' mixtures of the per-style values.
        for v in r["versus"]:
            probs = r[v["replay"]]
            value = sum(p * r["fresh"][s] for s, p in probs.items())
            base = (r["fresh"][UNSTEERED] if v["baseline"] == UNSTEERED else
                    sum(r["fresh"][s] for s in STYLES if s != UNSTEERED) / (len(STYLES) - 1))
            assert v["policy_value"] == pytest.approx(value, abs=1e-9)
            assert v["gain"] == pytest.approx(value - base, abs=1e-9)
        for v in r["versus_in_sample"]:
            value = sum(p * r["in_sample"][s] for s, p in r[v["replay"]].items())
            assert v["policy_value"] == pytest.approx(value, abs=1e-9)
        assert sum(r["cfr"].values()) == pytest.approx(1.0)
        assert set(r["distilled"]) == set(STYLES)
    stats = {(s["policy"], s["baseline"], s["samples"], s["team"]): s for s in summary["stats"]}
    s = stats["cfr", UNSTEERED, "fresh", "all"]
    gains = [next(v["gain"] for v in r["versus"] if v["replay"] == "cfr"
                  and v["baseline"] == UNSTEERED) for r in rows]
    assert s["gain"]["n"] == 3 and s["gain"]["mean"] == pytest.approx(sum(gains) / 3)
    first = summary["model_calls"]
    assert first["new_calls"] > 0
    # The doc: its section replaced from the rows, the rest left alone.
    text = doc.read_text()
    assert text.startswith("# Doc\n\nbefore\n\n<!-- werewolf_fresh:start -->")
    assert text.endswith("<!-- werewolf_fresh:end -->\n\nafter\n") and "\nold\n" not in text
    assert (f"`python -m lab werewolf-heldout --policy {trained} --states 3 --per-game 2 "
            f"--out {out}`") in text
    assert "| CFR policy | fresh |" in text and "| distilled policy (MLP) | in-sample |" in text

    # Resume after a state was lost: only it is measured again, and from the cache.
    before = json.loads((out / "rows" / "1.json").read_text())
    (out / "rows" / "2.json").unlink()
    res = invoke(*args, "--resume")
    assert res.exit_code == 0, res.output
    again = json.loads((out / "steer_heldout.json").read_text())
    assert again["model_calls"]["new_calls"] == 0 and 0 < again["model_calls"]["requests"]
    assert again["model_calls"]["requests"] < first["requests"]  # no game replayed, 1 state
    assert json.loads((out / "rows" / "1.json").read_text()) == before

    def strip(r):
        return {k: v for k, v in r.items() if k not in ("seconds", "solved")}

    assert strip(json.loads((out / "rows" / "2.json").read_text())) == strip(rows[2])
    assert again["stats"] == summary["stats"]
    # Everything kept: nothing asked of the model at all.
    res = invoke(*args, "--resume")
    assert res.exit_code == 0, res.output
    assert json.loads((out / "steer_heldout.json").read_text())["model_calls"]["requests"] == 0
    # The lab rewrites the section from the rows, without --policy.
    from lab.__main__ import main as lab_main

    written = doc.read_text()
    doc.write_text(written.replace("| CFR policy | fresh |", "| edited |"))
    assert lab_main(["werewolf-fresh", "--results", str(out), "--doc", str(doc)]) == 0
    assert doc.read_text() == written
    # What the rows cost is theirs, whichever run measured them (this one asked nothing).
    kept = [json.loads((out / "rows" / f"{i}.json").read_text()) for i in range(3)]
    asked = sum(r["solved"]["message_calls"] + r["solved"]["prediction_calls"]
                + r["fresh_message_calls"] + r["fresh_prediction_calls"] for r in kept)
    assert f"The 3 rows took {asked} model requests (both trees, cached or not)" in written
    assert "The last run made 0 model requests" in written


def test_steer_heldout_refuses_what_is_not_held_out(tmp_path, trained, embedder):
    from lab.studies.werewolf_heldout import (
        HeldOutOverlapError,
        check_held_out,
        load_trained,
        root_view,
    )

    res = invoke("--policy", str(trained), "--seed", "1", "--out", str(tmp_path / "x"))
    assert res.exit_code == 2 and "would replay the training games" in res.output
    assert not (tmp_path / "x").exists()  # refused before anything is written
    run = load_trained(trained, hash_embedder())
    states = discussion_states(GameStore(tmp_path / "h.sqlite"), seed=7)
    heldout = [s for s in states if s.phase == "discussion"][1:2]
    check_held_out(heldout, run)  # another game: held out
    with pytest.raises(HeldOutOverlapError, match="seed 7 is a training game"):
        check_held_out(heldout, replace(run, state_seeds=frozenset({7})))
    trained_on = replace(run, record_texts=run.record_texts | {root_view(heldout[0],
                                                                         run.config)})
    with pytest.raises(HeldOutOverlapError, match="the policy was trained on"):
        check_held_out(heldout, trained_on)


def test_steer_heldout_bad_input_is_a_clear_error(tmp_path, trained, embedder, capsys):
    res = invoke("--policy", str(tmp_path / "nope"), "--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and "does not exist" in res.output
    (tmp_path / "empty").mkdir()
    res = invoke("--policy", str(tmp_path / "empty"), "--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and "holds no steer_train.json" in res.output
    res = invoke("--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and "--policy" in res.output
    from lab.__main__ import main as lab_main

    assert lab_main(["werewolf-fresh", "--results", str(tmp_path / "o"), "--doc",
                     str(tmp_path / "d.md")]) == 2
    assert "holds no steer_heldout.json" in capsys.readouterr().err
    res = invoke("--policy", str(trained), "--states", "0", "--out", str(tmp_path / "o"))
    assert res.exit_code == 2
