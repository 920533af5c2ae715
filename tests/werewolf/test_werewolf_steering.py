"""Steering Werewolf playstyles: the hook's input, seeded draws and resume, the playstyle game,
and the steer-train -> play --steer -> evaluate pipeline (all on the fake model)."""

from __future__ import annotations

import difflib
import hashlib
import json
import sqlite3

import numpy as np
import pytest
from typer.testing import CliRunner

from gtsteer.checks import pyspiel_api_check, read_playthrough, replay
from gtsteer.llm.embed import Embedder
from gtsteer.runs import werewolf_steer
from gtsteer.runs.context import RunContext
from gtsteer.werewolf.bots import bot_decision
from gtsteer.werewolf.context import build_context
from gtsteer.werewolf.engine import pending
from gtsteer.werewolf.hook_view import hook_input
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.playstyles import (
    DECISION_OPTIONS,
    PLAYSTYLE_NAMES,
    PLAYSTYLES,
    STYLE_OPTIONS,
    UNSTEERED,
    AssignedPlaystyle,
    FixedPlaystyle,
    HookInput,
    StyleChoice,
    UniformPlaystyle,
    describe,
    options_for,
)
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import GameConfig, GameState, Pending
from gtsteer.werewolf.steer_game import (
    DISCUSSION_OPTIONS,
    PlaystyleGame,
    PlaystyleGameConfig,
    PlaystyleGameError,
    pick_speakers,
)
from gtsteer.werewolf.store import GameStore
from lab.studies.playthroughs import (
    PLAYSTYLE_ROOT,
    PLAYTHROUGH,
    discussion_states,
    playstyle_game,
)


class Recorder:
    """Uniform draws, remembering every input it was given (a test probe, not a chooser to
    copy: real choosers keep no state)."""

    def __init__(self) -> None:
        self.seen: list[HookInput] = []

    def choose(self, info: HookInput) -> StyleChoice:
        self.seen.append(info)
        return UniformPlaystyle().choose(info)


def hash_embedder(name: str = "test-hash") -> Embedder:
    """A deterministic 32-d embedding of the text's bytes (no model to load)."""

    def encode(texts: list[str]) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest(), np.uint8) for t in texts]
        return np.stack(rows).astype(np.float32) / 255.0

    return Embedder(name, 32, encode, cache=False)


# ---- 1. the hook's input ---------------------------------------------------------------------


def test_hook_input_is_situation_first_without_rules_or_reminder(tmp_path):
    store = GameStore(tmp_path / "h.sqlite")
    rec = Recorder()
    state = create_game(store, GameConfig(n_players=7, max_days=2, max_messages_per_day=3), seed=4,
                        game_id="h")
    final = GameRunner(store, chooser=rec).run(state)
    assert len(rec.seen) > 20
    system = build_context(final, final.players[0].name,
                           Pending(kind="speak", actor=final.players[0].name), "balanced").system
    descriptions = [describe(s, w) for s in PLAYSTYLES for w in (True, False)]
    for info in rec.seen:
        assert info.text.splitlines()[0].startswith(f"{info.role} ({info.team}) deciding")
        assert system[:80] not in info.text and "Reminder" not in info.text
        assert not any(d in info.text for d in descriptions)
        assert info.game_id == "h" and info.model == "fake" and info.options == list(
            STYLE_OPTIONS)
    # Own past styles: every earlier choice of this bot, in the fields and in the text.
    later = [i for i in rec.seen if len(i.past_styles) >= 2]
    assert later
    for info in later:
        mine = [c for c in final.style_history if c.bot == info.bot and c.step < info.step]
        assert [p.style for p in info.past_styles] == [c.style for c in mine]
        last = info.past_styles[-1]
        assert f"d{last.day} {last.decision} {last.style}" in info.text
    # Another bot's styles never reach a bot's input.
    for info in rec.seen:
        others = {(c.step, c.style) for c in final.style_history if c.bot != info.bot}
        assert not others & {(p.step, p.style) for p in info.past_styles}


def test_private_knowledge_is_in_the_view_only_for_its_owner(tmp_path):
    store = GameStore(tmp_path / "k.sqlite")
    for seed in range(3, 20):
        state = create_game(store, GameConfig(n_players=7, max_days=3, max_messages_per_day=2),
                            seed=seed, game_id=f"k{seed}")
        final = GameRunner(store).run(state)
        checks = [a for a in final.night_actions if a.verb == "investigate" and a.result]
        if checks:
            break
    assert checks, "some seed must reach a night with an investigation"
    a = checks[0]
    line = f"Night {a.night}: you investigate {a.target} -> {a.result}."
    seer = hook_input(final, a.actor, Pending(kind="speak", actor=a.actor)).text
    assert line in seer
    for p in final.players:
        if p.name != a.actor:
            view = hook_input(final, p.name, Pending(kind="speak", actor=p.name)).text
            assert "investigate" not in view
    for a in (a for a in final.night_actions if a.notified):
        told = hook_input(final, a.target, Pending(kind="speak", actor=a.target)).text
        assert f"Night {a.night}: you were abducted." in told
        assert a.actor not in told.split("you were abducted")[0].splitlines()[-1]


def test_choices_and_probabilities_are_in_the_database(tmp_path):
    store = GameStore(tmp_path / "db.sqlite")
    state = create_game(store, GameConfig(n_players=6, max_days=1, max_messages_per_day=2), seed=2,
                        game_id="db")
    GameRunner(store, chooser=UniformPlaystyle()).run(state)
    conn = sqlite3.connect(tmp_path / "db.sqlite")
    rows = conn.execute(
        "SELECT kind, actor, playstyle, json_extract(decision, '$.style_choice'), info_state "
        "FROM steps WHERE kind != 'route' ORDER BY step").fetchall()
    assert {r[0] for r in rows} >= {"speak", "vote", "night"}
    for kind, actor, style, choice, info in rows:
        choice = json.loads(choice)
        assert choice["style"] == style and choice["bot"] == actor
        if kind in ("speak", "vote", "pack_chat"):
            assert choice["probs"] == pytest.approx({n: 1 / 6 for n in PLAYSTYLE_NAMES})
        else:  # one option: no draw, a point mass on it
            assert choice["probs"] == {UNSTEERED: 1.0} and style == UNSTEERED
        assert json.loads(info)["seed"] == choice["seed"]


def test_unsteered_sends_no_style_sentence(tmp_path):
    store = GameStore(tmp_path / "u.sqlite")
    state = create_game(store, GameConfig(n_players=6, max_days=1, max_messages_per_day=2), seed=1,
                        game_id="u")
    GameRunner(store, chooser=FixedPlaystyle(UNSTEERED)).run(state)
    calls = [c for c in store.calls("u") if not c.bot.startswith("(")]
    assert calls
    for c in calls:
        assert not any(f"({s})" in c.prompt for s in PLAYSTYLE_NAMES)
        assert not any(describe(s, w) in c.prompt for s in PLAYSTYLES for w in (True, False))
    assert {d.playstyle for d in store.steps("u") if d.kind != "route"} == {UNSTEERED}


def test_a_bad_chooser_answer_is_a_clear_error(tmp_path):
    class Zero:
        def choose(self, info):
            return StyleChoice(style="trickster", probs={"trickster": 0.0, "balanced": 1.0})

    store = GameStore(tmp_path / "z.sqlite")
    state = create_game(store, GameConfig(n_players=5, max_days=1), seed=1, game_id="z")
    with pytest.raises(ValueError, match="probability 0"):
        GameRunner(store, chooser=Zero()).run(state)


# ---- 1b. options per decision kind, and where the decision sits in the day ------------------


def game_decisions(store: GameStore, game_id: str, config: GameConfig, seed: int
                   ) -> list[tuple[GameState, Pending]]:
    """Every (state before, pending) of a finished game, in order."""
    seen: list[tuple[GameState, Pending]] = []

    def grab(before: GameState, _after, _d) -> None:
        seen.append((before, pending(before)))

    GameRunner(store, on_step=grab).run(create_game(store, config, seed=seed, game_id=game_id))
    return seen


def test_options_depend_on_the_decision_kind(tmp_path):
    assert options_for("speak") == options_for("pack_chat") == options_for("vote") == (
        STYLE_OPTIONS)
    assert options_for("night") == options_for("summary") == (UNSTEERED,)
    with pytest.raises(ValueError, match="'route' has no playstyle options"):
        options_for("route")
    decisions = game_decisions(GameStore(tmp_path / "o.sqlite"), "o",
                               GameConfig(n_players=7, max_days=2, max_messages_per_day=2), 3)
    kinds = set()
    for before, want in decisions:
        if want.kind == "route":
            continue
        kinds.add(want.kind)
        info = hook_input(before, want.actor, want)
        expected = [UNSTEERED] if want.kind in ("night", "summary") else list(STYLE_OPTIONS)
        assert info.options == expected, (want.kind, info.options)
    assert kinds == set(DECISION_OPTIONS)  # every kind of the table came up


def test_single_option_decisions_skip_the_chooser_and_are_stored(tmp_path):
    store = GameStore(tmp_path / "s.sqlite")
    rec = Recorder()
    config = GameConfig(n_players=7, max_days=2, max_messages_per_day=2)
    GameRunner(store, chooser=rec).run(create_game(store, config, seed=4, game_id="s"))
    asked = {i.decision.split(":")[0] for i in rec.seen}
    assert asked == {"speak", "vote", "pack_chat"}
    conn = sqlite3.connect(tmp_path / "s.sqlite")
    rows = conn.execute(
        "SELECT kind, step, actor, playstyle, json_extract(decision, '$.style_choice'), "
        "info_state FROM steps WHERE kind IN ('night', 'summary') ORDER BY step").fetchall()
    assert {r[0] for r in rows} == {"night", "summary"}
    for _kind, step_no, actor, style, choice, info in rows:
        choice, info = json.loads(choice), json.loads(info)
        assert style == UNSTEERED and choice["probs"] == {UNSTEERED: 1.0}
        # the steps row is keyed by the step after the decision; the choice by the one before
        assert choice["bot"] == actor and choice["step"] == info["step"] == step_no - 1
        assert choice["seed"] == info["seed"] and info["options"] == [UNSTEERED]
    consulted = conn.execute("SELECT COUNT(*) FROM steps WHERE kind IN "
                             "('speak', 'vote', 'pack_chat')").fetchone()[0]
    assert consulted == len(rec.seen)


def test_a_chooser_answer_outside_the_options_is_refused(tmp_path, monkeypatch):
    from gtsteer.werewolf import playstyles

    monkeypatch.setitem(playstyles.DECISION_OPTIONS, "vote", ("balanced", UNSTEERED))

    class Answer:
        def __init__(self, choice):
            self.choice = choice

        def choose(self, info):
            return self.choice if info.decision == "vote" else "balanced"

    for answer, bad in [("trickster", "trickster"),
                        (StyleChoice(style="balanced", probs={"balanced": 0.5,
                                                              "quiet_observer": 0.5}),
                         "quiet_observer")]:
        store = GameStore(tmp_path / f"x{bad}.sqlite")
        state = create_game(store, GameConfig(n_players=5, max_days=1, max_messages_per_day=1),
                            seed=1, game_id="x")
        with pytest.raises(ValueError) as err:
            GameRunner(store, chooser=Answer(answer)).run(state)
        msg = str(err.value)
        assert f"answered {bad!r}" in msg and "vote decision" in msg
        assert "allowed options: ['balanced', 'unsteered']" in msg


def test_built_in_choosers_answer_only_allowed_options():
    narrow = HookInput(bot="Ann", role="villager", team="village", model="fake", game_id="g",
                       step=3, day=1, phase="vote", decision="vote", seed=5,
                       assigned_playstyle="trickster", options=["balanced", UNSTEERED])
    no_unsteered = narrow.model_copy(update={"options": ["quiet_observer", "balanced"]})
    assert AssignedPlaystyle().choose(narrow).style == UNSTEERED
    assert FixedPlaystyle("trickster").choose(narrow).style == UNSTEERED
    assert FixedPlaystyle("trickster").choose(no_unsteered).style == "quiet_observer"
    assert FixedPlaystyle("balanced").choose(narrow).probs == {"balanced": 1.0}
    draws = [UniformPlaystyle().choose(no_unsteered.model_copy(update={"seed": s}))
             for s in range(30)]
    assert {d.style for d in draws} == {"quiet_observer", "balanced"}
    assert draws[0].probs == {"quiet_observer": 0.5, "balanced": 0.5}


def tiny_style_policy(actions: tuple[str, ...] = STYLE_OPTIONS):
    """A small DistilledPolicy over `actions`, trained to favour trickster."""
    from gtsteer.imitation.dataset import DecisionRecord
    from gtsteer.imitation.train import TrainConfig, train_policy

    target = [0.9 if o == "trickster" else 0.1 / (len(actions) - 1) for o in actions]
    records = [DecisionRecord(text=f"villager (village) deciding speak, day {d}", weight=1.0,
                              actions=list(actions), target=target, instance=d, player=0)
               for d in range(4)]
    policy, _ = train_policy(records, hash_embedder(), TrainConfig(steps=40, holdout=0.0,
                                                                  hidden=(16,)))
    return policy


def test_distilled_chooser_draws_only_allowed_options():
    from gtsteer.werewolf.steering import DistilledPlaystyleChooser, hook_policy_input

    policy = tiny_style_policy()
    chooser = DistilledPlaystyleChooser(policy)
    text = "villager (village) deciding speak, day 1"
    full = policy.probs(text)
    assert max(full, key=full.get) == "trickster"  # the masked option carries the most mass
    allowed = ["balanced", "quiet_observer", UNSTEERED]
    info = HookInput(bot="Ann", role="villager", team="village", model="fake", game_id="g",
                     step=1, day=1, phase="discussion", decision="speak", seed=0,
                     assigned_playstyle="balanced", options=allowed, text=text)
    draws = [chooser.choose(info.model_copy(update={"seed": s})) for s in range(60)]
    assert {d.style for d in draws} <= set(allowed) and len({d.style for d in draws}) > 1
    probs = draws[0].probs
    assert list(probs) == allowed and sum(probs.values()) == pytest.approx(1.0)
    mass = sum(full[o] for o in allowed)
    assert probs == pytest.approx({o: full[o] / mass for o in allowed})  # renormalised
    # the hook's text reaches the policy the one way every live view does (`probs_for`)
    assert probs == policy.probs_for(hook_policy_input(text), actions=allowed)
    # None of the policy's options allowed here: the fallback is legal.
    narrower = DistilledPlaystyleChooser(tiny_style_policy(("trickster", "balanced")))
    narrow = narrower.choose(info.model_copy(update={"options": ["quiet_observer", UNSTEERED]}))
    assert narrow.style == UNSTEERED and narrow.probs == {UNSTEERED: 1.0}


def test_distilled_chooser_steers_only_the_decisions_the_solved_game_holds():
    """The playstyle game solves discussion turns; the intro, pack chat and votes keep the
    bot's baseline (assigned) style, whatever the policy would say."""
    from gtsteer.werewolf.steering import DistilledPlaystyleChooser

    chooser = DistilledPlaystyleChooser(tiny_style_policy())
    talk = HookInput(bot="Ann", role="villager", team="village", model="fake", game_id="g",
                     step=1, day=1, phase="discussion", decision="speak", seed=0,
                     assigned_playstyle="balanced", options=list(STYLE_OPTIONS),
                     text="villager (village) deciding speak, day 1")
    assert set(chooser.choose(talk).probs) == set(STYLE_OPTIONS)  # steered
    unsolved = [("vote", "vote"), ("intro", "speak"), ("night", "pack_chat")]
    for phase, decision in unsolved:
        info = talk.model_copy(update={"phase": phase, "decision": decision})
        assert chooser.choose(info) == StyleChoice(style="balanced", probs={"balanced": 1.0})


def test_turns_left_and_vote_position_at_known_points(tmp_path):
    store = GameStore(tmp_path / "t.sqlite")
    rec = Recorder()
    config = GameConfig(n_players=7, max_days=1, max_messages_per_day=4)
    GameRunner(store, chooser=rec).run(create_game(store, config, seed=4, game_id="t"))
    talk = [i for i in rec.seen if i.decision == "speak" and i.phase == "discussion"]
    assert [i.turns_left_today for i in talk] == [4, 3, 2, 1]
    assert talk[0].text.splitlines()[1] == "Turns left today: 4, this one included."
    intro = [i for i in rec.seen if i.phase == "intro"]
    assert intro and all(i.turns_left_today is None and i.vote_position is None for i in intro)
    votes = [i for i in rec.seen if i.decision == "vote"]
    assert [i.vote_position for i in votes] == list(range(len(votes))) and len(votes) >= 5
    assert votes[0].votes_today == [] and all(i.turns_left_today is None for i in votes)
    final = store.load("t")
    first = next(v for v in final.votes if v.day == 1)
    assert votes[1].votes_today == [f"{first.voter}>{first.target}"]
    assert votes[1].text.splitlines()[1] == "Votes cast before yours today: 1."
    others = [i for i in rec.seen if i.decision == "pack_chat"]
    assert all(i.turns_left_today is None and i.vote_position is None for i in others)


# ---- 2. replay and resume ------------------------------------------------------------------


def test_same_seed_replays_the_same_choices_also_after_resume(tmp_path):
    store = GameStore(tmp_path / "r.sqlite")
    full = GameRunner(store, chooser=UniformPlaystyle()).run(
        create_game(store, GameConfig(n_players=7, max_days=2, max_messages_per_day=3), seed=9,
                    game_id="a"))
    first = create_game(store, GameConfig(n_players=7, max_days=2, max_messages_per_day=3), seed=9,
                        game_id="b")
    GameRunner(store, chooser=UniformPlaystyle()).run(first, max_steps=17)
    resumed = GameRunner(GameStore(tmp_path / "r.sqlite"), chooser=UniformPlaystyle()).run(
        store.load("b"))
    key = [(c.bot, c.step, c.style, c.seed) for c in full.style_history]
    assert key == [(c.bot, c.step, c.style, c.seed) for c in resumed.style_history]
    assert len({c.style for c in full.style_history}) > 2  # really sampled
    assert [m.text for m in full.messages] == [m.text for m in resumed.messages]
    after = [c for c in store.calls("b") if c.extra["step"] > 17]
    assert after and all(c.cached for c in after)  # the resumed half hit the cache


# ---- 3. the playstyle game -----------------------------------------------------------------


def test_playstyle_game_replays_its_recorded_playthrough(tmp_path):
    command = "python -m lab playthroughs --werewolf"
    assert PLAYTHROUGH.exists(), f"no playthrough for the playstyle game: run `{command}`"
    recorded = PLAYTHROUGH.read_text(encoding="utf-8")
    header = read_playthrough(recorded).header
    assert header["root"] == PLAYSTYLE_ROOT
    config = PlaystyleGameConfig.model_validate_json(header["config"])
    fresh = replay(recorded, playstyle_game(tmp_path, config))
    if fresh != recorded:
        diff = "".join(difflib.unified_diff(recorded.splitlines(True), fresh.splitlines(True),
                                            "recorded", "now", n=2))  # fmt: skip
        pytest.fail(f"the playstyle game plays differently from its recording (if intended, "
                    f"run `{command}`):\n{diff[:4000]}")


def test_playstyle_game_passes_conformance_and_plays_what_bots_play(tmp_path):
    states = discussion_states(GameStore(tmp_path / "g.sqlite"))
    root = states[1]
    config = PlaystyleGameConfig(num_llm_seeds=2, styles=["trickster", "balanced", UNSTEERED])
    game = PlaystyleGame(root, LLMPool(), config)
    teams = set(game.teams)
    assert teams == {"village", "werewolves"} and len(game.speakers) == 2
    assert game.expand() == 36
    calls = len(game.calls)
    report = pyspiel_api_check(game, "playstyle game")
    assert len(game.calls) == calls  # every call was made by expand
    sizes = game.sizes()
    assert sizes["leaves"] == 36 and sizes["message_calls"] == 6 + 36
    assert len(game.calls) == sizes["message_calls"]
    assert game.prediction_calls == sizes["prediction_calls"]
    assert report.info_states == 1 + 6 and report.nash_conv >= 0
    # Sample 0 of the first speaker is exactly the live bot's line with that style.
    s = game.new_initial_state()
    s.apply_action(1)
    s.apply_action(0)
    live, _ = bot_decision(game.root, pending(game.root),
                           LLMPool(), FixedPlaystyle("balanced"))
    assert s.ww.messages[-1].text == live.text
    # Players read the live hook's text at their turn in the game's day, which ends after its
    # speakers: turns left = speakers left.
    view = s.information_state_string(1)
    expected = hook_input(s.ww, game.speakers[1], pending(s.ww))
    assert view == expected.text and live.text[:40] in view
    assert expected.turns_left_today == 1
    live_first = hook_input(game.root, game.speakers[0], pending(game.root))
    assert live_first.turns_left_today == 2 < root.turn_limit() - root.turns_today
    assert game.new_initial_state().information_state_string(0) == live_first.text
    # Where the logged day had as many turns left as the game has speakers, the first view
    # is the logged live one.
    last_two = next(r for r in states if r.turn_limit() - r.turns_today == 2)
    logged = last_two.model_copy(update={"queue": pick_speakers(last_two, 2)})
    assert PlaystyleGame(last_two, LLMPool()).new_initial_state().information_state_string(
        0) == hook_input(logged, logged.queue[0], pending(logged)).text
    # The game's actions are exactly a discussion decision's hook options.
    assert PlaystyleGameConfig().styles == list(DISCUSSION_OPTIONS) == live_first.options
    # Returns: the village gets P(wolf out) - P(village-side out), the wolves the negative.
    while not s.is_terminal():
        s.apply_action(0)
    ret = dict(zip(game.teams, s.returns(), strict=True))
    assert ret["village"] == pytest.approx(-ret["werewolves"])
    assert -1.0 <= ret["village"] <= 1.0


def solved_records(roots: list[GameState], iterations: int = 40) -> list:
    """Every root's playstyle game solved with CFR+; its records, instance = the root."""
    from gtsteer.runs.werewolf_steer import records_of
    from gtsteer.solvers.cfr import solve_cfr

    out = []
    for i, root in enumerate(roots):
        game = PlaystyleGame(root, LLMPool())
        result = solve_cfr(game, solver="cfr+", iterations=iterations,
                           allow_python_fallback=False)
        out += records_of(game, result.policy, i)
    return out


def test_a_view_tells_the_speakers_left_and_so_has_one_target(tmp_path):
    """Adjacent roots of one logged game: the later root's first speaker can be the earlier
    root's last one, in the same state. The view must tell the two horizons apart (turns left
    = speakers left in that game), or one view gets two CFR targets."""
    roots = discussion_states(GameStore(tmp_path / "h.sqlite"))  # 4 turns of one logged day
    records = solved_records(roots)
    assert len(roots) == 4 and len(records) == 4 * 8
    for rec in records:  # every game has 2 speakers: 2 turns left, then 1
        assert rec.text.splitlines()[1] == f"Turns left today: {2 - rec.player}, this one included."
        assert " deciding speak, day 1 discussion." in rec.text.splitlines()[0]
    targets: dict[str, set[tuple[float, ...]]] = {}
    roots_of: dict[str, set[int]] = {}
    for rec in records:
        targets.setdefault(rec.text, set()).add(tuple(round(t, 6) for t in rec.target))
        roots_of.setdefault(rec.text, set()).add(rec.instance)
    assert {t: v for t, v in targets.items() if len(v) > 1} == {}  # (with the logged limit: 2)
    assert all(len(r) == 1 for r in roots_of.values())


def test_playstyle_game_needs_both_teams(tmp_path):
    states = discussion_states(GameStore(tmp_path / "p.sqlite"))
    speakers = pick_speakers(states[0], 2)
    roles = {states[0].player(n).role.value for n in speakers}
    assert "werewolf" in roles and len(roles) == 2
    wolfless = states[0].model_copy(deep=True)
    for p in wolfless.players:
        if p.role.value == "werewolf":
            p.alive = False
    with pytest.raises(PlaystyleGameError, match="werewolf"):
        pick_speakers(wolfless, 2)
    with pytest.raises(ValueError, match="styles"):
        PlaystyleGameConfig(styles=["berserker", "balanced"])


# ---- 4. train, deploy, evaluate --------------------------------------------------------------


def test_steer_train_play_evaluate_end_to_end(tmp_path, monkeypatch):
    from gtsteer.cli import app
    from gtsteer.llm import embed

    emb = hash_embedder()
    monkeypatch.setattr(embed, "get_embedder", lambda name=None, **kw: emb)
    out = tmp_path / "steer"
    cli = CliRunner()
    res = cli.invoke(app, ["werewolf", "steer-train", "--games", "1", "--llm", "fake",
                           "--out", str(out), "--states", "2", "--iterations", "20",
                           "--train-steps", "30", "--max-days", "1", "--embedder", "test-hash"])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "steer_train.json").read_text())
    assert len(summary["solved"]) == 2 and summary["records"] == len(
        (out / "records.jsonl").read_text().splitlines())
    assert summary["llm_calls"] == sum(s["message_calls"] + s["prediction_calls"]
                                       for s in summary["solved"])
    db = tmp_path / "play.sqlite"
    res = cli.invoke(app, ["werewolf", "play", "--llm", "fake", "--steer", str(out),
                           "--steer-team", "village", "--db", str(db), "--game-id", "s",
                           "--max-days", "1", "--max-messages", "4", "--players", "6"])
    assert res.exit_code == 0, res.output
    store = GameStore(db)
    final = store.load("s")
    village = {p.name for p in final.players if p.name not in final.wolves()}
    multi = [c for c in final.style_history if len(options_for(c.decision.split(":")[0])) > 1]
    with sqlite3.connect(db) as conn:  # the hook input stored with each step
        phase_at = dict(conn.execute("SELECT step - 1, json_extract(info_state, '$.phase') "
                                     "FROM steps WHERE game_id='s'").fetchall())
    steered = [c for c in multi if c.bot in village and c.decision == "speak"
               and phase_at[c.step] == "discussion"]
    static = [c for c in multi if c not in steered]
    assert steered and all(set(c.probs) == set(STYLE_OPTIONS) for c in steered)
    # The steered village's votes and intro keep the assigned style, as the wolves' lines do.
    assert {"vote", "speak"} <= {c.decision for c in static if c.bot in village}
    assert all(c.probs == {final.player(c.bot).playstyle: 1.0} for c in static)
    assert all(c.probs == {UNSTEERED: 1.0} for c in final.style_history if c not in multi)
    res = cli.invoke(app, ["werewolf", "evaluate", "--games", "2", "--llm", "fake", "--steer",
                           str(out), "--out", str(tmp_path / "eval"), "--max-days", "1",
                           "--max-messages", "2", "--players", "5"])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "eval" / "evaluate.json").read_text())
    rows = {r["condition"]: r for r in report["results"]}
    assert len(rows) == 6 and "both steered" in rows
    for r in rows.values():
        assert 0 <= r["village"]["low"] <= r["village"]["rate"] <= r["village"]["high"] <= 1
        assert r["village"]["games"] == 2 and r["llm_calls_per_game"] > 0
    assert (tmp_path / "eval" / "evaluate.png").read_bytes()[:4] == b"\x89PNG"
    bad = cli.invoke(app, ["werewolf", "play", "--llm", "fake", "--steer", str(out),
                           "--steer-team", "wolves", "--db", str(db)])
    assert bad.exit_code == 2 and "steer team" in bad.output


def test_steer_train_holds_out_whole_logged_games(tmp_path):
    """The split is by logged game, so no held-out view is trained on; every view is one
    record with one target."""
    from gtsteer.imitation.dataset import read_records
    from gtsteer.runs.werewolf_steer import SteerTrainConfig

    cfg = SteerTrainConfig(games=5, llm="fake", players=5, max_messages=3, max_days=1,
                           states=12, iterations=20, train_steps=5)
    summary = werewolf_steer.run(
        cfg, RunContext.of(out=tmp_path / "s", progress=False, embedder=hash_embedder()),
        werewolf_steer.SteerTrainOptions())
    records = read_records(tmp_path / "s" / "records.jsonl")
    games = {}
    for rec in records:
        games.setdefault(rec.metadata["game_id"], set()).add(rec.instance)
    assert len(games) == 5 and all(len(ids) == 1 for ids in games.values())
    held = set(summary.train["heldout_instances"])
    assert held and len(held) == 1  # 20% of 5 games
    held_texts = {r.text for r in records if r.instance in held}
    train_texts = {r.text for r in records if r.instance not in held}
    assert held_texts and train_texts and not held_texts & train_texts
    assert len({r.text for r in records}) == len(records) == summary.records


def test_a_view_reached_from_two_roots_is_one_reach_weighted_record():
    from gtsteer.imitation.dataset import DecisionRecord
    from gtsteer.runs.werewolf_steer import pool_shared_views

    def rec(text, target, weight, instance, step):
        return DecisionRecord(text=text, actions=["a", "b"], target=target, weight=weight,
                              instance=instance, player=0, metadata={"step": step})

    pooled = pool_shared_views([rec("same", [1.0, 0.0], 1.0, 0, 3),
                                rec("other", [0.5, 0.5], 1.0, 0, 3),
                                rec("same", [0.0, 1.0], 3.0, 1, 4)])
    assert [r.text for r in pooled] == ["same", "other"]
    assert pooled[0].target == pytest.approx([0.25, 0.75]) and pooled[0].weight == 4.0
    assert pooled[0].instance == 0 and pooled[0].metadata["pooled_steps"] == [3, 4]
    assert pooled[1] == rec("other", [0.5, 0.5], 1.0, 0, 3)


def test_distilled_chooser_is_a_pure_function_of_its_input(tmp_path, monkeypatch):
    from gtsteer.imitation.train import TrainConfig, train_policy
    from gtsteer.runs.werewolf_steer import records_of
    from gtsteer.solvers.cfr import solve_cfr
    from gtsteer.werewolf.steering import DistilledPlaystyleChooser

    states = discussion_states(GameStore(tmp_path / "d.sqlite"), seed=2)
    game = PlaystyleGame(states[1], LLMPool())
    result = solve_cfr(game, solver="cfr+", iterations=30, allow_python_fallback=False)
    records = records_of(game, result.policy, 0)
    assert records and all(r.text.split()[0] in {"werewolf", "villager", "doctor", "detective",
                                                 "maniac"} for r in records)
    assert sum(r.weight for r in records if r.player == 0) == pytest.approx(1.0)
    policy, _ = train_policy(records, hash_embedder(), TrainConfig(steps=20, holdout=0.0))
    chooser = DistilledPlaystyleChooser(policy)
    info = hook_input(states[1], game.speakers[0], Pending(kind="speak",
                                                          actor=game.speakers[0]))
    a, b = chooser.choose(info), chooser.choose(info)
    assert a == b and set(a.probs) == set(STYLE_OPTIONS)
    draws = {chooser.choose(info.model_copy(update={"seed": s})).style for s in range(40)}
    assert len(draws) > 1


def test_logged_states_are_rebuilt_from_sqlite_alone(tmp_path):
    from gtsteer.runs.werewolf_steer import logged_discussion_states

    store = GameStore(tmp_path / "l.sqlite")
    live = discussion_states(store, seed=5)
    rebuilt = logged_discussion_states(GameStore(tmp_path / "l.sqlite"), "log5", 2)
    assert rebuilt and [s.model_dump_json() for s in rebuilt] == [
        s.model_dump_json() for s in live]


def test_steer_train_says_when_the_logged_games_hold_too_few_states():
    from gtsteer.runs.werewolf_steer import SteerTrainConfig, shortfall

    cfg = SteerTrainConfig(games=3, states=20, llm="fake")
    assert shortfall(cfg, 20) == "" and shortfall(cfg, 31) == ""
    note = shortfall(cfg, 15)  # 5 states per game: 4 games hold 20
    assert "only 15 discussion states" in note and "asked for 20" in note
    assert note.endswith("pass --games 4 or more")


def test_steer_train_refuses_an_embedder_name_in_the_context(tmp_path) -> None:
    """The policy records the config's embedder name; a name given beside it would disagree."""
    from gtsteer.runs.werewolf_steer import SteerTrainConfig, SteerTrainOptions

    out = tmp_path / "steer"
    with pytest.raises(ValueError, match="config's `embedder`"):
        werewolf_steer.run(SteerTrainConfig(games=2, llm="fake"),
                           RunContext.of(out=out, embedder="all-MiniLM-L6-v2", progress=False),
                           SteerTrainOptions())
    assert not out.exists()  # refused before anything was written
