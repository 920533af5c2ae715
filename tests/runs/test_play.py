"""`gtsteer play`: one live dialogue with bot seats on the fake model, and a person in a pty.

The meeting config has a greedy hook (the best day of one's own preferences); the bots' payoffs
must be the game's own terminal's on the same instruction path, and a policy seat's advice must
be the advisor's on the dialogue as the transcript shows it.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gtsteer.binding import make_game, make_instance
from gtsteer.cli import app
from gtsteer.domains import load_spec
from gtsteer.imitation import Advisor, TrainConfig, train_policy
from gtsteer.imitation.build import label_policy, records_from_game
from gtsteer.llm import LLM
from gtsteer.runs.context import RunContext
from gtsteer.runs.play import PlayOptions, PlayResult, SeatError
from gtsteer.runs.play import run as run_play
from gtsteer.solvers import solve_cfr
from gtsteer.solvers.heldout import greedy_instruction

ROOT = Path(__file__).resolve().parents[2]
MEETING = ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml"
FRUIT = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "cache"))


def play(out: Path, *seats: str, config: Path = MEETING, **options) -> PlayResult:
    ctx = RunContext.of(llm="fake", out=out, progress=False)
    return run_play(config, ctx, PlayOptions(seats=seats, **options))


def game_path(config: Path, instructions: list[str], instance: int = 0, seed: int = 0):
    """The config's game walked along `instructions`, every message its sample 0."""
    spec = load_spec(config)
    game = make_game(spec, make_instance(spec, instance, seed), LLM("fake"))
    state = game.new_initial_state()
    for instruction in instructions:
        state.apply_action(game.instructions(state.current_player()).index(instruction))
        state.apply_action(0)
    assert state.is_terminal()
    return state


def test_bot_seats_play_the_game_s_own_terminal(tmp_path: Path) -> None:
    spec = load_spec(MEETING)
    inst = make_instance(spec, 0)
    result = play(tmp_path / "a", "proposer=greedy", f"{inst.names[1]}=fixed:Wednesday")
    greedy = greedy_instruction(spec, inst.private_info[0])
    assert greedy == "Monday"  # Iris's favourite day (Monday: 10)
    assert [t.instruction for t in result.turns] == [greedy, "Wednesday"]
    assert [s.seat for s in result.seats] == ["greedy", "fixed:Wednesday"]
    state = game_path(MEETING, [greedy, "Wednesday"])
    assert [t.text for t in result.turns] == [t.text for t in state.turns]
    assert list(result.payoffs.values()) == state.returns() == result.terminal.returns
    assert result.ended_by == "reply limit" and result.terminal.history == [0, 0, 2, 0]
    saved = PlayResult.model_validate_json((tmp_path / "a" / "play.json").read_text())
    assert saved == result and not (tmp_path / "a" / "IN_PROGRESS").exists()
    # deterministic: the same seats give the same dialogue, now from the cache
    again = play(tmp_path / "b", "proposer=greedy", "responder=fixed:Wednesday")
    assert again.turns == result.turns and again.payoffs == result.payoffs
    assert again.llm_calls.new_calls == 0
    # unnamed seats play the unguided model; another sample gives other messages
    unguided = play(tmp_path / "c")
    assert [t.instruction for t in unguided.turns] == ["any", "any"]
    walked = game_path(MEETING, ["any"] * 2)
    assert [t.text for t in unguided.turns] == [t.text for t in walked.turns]
    other = play(tmp_path / "d", sample=2)
    assert [t.text for t in other.turns] != [t.text for t in unguided.turns]


@pytest.fixture
def meeting_policy(tmp_path: Path) -> Path:
    """A tiny `struct` policy (no embedder to load) trained on the fake model's records."""
    spec = load_spec(MEETING)
    game = make_game(spec, make_instance(spec, 0), LLM("fake"))
    from gtsteer.binding import expand_sync

    expand_sync(game, progress=False)
    solved = solve_cfr(game, solver="cfr+", iterations=20)
    records = records_from_game(game, label_policy(solved.policy, game, solved.players), 0)
    policy, _ = train_policy(records, None, TrainConfig(
        steps=3, batch=8, hidden=(8,), holdout=0.0, features="struct", curve_points=1),
        domain=spec.name)
    return policy.save(tmp_path / "policy")


def test_a_policy_seat_draws_from_the_advisor_s_reading_of_the_transcript(
        tmp_path: Path, meeting_policy: Path) -> None:
    result = play(tmp_path / "a", f"responder=policy:{meeting_policy}", "proposer=any",
                  seed=0)
    first, second = result.turns
    assert first.probs is None and second.seat == f"policy:{meeting_policy}"
    advisor = Advisor(MEETING, meeting_policy)
    live = advisor.dialogue(advisor.instance(0), "responder", [(first.name, first.text)])
    assert second.probs == advisor.advise(live)
    assert second.instruction in advisor.actions
    assert play(tmp_path / "b", f"responder=policy:{meeting_policy}").turns == result.turns


@pytest.mark.parametrize(("seats", "problem"), [
    (["Zed=any"], "'Zed' is neither a role"),
    (["proposer"], "expected NAME=KIND"),
    (["proposer=loud"], "KIND is any, greedy, human"),
    (["proposer=fixed"], "KIND is any, greedy, human"),
    (["proposer=fixed:Caturday"], "'Caturday' is not an instruction"),
    (["proposer=any", "Iris=greedy"], "Iris has a seat already"),
    (["proposer=human"], "a human seat needs a terminal"),
    (["proposer=policy:/no/such/folder"], "not a policy directory"),
])
def test_bad_seats_are_refused_before_any_model_call(tmp_path: Path, seats, problem) -> None:
    with pytest.raises(SeatError, match=problem):
        play(tmp_path / "x", *seats)
    assert not (tmp_path / "x").exists()


def test_greedy_needs_the_domain_s_hook_and_a_policy_its_config(
        tmp_path: Path, meeting_policy: Path) -> None:
    runner = CliRunner()
    no_hook = runner.invoke(app, ["play", str(FRUIT), "--llm", "fake", "--seat",
                                  "proposer=greedy", "--out", str(tmp_path / "x")])
    assert no_hook.exit_code == 2 and "has no greedy hook" in no_hook.output
    other = runner.invoke(app, ["play", str(FRUIT), "--llm", "fake", "--seat",
                                f"proposer=policy:{meeting_policy}", "--out", str(tmp_path / "y")])
    assert other.exit_code == 2
    assert "trained on config 'schedule_meeting_dow', asked to play 'trade_fruit_tone'" in (
        " ".join(other.output.split()))


def test_the_cli_prints_each_instruction_the_reading_and_the_payoffs(tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["play", str(MEETING), "--llm", "fake", "--seat",
                                   "proposer=fixed:Tuesday", "--out", str(tmp_path / "p")])
    assert out.exit_code == 0, out.output
    saved = json.loads((tmp_path / "p" / "play.json").read_text())
    text = " ".join(out.output.split())
    first, second = saved["turns"]
    assert f"{first['name']} [Tuesday]: {first['text']}" in text
    assert f"{second['name']} [any]: {second['text']}" in text
    assert "payoffs: Iris (fixed:Tuesday)" in text and "ended by reply limit" in text


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def read_until(fd: int, pattern: str, timeout: float = 120.0) -> str:
    """The pty's output until `pattern` appears (ANSI codes and line breaks removed), or
    until the process closes it."""
    seen = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
        if pattern and pattern in " ".join(ANSI.sub("", seen.decode(errors="replace")).split()):
            break
    return " ".join(ANSI.sub("", seen.decode(errors="replace")).split())


def test_a_person_plays_a_seat_in_a_terminal(tmp_path: Path) -> None:
    """Driven through a pseudo-terminal: the person (Frank, the responder) sees the
    proposer's message but not its instruction, sees their own notes and never Iris's, types a
    message, and then sees the instructions, the reading and the payoffs."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "250",
           "TERM": "dumb", "GTSTEER_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gtsteer", "play", str(MEETING), "--llm", "fake",
         "--seat", "proposer=fixed:Tuesday", "--seat", "Frank=human", "--out",
         str(tmp_path / "p")],
        stdin=slave, stdout=slave, stderr=slave, env=env, cwd=tmp_path, close_fds=True)
    os.close(slave)
    try:
        before = read_until(master, "Frank, your message")
        assert "Frank, your message" in before, before
        assert "Your turn, Frank (responder)" in before
        assert "day preferences: Monday: 4, Tuesday: 9, Wednesday: 10" in before  # his own
        assert "Monday: 10" not in before and "out of office: Sunday" not in before  # Iris's
        assert "Iris: " in before and "[Tuesday]" not in before  # her message, not her steer
        os.write(master, b"Wednesday suits me best, shall we?\n")
        after = read_until(master, "")
        assert proc.wait(timeout=60) == 0, after
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert "The dialogue with each seat's instruction" in after
    assert "Iris [Tuesday]:" in after and "Frank (you): Wednesday suits me best" in after
    assert "payoffs: Iris (fixed:Tuesday)" in after and "Frank (human)" in after
    saved = PlayResult.model_validate_json((tmp_path / "p" / "play.json").read_text())
    human = saved.turns[1]
    assert (human.seat, human.instruction, human.text) == (
        "human", None, "Wednesday suits me best, shall we?")
    assert saved.terminal.turns[1].text == human.text  # the reward read the person's words
